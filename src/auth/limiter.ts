// Brute-force protection: failures counted per account, per client address and per (account, address), checked before any password is evaluated; lockouts, a tarpit, and an exemption for pairs that recently succeeded.
//
// In the spirit of Keycloak's brute-force detector: every `failureFactor` failures against an account
// lock it for `waitIncrement` longer than the step before (1x, 2x, ... up to `maxWait`), and a counter
// with no failure for `failureReset` is forgotten. The same happens per client address (credential
// stuffing across many accounts), with its own factor. Per (account, address), failures grow a tarpit
// instead: the pair's next attempt waits 250 ms, 500 ms, 1 s, ... up to a cap, before it is evaluated.
//
// The race behind CVE-2024-4629 and CVE-2023-47111 is closed by reserving before evaluating: an
// account (or address) has as many slots as failures left before its next lockout, and an attempt
// takes a slot synchronously before it is evaluated; when none is free it waits for one (acquire).
// A success gives its slot back at once, a failure uses it up. So 200 concurrent wrong passwords
// against one account evaluate at most failureFactor of them (then the rest find it locked), while
// 200 concurrent right ones (a busy service account) all get through.
//
// A spray of wrong passwords from elsewhere must not keep the owner out: a pair that succeeded within
// bruteForceTrustedPairTtlMs is exempt from its account's lockout for its next few attempts (fewer
// than bruteForceTrustedPairFailuresMax failed or in flight). Only a success creates the exemption,
// so an attacker cannot, and one who shares the owner's address gets those few guesses at most.
//
// Everything is bounded: at most bruteForceCountersMax counters and bruteForceTrustedPairsMax pairs,
// oldest idle first out. Evicting a live lockout early needs that many fresh failures, each costing a
// password hash from the bounded pool, which takes longer than the longest lockout lasts.

import { isIPv6 } from 'node:net';
import type { Config } from '../config/config.js';
import {
  bruteForceCounterTouchMs, bruteForceCountersMax, bruteForceKeyCharsMax, bruteForceTrustedPairFailuresMax, bruteForceTrustedPairsMax,
  bruteForceTrustedPairTtlMs, bruteForceWaitersMax,
} from '../config/limits.js';

/** The limiter's settings are exactly the BRUTE_FORCE_* configuration (src/config/config.ts). */
export type LimiterSettings = Config['bruteForce'];

interface Counter {
  failures: number;
  inFlight: number;
  lockedUntilMs: number;
  lastFailureMs: number;
  /** When it last moved to the end of the Map's use order (see counter()). */
  touchedMs: number;
  /** Gone from the table (evicted, or blank): whoever holds it on (standing()) is looking at a stale counter. */
  dropped: boolean;
  /** Attempts waiting for a slot (acquire), oldest first. */
  waiters?: Array<{ readonly accountName: string; readonly rawAddress: string; readonly resolve: (admission: Admission) => void }>;
}

/** An admitted attempt: hand it back to succeeded(), failed() or released() exactly once. */
export interface Ticket {
  readonly account: Counter;
  readonly address: Counter;
  readonly pair: Counter;
  readonly accountKey: string;
  readonly addressKey: string;
  readonly pairKey: string;
  settled: boolean;
}

export type Admission =
  | { readonly admitted: true; readonly ticket: Ticket; /** Wait this long before evaluating (the tarpit). */ readonly delayMs: number }
  /** Locked out: answer exactly like a wrong password, after delayMs. */
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
  if (!isIPv6(unbracketed)) return text;
  const groups = ipv6Groups(unbracketed);
  let zerosFirst = 0;
  while (zerosFirst < 8 && groups[zerosFirst] === 0) zerosFirst++;
  if (zerosFirst === 5 && groups[5] === 0xffff) return `${groups[6]! >> 8}.${groups[6]! & 255}.${groups[7]! >> 8}.${groups[7]! & 255}`;
  if (zerosFirst === 7 && groups[7] === 1) return '::1';
  return `${groups.slice(0, 4).map((g) => g.toString(16)).join(':')}::/64`;
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
  private readonly counters = new Map<string, Counter>();
  /** pair key -> until when it is exempt from its account's lockout. */
  private readonly trustedPairs = new Map<string, number>();

  constructor(private readonly settings: LimiterSettings, private readonly now: () => number = Date.now) {
    for (const [name, value] of Object.entries(settings)) {
      if (!Number.isFinite(value) || value < 0) throw new RangeError(`limiter ${name} must be a number >= 0`);
    }
  }

  /** Counters held now (for tests and metrics). */
  get size(): number {
    return this.counters.size;
  }

  /**
   * Decides, before anything is evaluated, whether this attempt may be, without waiting: reserves it
   * if so. An attempt that finds its account (or address) at capacity is refused here; acquire() lets
   * it wait for a slot instead. account is the credential's account name (for example `u:<email>` or
   * `k:<key id>`), address the client's.
   */
  admit(accountName: string, rawAddress: string): Admission {
    const decision = this.decide(accountName, rawAddress);
    return 'busy' in decision ? { admitted: false, delayMs: decision.delayMs, lockedBy: decision.lockedBy } : decision;
  }

  /**
   * Like admit(), but an attempt that finds its account or address at capacity (as many attempts in
   * flight as it has failures left before its next lockout) waits for a slot: a success frees one at
   * once, a failure uses one up. So concurrent right passwords all get through, one slot after
   * another, while concurrent wrong ones still evaluate no more than the allowance. Answered at once
   * (no promise) unless the attempt has to wait.
   */
  acquire(accountName: string, rawAddress: string): Admission | Promise<Admission> {
    const decision = this.decide(accountName, rawAddress);
    if (!('busy' in decision)) return decision;
    const waiters = decision.busy.waiters ??= [];
    if (waiters.length >= bruteForceWaitersMax) return { admitted: false, delayMs: decision.delayMs, lockedBy: decision.lockedBy };
    return new Promise((resolve) => waiters.push({ accountName, rawAddress, resolve }));
  }

  private decide(accountName: string, rawAddress: string): Admission | { busy: Counter; delayMs: number; lockedBy: 'account' | 'address' } {
    const now = this.now();
    const account = `a:${accountName.slice(0, bruteForceKeyCharsMax).toLowerCase()}`;
    const address = `i:${addressKey(rawAddress)}`;
    const pairKey = `p:${account}\u0000${address}`;
    const pair = this.live(pairKey, now);
    const accountCounter = this.live(account, now);
    const addressCounter = this.live(address, now);
    const delayMs = this.tarpitMs(pair);
    let accountState = this.state(accountCounter, this.settings.failureFactor, now);
    // The exemption covers only a few attempts, in flight ones included: concurrent guesses from a
    // trusted pair cannot ride it past the account's allowance. Looked up only when it changes something.
    if (accountState !== 'open' && (this.trustedPairs.get(pairKey) ?? 0) > now && (pair === undefined || pair.failures + pair.inFlight < bruteForceTrustedPairFailuresMax)) {
      accountState = 'open';
    }
    if (accountState === 'locked') return { admitted: false, delayMs, lockedBy: 'account' };
    const addressState = this.state(addressCounter, this.settings.addressFailureFactor, now);
    if (addressState === 'locked') return { admitted: false, delayMs, lockedBy: 'address' };
    if (accountState === 'full') return { busy: this.counter(account, accountCounter, now), delayMs, lockedBy: 'account' };
    if (addressState === 'full') return { busy: this.counter(address, addressCounter, now), delayMs, lockedBy: 'address' };
    const ticket: Ticket = {
      // Counted on the account even when exempt, so everyone else sees the attempts.
      account: this.counter(account, accountCounter, now),
      address: this.counter(address, addressCounter, now),
      pair: this.counter(pairKey, pair, now),
      accountKey: account,
      addressKey: address,
      pairKey,
      settled: false,
    };
    ticket.account.inFlight++;
    ticket.address.inFlight++;
    ticket.pair.inFlight++;
    return { admitted: true, ticket, delayMs };
  }

  /** The credential was right: the pair's tarpit resets and the pair becomes exempt from its account's lockout. */
  succeeded(ticket: Ticket): void {
    if (!this.settle(ticket)) return;
    ticket.pair.failures = 0;
    const now = this.now();
    const until = this.trustedPairs.get(ticket.pairKey);
    // Like counter(): a busy pair's exemption is renewed (and moved last in the Map) at most once per bruteForceCounterTouchMs.
    if (until !== undefined && until - now > bruteForceTrustedPairTtlMs - bruteForceCounterTouchMs) return;
    this.trustedPairs.delete(ticket.pairKey);
    this.trustedPairs.set(ticket.pairKey, now + bruteForceTrustedPairTtlMs);
    this.evictOldest(this.trustedPairs, bruteForceTrustedPairsMax, () => true, (k) => this.trustedPairs.delete(k));
  }

  /** The credential was wrong: one more failure for the account, the address and the pair. */
  failed(ticket: Ticket): void {
    if (!this.settle(ticket)) return;
    const now = this.now();
    this.countFailure(ticket.account, this.settings.failureFactor, now);
    this.countFailure(ticket.address, this.settings.addressFailureFactor, now);
    this.countFailure(ticket.pair, 0, now);
  }

  /**
   * The attempt was not evaluated (the hash queue was full, an internal error): it counts for nothing, and
   * its counters that now hold nothing are dropped. A full hash queue sheds thousands of attempts a second,
   * each naming an account and an address never seen: kept, their blank counters filled the table, pushed
   * out counters that hold failures, and kept the Map rehashing.
   */
  released(ticket: Ticket): void {
    if (!this.settle(ticket)) return;
    const now = this.now();
    this.dropIfBlank(ticket.accountKey, ticket.account, now);
    this.dropIfBlank(ticket.addressKey, ticket.address, now);
    this.dropIfBlank(ticket.pairKey, ticket.pair, now);
  }

  /** A counter that holds nothing (live() would start it over) is as good as none. */
  private dropIfBlank(key: string, counter: Counter, now: number): void {
    if (this.expired(counter, now) && this.counters.get(key) === counter) this.drop(key, counter);
  }

  private drop(key: string, counter: Counter): void {
    this.counters.delete(key);
    counter.dropped = true;
  }

  /**
   * Whether the pair of a ticket that succeeded may pass again now without a decision: the same
   * credential, known to be right, from the same address (src/auth/known-callers.ts). Only while
   * nothing has happened that a decision would weigh: none of its counters has left the table (a new
   * one could be locked), neither its account nor its address is locked, and the pair has no failure
   * (its next attempt would be tarpitted). Reads three counters; builds no key and counts nothing:
   * a right credential's attempt gives its slot back at once anyway.
   */
  standing(ticket: Ticket): boolean {
    const { account, address, pair } = ticket;
    if (account.dropped || address.dropped || pair.dropped || pair.failures !== 0) return false;
    const now = this.now();
    return now >= account.lockedUntilMs && now >= address.lockedUntilMs;
  }

  private settle(ticket: Ticket): boolean {
    if (ticket.settled) return false;
    ticket.settled = true;
    ticket.account.inFlight--;
    ticket.address.inFlight--;
    ticket.pair.inFlight--;
    // After the failure (if any) is counted: the waiters then see the slot, or the lockout.
    if ((ticket.account.waiters?.length ?? 0) + (ticket.address.waiters?.length ?? 0) > 0) {
      queueMicrotask(() => {
        this.wake(ticket.account);
        this.wake(ticket.address);
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
      const decision = this.decide(waiter.accountName, waiter.rawAddress);
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

  private tarpitMs(pair: Counter | undefined): number {
    const { tarpitStepMs, tarpitMaxMs } = this.settings;
    if (pair === undefined || pair.failures === 0 || tarpitStepMs === 0) return 0;
    // 2 ** 30 already passes any sane cap; the exponent is bounded so the number stays finite.
    return Math.min(tarpitStepMs * 2 ** Math.min(pair.failures - 1, 30), tarpitMaxMs);
  }

  /**
   * The counter, or undefined if there is none. An expired one starts over in place rather than being
   * dropped: a key that only ever succeeds (an admin, a service account) is expired at every attempt,
   * and dropping it would mean a Map delete, a re-insert and an eviction scan per request, a large share
   * of a cached request once the Map holds a few thousand counters. Idle ones still go when the Map is
   * full (evictOldest in counter()).
   */
  private live(key: string, now: number): Counter | undefined {
    const counter = this.counters.get(key);
    if (counter !== undefined && this.expired(counter, now)) {
      counter.failures = 0;
      counter.lockedUntilMs = 0;
      counter.lastFailureMs = 0;
    }
    return counter;
  }

  private expired(counter: Counter, now: number): boolean {
    return counter.inFlight === 0 && (counter.waiters?.length ?? 0) === 0 && now >= counter.lockedUntilMs && now - counter.lastFailureMs >= this.settings.failureResetMs;
  }

  /**
   * The live counter, or a new one (re-inserted last, so the Map's order is oldest use first). `now` is the
   * decision's own reading of the clock: reading it again here, three times a decision, would be a good part
   * of the limiter's cost.
   */
  private counter(key: string, existing: Counter | undefined, now: number): Counter {
    // Re-inserting a hot key (the admin account, a busy address) on every request is costly in a Map of
    // tens of thousands of counters; the use order only needs to be roughly right.
    if (existing !== undefined && now - existing.touchedMs < bruteForceCounterTouchMs) return existing;
    const counter = existing ?? { failures: 0, inFlight: 0, lockedUntilMs: 0, lastFailureMs: 0, touchedMs: now, dropped: false };
    counter.touchedMs = now;
    this.counters.delete(key);
    this.counters.set(key, counter);
    if (existing === undefined) {
      const idle = (c: Counter): boolean => c.inFlight === 0 && (c.waiters?.length ?? 0) === 0;
      const drop = (k: string, c: Counter): void => this.drop(k, c);
      this.evictOldest(this.counters, bruteForceCountersMax, (c) => idle(c) && (this.expired(c, now) || now >= c.lockedUntilMs), drop);
      // All idle ones are locked: under a flood that large, the oldest lockout goes first.
      this.evictOldest(this.counters, bruteForceCountersMax, idle, drop);
    }
    return counter;
  }

  /** Drops the oldest entries that may go until map is within max; stops after a bounded scan. */
  private evictOldest<V>(map: Map<string, V>, max: number, mayGo: (value: V) => boolean, drop: (key: string, value: V) => void): void {
    if (map.size <= max) return;
    let scanned = 0;
    for (const [key, value] of map) {
      if (map.size <= max || scanned++ > 64) return;
      if (mayGo(value)) drop(key, value);
    }
  }
}
