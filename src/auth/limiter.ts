// Brute-force protection: failures counted per account, per client address (within its caller's scope) and per (account, address), checked before any password is evaluated; account lockouts, tarpits, and an exemption for pairs that recently succeeded.
//
// In the spirit of Keycloak's brute-force detector: every `failureFactor` failures against an account
// lock it for `waitIncrement` longer than the step before (1x, 2x, ... up to `maxWait`), and a counter
// with no failure for `failureReset` is forgotten. Per (account, address), failures grow a tarpit
// instead: the pair's next attempt waits 250 ms, 500 ms, 1 s, ... up to a cap, before it is evaluated.
//
// An address is never locked out: it is shared (a NAT, a proxy, a client application that sends no
// ip_address, the admin's own host), and a lockout would let anyone there lock out everyone there with
// guesses for accounts that do not exist. Every `addressFailureFactor` failures from an address slow it
// down instead: its attempts are let through one at a time, spaced by the tarpit's step doubled per
// factor reached (250 ms after 100 failures, 500 ms after 200, ... up to the tarpit's cap). An attempt
// that would wait longer than bruteForceAddressBacklogMs for its turn is refused like a wrong password.
// Failures count the same whether the account exists or not, so the slowing tells nothing about which do.
//
// The race behind CVE-2024-4629 and CVE-2023-47111 is closed by reserving before evaluating: an
// account has as many slots as failures left before its next lockout, and an attempt
// takes a slot synchronously before it is evaluated; when none is free it waits for one (acquire).
// A success gives its slot back at once, a failure uses it up. So 200 concurrent wrong passwords
// against one account evaluate at most failureFactor of them (then the rest find it locked), while
// 200 concurrent right ones (a busy service account) all get through. A slowed address reserves each attempt's
// turn the same way, when it is admitted.
//
// A spray of wrong passwords from elsewhere must not keep the owner out: a pair that succeeded within
// bruteForceTrustedPairTtlMs is exempt from its account's lockout and from its address's slowing for
// its next few attempts (fewer than bruteForceTrustedPairFailuresMax failed or in flight). Only a success
// creates the exemption, so an attacker cannot, and one who shares the owner's address (in the same scope, see
// below) gets those few guesses at most. Such a pair, with no failure since, is also known good to the hash
// pool (trusted()): its verifications go before everyone else's. The trusted pairs are kept as keyed fingerprints
// (src/auth/trusted-pairs.ts) and can outlive a restart as a file of them (src/auth/trusted-pairs-file.ts).
//
// A counter exists only where a failure happened, or while an attempt on its key is being evaluated
// asynchronously (a hash to wait for, a tarpit): an attempt answered in the same turn it was admitted
// (an API Key, a password the verify cache knows) cannot be seen in flight by any other, so a success with
// no failure on record creates, writes and drops nothing. The one attempt admitted last and not yet
// settled is counted in flight, counters made for it, as soon as the limiter is asked anything else.
//
// Everything is bounded: at most bruteForceCountersMax counters (and those of attempts in flight), oldest idle
// first out, each in O(1) (RecencyMap), and bruteForceTrustedPairSlots trusted pairs, of which one account or one
// caller cannot push out others' past its quota (src/auth/trusted-pairs.ts). A counter pushed out that
// had reached a lockout or slowing step is kept aside (at most bruteForceEscalationsMax of them, each costing an
// attacker a factor's worth of failures) and comes back with its key, so a flood of fresh counters cannot hand
// an attacker a fresh start.
//
// An address is its caller's. Who names an address decides which counters and which trust it reaches: a Basic
// caller of the admin API is known by its TCP peer alone (scope ''), while every POST /authenticate attempt is
// scoped by its authenticated caller, the client application's User id, whether the address is an ip_address it
// named or its own TCP peer. So a caller that names 127.0.0.1 reaches only its own counters and pairs for
// 127.0.0.1, never the admin's, nor another caller's. Account counters are not scoped: an account's lockout
// counts every caller's guesses, and the trusted-pair exemption is what keeps its owner in. Keys:
//   account  `a:<account name, lowercased and cut>`
//   address  `i:<address>` (scope '') or `i:<scope>\u0000<address>`, the address as addressKey() makes it
//   pair     `p:<account key>\u0000<address key>`
// A scope is a User id (letters and digits), an address never holds a NUL from a TCP peer, and a body's
// ip_address comes after its scope: a key names one (scope, address).
//
// In a cluster, failures are shared (src/cluster/shared-failures.ts): the owner's onFailure listener is told
// of each failure counted here, and failedElsewhere() counts one another node saw, on the same three counters
// and in the same way, so guesses spread over the nodes lock an account at the same count as on one. The
// reservation of slots stays per node: attempts in flight on several nodes at once are not seen by each other.

import { isIPv6 } from 'node:net';
import { RecencyMap } from './recency-map.js';
import type { Config } from '../config/config.js';
import {
  bruteForceAddressBacklogMs, bruteForceCounterTouchMs, bruteForceCountersMax, bruteForceEscalationsMax, bruteForceEvictionTriesMax,
  bruteForceKeyCharsMax,
  bruteForceTrustedPairFailuresMax, bruteForceTrustedPairSlots, bruteForceTrustedPairTtlMs, bruteForceWaitersMax,
} from '../config/limits.js';
import { TrustedPairs } from './trusted-pairs.js';

/** The limiter's settings are exactly the BRUTE_FORCE_* configuration (src/config/config.ts). */
export type LimiterSettings = Config['bruteForce'];

/**
 * Told of a failure the limiter counted from one of its own attempts: the account name and the address in the
 * form the counters use (lowercased, cut, an IPv6 address as its /64), preceded by its scope and a NUL when it
 * has one (`<scope>\u0000<address>`), which failedElsewhere() takes back as they are. Called synchronously inside
 * failed(): it must not throw, nor wait for anything.
 */
export type FailureListener = (accountName: string, address: string) => void;

interface Counter {
  failures: number;
  inFlight: number;
  lockedUntilMs: number;
  lastFailureMs: number;
  /** When it last moved to the end of the Map's use order (see counter()). */
  touchedMs: number;
  /** An address's: when a slowed address (see the top of this file) lets its next attempt through. */
  nextTurnMs: number;
  /** Attempts waiting for a slot (acquire), oldest first. */
  waiters?: Array<{ readonly accountName: string; readonly rawAddress: string; readonly scope: string; readonly resolve: (admission: Admission) => void }>;
}

/**
 * An admitted attempt: hand it back to succeeded(), failed() or released() exactly once. Its counters are
 * those found at admission (undefined: none, no failure on record), or made when it was counted in flight.
 */
export interface Ticket {
  account: Counter | undefined;
  address: Counter | undefined;
  pair: Counter | undefined;
  readonly accountKey: string;
  readonly addressKey: string;
  readonly pairKey: string;
  /** The scope of the address: the caller's User id for POST /authenticate, '' for a Basic caller of the admin API. */
  readonly scope: string;
  /** The address as addressKey() makes it, without its scope: the trusted pairs hash it apart from the scope. */
  readonly addressText: string;
  /** Counted in flight on its counters (see the top of this file). */
  counted: boolean;
  settled: boolean;
  /** The table's generation when standing() last found the ticket's counters still the table's. */
  generation: number;
}

export type Admission =
  | { readonly admitted: true; readonly ticket: Ticket; /** Wait this long before evaluating (the tarpit). */ readonly delayMs: number }
  /** Locked out (the account), or too far back in a slowed address's line: answer exactly like a wrong password, after delayMs. */
  | { readonly admitted: false; readonly delayMs: number; readonly lockedBy: 'account' | 'address' };

/**
 * The address counters count by: an IPv4 address as is, an IPv6 address by its /64 (one customer
 * usually holds a whole /64, so counting single IPv6 addresses would count nothing), an IPv4-mapped
 * IPv6 address in any of its forms as its IPv4 address, the loopback ::1 as itself (it is this host,
 * not a customer's /64), anything else (a name, garbage) as its text, lowercased.
 */
export function addressKey(raw: string): string {
  const text = raw.trim().toLowerCase().slice(0, bruteForceKeyCharsMax);
  if (!text.includes(':')) return text; // IPv4, or not an IP address at all: the common case, without the IPv6 parser
  const unbracketed = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  // The plain form (hex groups, at most one '::') as front ends write a peer, read without arrays or a regular
  // expression; a dotted tail, a zone or anything odd goes to node's own check.
  let groups: ArrayLike<number> = scratchGroups;
  if (!plainIpv6Groups(unbracketed, scratchGroups)) {
    if (!isIPv6(unbracketed)) return text;
    groups = ipv6Groups(unbracketed);
  }
  let zerosFirst = 0;
  while (zerosFirst < 8 && groups[zerosFirst] === 0) zerosFirst++;
  if (zerosFirst === 5 && groups[5] === 0xffff) return `${groups[6]! >> 8}.${groups[6]! & 255}.${groups[7]! >> 8}.${groups[7]! & 255}`;
  if (zerosFirst === 7 && groups[7] === 1) return '::1';
  return `${groups[0]!.toString(16)}:${groups[1]!.toString(16)}:${groups[2]!.toString(16)}:${groups[3]!.toString(16)}::/64`;
}

const scratchGroups = new Uint16Array(8);

/** What a NUL is to a scoped address: the end of its scope. */
const scopeEnd = '\u0000';

/** An account's counter key: its name lowercased and cut to bruteForceKeyCharsMax (a longer one matches no account anyway). */
function accountKeyOf(accountName: string): string {
  return `a:${accountName.slice(0, bruteForceKeyCharsMax).toLowerCase()}`;
}

/** The value of a hex digit's char code, else -1. */
function hexDigit(code: number): number {
  if (code >= 48 && code <= 57) return code - 48;
  const lower = code | 0x20;
  return lower >= 97 && lower <= 102 ? lower - 87 : -1;
}

/**
 * Reads an IPv6 address of hex groups only (1 to 4 digits each, eight of them or fewer around one '::') into
 * groups, '::' expanded; false for anything else, valid or not (a dotted IPv4 tail, a zone, garbage).
 */
function plainIpv6Groups(text: string, groups: Uint16Array): boolean {
  const length = text.length;
  let count = 0;
  let gapAt = -1;
  let i = 0;
  if (text.charCodeAt(0) === 58) {
    if (text.charCodeAt(1) !== 58) return false;
    gapAt = 0;
    i = 2;
  }
  while (i < length) {
    let value = 0;
    const start = i;
    for (let digit = hexDigit(text.charCodeAt(i)); digit !== -1 && i - start < 5; digit = hexDigit(text.charCodeAt(++i))) value = value * 16 + digit;
    if (i === start || i - start > 4 || count === 8) return false;
    groups[count++] = value;
    if (i === length) break;
    if (text.charCodeAt(i) !== 58) return false;
    i++;
    if (text.charCodeAt(i) === 58) {
      if (gapAt !== -1) return false;
      gapAt = count;
      i++;
    } else if (i === length) {
      return false;
    }
  }
  if (gapAt === -1) return count === 8;
  if (count > 7) return false;
  const tail = count - gapAt;
  for (let k = tail - 1; k >= 0; k--) groups[8 - tail + k] = groups[gapAt + k]!;
  groups.fill(0, gapAt, 8 - tail);
  return true;
}

/** The eight 16-bit groups of a valid IPv6 address (isIPv6), `::` expanded and a dotted IPv4 tail read as two groups. */
function ipv6Groups(address: string): number[] {
  const parse = (part: string): number[] => {
    if (part === '') return [];
    const out: number[] = [];
    for (const piece of part.split(':')) {
      if (piece.includes('.')) {
        const [a, b, c, d] = piece.split('.').map(Number) as [number, number, number, number];
        out.push((a << 8) | b, (c << 8) | d);
      } else {
        out.push(parseInt(piece, 16));
      }
    }
    return out;
  };
  const gap = address.indexOf('::');
  if (gap === -1) return parse(address);
  const left = parse(address.slice(0, gap));
  const right = parse(address.slice(gap + 2));
  return [...left, ...Array<number>(8 - left.length - right.length).fill(0), ...right];
}

export class BruteForceLimiter {
  private readonly counters = new RecencyMap<Counter>();
  /** Moves on whenever a counter enters or leaves the table: a ticket's counters are still the table's while it has not. */
  private generation = 0;
  /** The attempt admitted last, not yet settled nor counted in flight (see the top of this file). */
  private uncounted: Ticket | undefined;
  /** Until when each pair that succeeded is exempt from its account's lockout and its address's slowing. */
  private readonly trustedPairs: TrustedPairs;
  /** Counters pushed out of the table at a lockout or slowing step, by key (see insert()); oldest first out. */
  private readonly escalations = new RecencyMap<Counter>();

  /**
   * The last scope an address key was made in, and its key prefix `i:<scope>\u0000`: the attempts of POST
   * /authenticate mostly come from a few callers, so a scoped key costs one concatenation, as an unscoped one does.
   */
  private lastScope = '';
  private lastScopePrefix = 'i:';

  /** Told of each failure of an attempt of this limiter's own, never of those counted by failedElsewhere(): see FailureListener. */
  onFailure: FailureListener | undefined = undefined;

  /** trustedPairSlots: the trusted pairs table's size (tests make it small to fill it). */
  constructor(private readonly settings: LimiterSettings, private readonly now: () => number = Date.now, trustedPairSlots = bruteForceTrustedPairSlots) {
    for (const [name, value] of Object.entries(settings)) {
      if (!Number.isFinite(value) || value < 0) throw new RangeError(`limiter ${name} must be a number >= 0`);
    }
    this.trustedPairs = new TrustedPairs(trustedPairSlots);
  }

  /** Counters held now (for tests and metrics). */
  get size(): number {
    return this.counters.size;
  }

  /**
   * Decides, before anything is evaluated, whether this attempt may be, without waiting: reserves it
   * if so. An attempt that finds its account at capacity is refused here; acquire() lets
   * it wait for a slot instead. account is the credential's account name (for example `u:<email>` or
   * `k:<key id>`), address the client's, scope the caller that named it: its User id for POST /authenticate,
   * '' (the default) for a Basic caller of the admin API, whose address is its TCP peer.
   */
  admit(accountName: string, rawAddress: string, scope = ''): Admission {
    const decision = this.decide(accountName, rawAddress, scope);
    return 'busy' in decision ? { admitted: false, delayMs: decision.delayMs, lockedBy: decision.lockedBy } : decision;
  }

  /**
   * Like admit(), but an attempt that finds its account at capacity (as many attempts in
   * flight as it has failures left before its next lockout) waits for a slot: a success frees one at
   * once, a failure uses one up. So concurrent right passwords all get through, one slot after
   * another, while concurrent wrong ones still evaluate no more than the allowance. Answered at once
   * (no promise) unless the attempt has to wait.
   */
  acquire(accountName: string, rawAddress: string, scope = ''): Admission | Promise<Admission> {
    const decision = this.decide(accountName, rawAddress, scope);
    if (!('busy' in decision)) return decision;
    const waiters = decision.busy.waiters ??= [];
    if (waiters.length >= bruteForceWaitersMax) return { admitted: false, delayMs: decision.delayMs, lockedBy: decision.lockedBy };
    return new Promise((resolve) => waiters.push({ accountName, rawAddress, scope, resolve }));
  }

  /** An address's counter key in its scope (see the top of this file); addressText as addressKey() makes it. */
  private addressCounterKey(addressText: string, scope: string): string {
    if (scope === '') return `i:${addressText}`;
    if (scope !== this.lastScope) {
      this.lastScopePrefix = `i:${scope}${scopeEnd}`;
      this.lastScope = scope;
    }
    return `${this.lastScopePrefix}${addressText}`;
  }

  private decide(accountName: string, rawAddress: string, scope: string): Admission | { busy: Counter; delayMs: number; lockedBy: 'account' | 'address' } {
    this.countUncounted();
    const now = this.now();
    const account = accountKeyOf(accountName);
    const addressText = addressKey(rawAddress);
    const address = this.addressCounterKey(addressText, scope);
    const pairKey = `p:${account}\u0000${address}`;
    const pair = this.live(pairKey, now);
    const accountCounter = this.live(account, now);
    const addressCounter = this.live(address, now);
    const tarpitMs = this.tarpitMs(pair);
    let accountState = this.state(accountCounter, this.settings.failureFactor, now);
    const spacingMs = this.spacingMs(addressCounter);
    // The exemption covers only a few attempts, in flight ones included: concurrent guesses from a
    // trusted pair cannot ride it past the account's allowance. Looked up only when it changes something.
    const exempt = (accountState !== 'open' || spacingMs > 0) && this.trustedPairs.until(account, scope, addressText) > now
      && (pair === undefined || pair.failures + pair.inFlight < bruteForceTrustedPairFailuresMax);
    if (exempt) accountState = 'open';
    if (accountState === 'locked') return { admitted: false, delayMs: tarpitMs, lockedBy: 'account' };
    // Full needs attempts in flight or failures, so the account has a counter.
    if (accountState === 'full') return { busy: this.counter(account, accountCounter!, now), delayMs: tarpitMs, lockedBy: 'account' };
    // A slowed address lets one attempt through per spacingMs: this one's turn, unless its line is too long.
    const turnMs = spacingMs > 0 && !exempt ? Math.max(now, addressCounter!.nextTurnMs) : now;
    if (turnMs - now > bruteForceAddressBacklogMs) return { admitted: false, delayMs: tarpitMs, lockedBy: 'address' };
    const ticket: Ticket = {
      // Counted on the account even when exempt, so everyone else sees the attempts.
      account: accountCounter === undefined ? undefined : this.counter(account, accountCounter, now),
      address: addressCounter === undefined ? undefined : this.counter(address, addressCounter, now),
      pair: pair === undefined ? undefined : this.counter(pairKey, pair, now),
      accountKey: account,
      addressKey: address,
      pairKey,
      scope,
      addressText,
      counted: false,
      settled: false,
      generation: -1,
    };
    // A slowed address has a counter (its failures).
    if (spacingMs > 0 && !exempt) addressCounter!.nextTurnMs = turnMs + spacingMs;
    const delayMs = Math.max(tarpitMs, turnMs - now);
    // One that waits is in flight for everyone from now on; one that does not may be settled before anyone asks.
    if (delayMs > 0) this.count(ticket, now);
    else this.uncounted = ticket;
    return { admitted: true, ticket, delayMs };
  }

  /** The attempt admitted last, if it is still being evaluated, is in flight: it has gone on to wait for something. */
  private countUncounted(): void {
    const ticket = this.uncounted;
    if (ticket === undefined) return;
    this.uncounted = undefined;
    if (!ticket.settled) this.count(ticket, this.now());
  }

  /** Counts an attempt in flight on its three counters, made if need be. */
  private count(ticket: Ticket, now: number): void {
    ticket.account ??= this.counter(ticket.accountKey, undefined, now);
    ticket.address ??= this.counter(ticket.addressKey, undefined, now);
    ticket.pair ??= this.counter(ticket.pairKey, undefined, now);
    ticket.account.inFlight++;
    ticket.address.inFlight++;
    ticket.pair.inFlight++;
    ticket.counted = true;
  }

  /**
   * Whether the ticket's pair is known good: it succeeded within the trusted time and has not failed since. Its
   * verifications go before everyone else's in the hash pool. Asked only when an attempt needs a hash.
   */
  trusted(ticket: Ticket): boolean {
    const now = this.now();
    return (ticket.pair?.failures ?? 0) === 0 && this.trustedPairs.until(ticket.accountKey, ticket.scope, ticket.addressText) > now;
  }

  /**
   * The key the trusted pairs' fingerprints are made with: the same across restarts (derived from the server key),
   * so that pairs read back by importTrusted are found. Forgets the pairs held.
   */
  useTrustKey(key: Uint8Array): void {
    this.trustedPairs.useKey(key);
  }

  /** The trusted pairs that have not expired, for a file that outlives the process: keyed fingerprints and times only. */
  exportTrusted(): Buffer {
    return this.trustedPairs.export(this.now());
  }

  /** Pairs from exportTrusted (of an earlier process with the same trust key), each trusted for bruteForceTrustedPairTtlMs at most; how many. */
  importTrusted(bytes: Uint8Array): number {
    const now = this.now();
    return this.trustedPairs.import(bytes, now, now + bruteForceTrustedPairTtlMs);
  }

  /** The credential was right: the pair's tarpit resets and the pair becomes exempt from its account's lockout. */
  succeeded(ticket: Ticket): void {
    if (!this.settle(ticket)) return;
    const now = this.now();
    if (ticket.pair !== undefined) ticket.pair.failures = 0;
    this.dropBlanks(ticket, now);
    this.trustedPairs.trust(ticket.accountKey, ticket.scope, ticket.addressText, now + bruteForceTrustedPairTtlMs, now);
  }

  /** The credential was wrong: one more failure for the account, the address (which slows, never locks) and the pair. */
  failed(ticket: Ticket): void {
    if (!this.settle(ticket)) return;
    const now = this.now();
    // Uncounted, the attempt was admitted in this turn: nothing has moved in the table since, so a counter it did not find is none.
    this.countFailure(ticket.account ??= this.counter(ticket.accountKey, undefined, now), this.settings.failureFactor, now);
    this.countFailure(ticket.address ??= this.counter(ticket.addressKey, undefined, now), 0, now);
    this.countFailure(ticket.pair ??= this.counter(ticket.pairKey, undefined, now), 0, now);
    // The names only when someone listens: a failure without a cluster allocates nothing more.
    this.onFailure?.(ticket.accountKey.slice(2), ticket.addressKey.slice(2));
  }

  /**
   * A failure another node of the cluster saw (src/cluster/shared-failures.ts): one more for the account, the address
   * and the pair, exactly as failed() counts a local one (lockout steps, address slowing, the pair's tarpit), on
   * counters made, kept aside and pushed out like every other. No ticket, nothing in flight; the listener is not
   * told (it would send the failure back). The names are taken raw or as the listener gives them: the keys of
   * both are the same (but for a name that lowercasing makes longer than bruteForceKeyCharsMax: no account's). An
   * address with a scope (`<scope>\u0000<address>`, as the listener gives it) counts on that scope's counters.
   */
  failedElsewhere(accountName: string, address: string): void {
    // The attempt admitted last relies on nothing moving in the table before it is counted (see failed()).
    this.countUncounted();
    const now = this.now();
    const account = accountKeyOf(accountName);
    const end = address.indexOf(scopeEnd);
    const addressCounterKey = end === -1 ? this.addressCounterKey(address, '') : this.addressCounterKey(address.slice(end + 1), address.slice(0, end));
    const pairKey = `p:${account}\u0000${addressCounterKey}`;
    // live() first, as a decision would: an expired counter starts over, one kept aside comes back.
    this.countFailure(this.counter(account, this.live(account, now), now), this.settings.failureFactor, now);
    this.countFailure(this.counter(addressCounterKey, this.live(addressCounterKey, now), now), 0, now);
    this.countFailure(this.counter(pairKey, this.live(pairKey, now), now), 0, now);
  }

  /**
   * The attempt was not evaluated (the hash queue was full, an internal error): it counts for nothing, and
   * its counters that now hold nothing are dropped. A full hash queue sheds thousands of attempts a second,
   * each naming an account and an address never seen: kept, their blank counters filled the table, pushed
   * out counters that hold failures, and kept the Map rehashing.
   */
  released(ticket: Ticket): void {
    if (!this.settle(ticket)) return;
    this.dropBlanks(ticket, this.now());
  }

  /** A settled attempt's counters that now hold nothing (live() would start them over) are as good as none: dropped. */
  private dropBlanks(ticket: Ticket, now: number): void {
    if (!ticket.counted) return;
    // The ticket then holds none either, as if it had found none (standing()).
    if (this.dropIfBlank(ticket.accountKey, ticket.account, now)) ticket.account = undefined;
    if (this.dropIfBlank(ticket.addressKey, ticket.address, now)) ticket.address = undefined;
    if (this.dropIfBlank(ticket.pairKey, ticket.pair, now)) ticket.pair = undefined;
  }

  private dropIfBlank(key: string, counter: Counter | undefined, now: number): boolean {
    if (counter === undefined || !this.expired(counter, now) || this.counters.get(key) !== counter) return false;
    this.drop(key);
    return true;
  }

  private drop(key: string): void {
    this.counters.delete(key);
    this.generation++;
  }

  /**
   * Whether the pair of a ticket that succeeded may pass again now without a decision: the same
   * credential, known to be right, from the same address (src/auth/known-callers.ts). Only while
   * nothing has happened that a decision would weigh: its account's and pair's counters are still the
   * table's (a new one, or one made since for a key the ticket found none for, could be locked), its
   * account is not locked, and the pair has no failure (its next attempt would be tarpitted). A slowed
   * address does not matter: the pair succeeded, so it is exempt. Reads the ticket's counters, and looks
   * its keys up only when a counter has entered or left the table since it last did; counts nothing: a
   * right credential's attempt gives its slot back at once anyway.
   */
  standing(ticket: Ticket): boolean {
    const { account, pair } = ticket;
    if (ticket.generation !== this.generation) {
      this.countUncounted();
      if (this.counters.get(ticket.accountKey) !== account || this.counters.get(ticket.pairKey) !== pair) return false;
      ticket.generation = this.generation;
    }
    if (pair !== undefined && pair.failures !== 0) return false;
    return account === undefined || this.now() >= account.lockedUntilMs;
  }

  private settle(ticket: Ticket): boolean {
    if (ticket.settled) return false;
    ticket.settled = true;
    if (this.uncounted === ticket) this.uncounted = undefined;
    const { account, address, pair } = ticket;
    if (ticket.counted) {
      account!.inFlight--;
      address!.inFlight--;
      pair!.inFlight--;
    }
    // After the failure (if any) is counted: the waiters then see the slot, or the lockout.
    if (account !== undefined && address !== undefined && (account.waiters?.length ?? 0) + (address.waiters?.length ?? 0) > 0) {
      queueMicrotask(() => {
        this.wake(account);
        this.wake(address);
      });
    }
    return true;
  }

  /** Gives waiting attempts their turn, oldest first: admitted, refused (locked meanwhile), or still waiting. */
  private wake(counter: Counter): void {
    const waiters = counter.waiters;
    if (waiters === undefined) return;
    while (waiters.length > 0) {
      const waiter = waiters[0]!;
      const decision = this.decide(waiter.accountName, waiter.rawAddress, waiter.scope);
      if ('busy' in decision) {
        if (decision.busy === counter) return; // still no slot here; keep the order
        waiters.shift();
        (decision.busy.waiters ??= []).push(waiter);
        continue;
      }
      waiters.shift();
      waiter.resolve(decision);
    }
  }

  private countFailure(counter: Counter, factor: number, now: number): void {
    counter.failures++;
    counter.lastFailureMs = now;
    if (factor > 0 && counter.failures % factor === 0) {
      const steps = counter.failures / factor;
      counter.lockedUntilMs = now + Math.min(this.settings.waitIncrementMs * steps, this.settings.maxWaitMs);
    }
  }

  /**
   * locked: refused now. full: as many attempts in flight as failures are left before the next
   * lockout (one more could cross it unseen). After a lockout ends, the counter admits another
   * factor's worth of attempts before the next, longer one.
   */
  private state(counter: Counter | undefined, factor: number, now: number): 'open' | 'full' | 'locked' {
    if (factor === 0 || counter === undefined) return 'open';
    if (now < counter.lockedUntilMs) return 'locked';
    const nextLockoutAt = (Math.floor(counter.failures / factor) + 1) * factor;
    return counter.failures + counter.inFlight >= nextLockoutAt ? 'full' : 'open';
  }

  /** How far apart a slowed address's attempts go: the tarpit's step, doubled per addressFailureFactor failures reached. */
  private spacingMs(address: Counter | undefined): number {
    const { addressFailureFactor, tarpitStepMs, tarpitMaxMs } = this.settings;
    if (address === undefined || addressFailureFactor === 0 || tarpitStepMs === 0) return 0;
    const steps = Math.floor(address.failures / addressFailureFactor);
    return steps === 0 ? 0 : Math.min(tarpitStepMs * 2 ** Math.min(steps - 1, 30), tarpitMaxMs);
  }

  private tarpitMs(pair: Counter | undefined): number {
    const { tarpitStepMs, tarpitMaxMs } = this.settings;
    if (pair === undefined || pair.failures === 0 || tarpitStepMs === 0) return 0;
    // 2 ** 30 already passes any sane cap; the exponent is bounded so the number stays finite.
    return Math.min(tarpitStepMs * 2 ** Math.min(pair.failures - 1, 30), tarpitMaxMs);
  }

  /**
   * The counter, or undefined if there is none. An expired one starts over in place rather than being
   * dropped: a key that only ever succeeds (an admin, a service account) is expired at every attempt,
   * and dropping it would mean a delete and a re-insert per request. Idle ones still go when the table is
   * full (insert()).
   */
  private live(key: string, now: number): Counter | undefined {
    // Failures are rare, so the table is often empty: then the key is not even hashed.
    if (this.counters.size === 0 && this.escalations.size === 0) return undefined;
    const counter = this.counters.get(key) ?? (this.escalations.size === 0 ? undefined : this.revive(key, now));
    if (counter !== undefined && this.expired(counter, now)) {
      counter.failures = 0;
      counter.lockedUntilMs = 0;
      counter.lastFailureMs = 0;
      counter.nextTurnMs = 0;
    }
    return counter;
  }

  /** A counter kept aside when it was pushed out at a lockout or slowing step (see insert()): back in the table, as it was. */
  private revive(key: string, now: number): Counter | undefined {
    const counter = this.escalations.get(key);
    if (counter === undefined) return undefined;
    this.escalations.delete(key);
    if (this.expired(counter, now)) return undefined;
    this.insert(key, counter, now);
    return counter;
  }

  /** Whether dropping this counter would lose a lockout or slowing step reached (a pair's tarpit is its own, and short). */
  private escalated(key: string, counter: Counter, now: number): boolean {
    if (this.expired(counter, now)) return false;
    const factor = key.startsWith('a:') ? this.settings.failureFactor : key.startsWith('i:') ? this.settings.addressFailureFactor : 0;
    return factor > 0 && counter.failures >= factor;
  }

  private expired(counter: Counter, now: number): boolean {
    return counter.inFlight === 0 && (counter.waiters?.length ?? 0) === 0 && now >= counter.lockedUntilMs && now - counter.lastFailureMs >= this.settings.failureResetMs;
  }

  /**
   * The live counter (moved to the newest end of the use order), or a new one. `now` is the decision's own
   * reading of the clock: reading it again here, three times a decision, would be a good part of the limiter's cost.
   */
  private counter(key: string, existing: Counter | undefined, now: number): Counter {
    if (existing !== undefined) {
      // The use order only needs to be roughly right: a hot key (a busy address) is moved at most once per bruteForceCounterTouchMs.
      if (now - existing.touchedMs >= bruteForceCounterTouchMs) {
        existing.touchedMs = now;
        const entry = this.counters.entry(key);
        if (entry !== undefined) this.counters.touch(entry);
      }
      return existing;
    }
    const counter: Counter = { failures: 0, inFlight: 0, lockedUntilMs: 0, lastFailureMs: 0, touchedMs: now, nextTurnMs: 0 };
    this.insert(key, counter, now);
    return counter;
  }

  /**
   * Adds a counter that is not in the table, newest, and makes room: the oldest idle one goes. One that had reached a
   * lockout or slowing step is kept aside (escalations) rather than forgotten: otherwise a flood of fresh counters
   * would end an address's slowing, or start an account's next lockout over at the first step. Keeping one aside
   * costs an attacker a factor's worth of failures, so that bound is far harder to flood. One with attempts in flight
   * or waiting is in use: it moves to the newest end instead, and the table holds at most that many more.
   */
  private insert(key: string, counter: Counter, now: number): void {
    counter.touchedMs = now;
    this.counters.set(key, counter);
    this.generation++;
    for (let tries = 0; this.counters.size > bruteForceCountersMax && tries < bruteForceEvictionTriesMax; tries++) {
      const oldest = this.counters.oldest()!;
      const old = oldest.value;
      if (old.inFlight > 0 || (old.waiters?.length ?? 0) > 0) {
        this.counters.touch(oldest);
        continue;
      }
      if (this.escalated(oldest.key, old, now)) {
        this.escalations.set(oldest.key, old);
        if (this.escalations.size > bruteForceEscalationsMax) this.escalations.delete(this.escalations.oldest()!.key);
      }
      this.drop(oldest.key);
    }
  }
}
