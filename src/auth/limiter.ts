// Brute-force protection: failures counted per account, per client address and per (account, address), checked before any password is evaluated; lockouts, a tarpit, and an exemption for pairs that recently succeeded.
//
// In the spirit of Keycloak's brute-force detector: every `failureFactor` failures against an account
// lock it for `waitIncrement` longer than the step before (1x, 2x, ... up to `maxWait`), and a counter
// with no failure for `failureReset` is forgotten. The same happens per client address (credential
// stuffing across many accounts), with its own factor. Per (account, address), failures grow a tarpit
// instead: the pair's next attempt waits 250 ms, 500 ms, 1 s, ... up to a cap, before it is evaluated.
//
// The race behind CVE-2024-4629 and CVE-2023-47111 is closed by reserving before evaluating: admit()
// counts the attempt as in flight synchronously, and an account (or address) admits only as many
// attempts as it has failures left before its next lockout, counting those in flight. So 200
// concurrent wrong passwords against one account evaluate at most failureFactor of them.
//
// A spray of wrong passwords from elsewhere must not keep the owner out: a pair that succeeded within
// bruteForceTrustedPairTtlMs (and has not failed much itself since) is exempt from its account's
// lockout. Only a success can create that exemption, so an attacker cannot.
//
// Everything is bounded: at most bruteForceCountersMax counters and bruteForceTrustedPairsMax pairs,
// oldest idle first out. Evicting a live lockout early needs that many fresh failures, each costing a
// password hash from the bounded pool, which takes longer than the longest lockout lasts.

import { isIPv4, isIPv6 } from 'node:net';
import {
  bruteForceCountersMax, bruteForceKeyCharsMax, bruteForceTrustedPairFailuresMax, bruteForceTrustedPairsMax,
  bruteForceTrustedPairTtlMs,
} from '../config/limits.js';

export interface LimiterSettings {
  /** Failures per account before each lockout step; 0: no account lockout. */
  readonly failureFactor: number;
  /** Failures per client address before each lockout step; 0: no address lockout. */
  readonly addressFailureFactor: number;
  readonly waitIncrementMs: number;
  readonly maxWaitMs: number;
  readonly failureResetMs: number;
  /** First tarpit delay of a pair; 0: no tarpit. */
  readonly tarpitStepMs: number;
  readonly tarpitMaxMs: number;
}

interface Counter {
  failures: number;
  inFlight: number;
  lockedUntilMs: number;
  lastFailureMs: number;
}

/** An admitted attempt: hand it back to succeeded(), failed() or released() exactly once. */
export interface Ticket {
  readonly account: Counter | undefined;
  readonly address: Counter;
  readonly pair: Counter;
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
 * IPv6 address as its IPv4 address, anything else (a name, garbage) as its text, lowercased.
 */
export function addressKey(raw: string): string {
  const text = raw.trim().toLowerCase().slice(0, bruteForceKeyCharsMax);
  const unbracketed = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  if (unbracketed.startsWith('::ffff:') && isIPv4(unbracketed.slice(7))) return unbracketed.slice(7);
  if (!isIPv6(unbracketed)) return text;
  const [head, tail] = unbracketed.includes('::') ? unbracketed.split('::') as [string, string] : [unbracketed, undefined];
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups = tail === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  return `${groups.slice(0, 4).map((g) => g.replace(/^0+(?=.)/, '')).join(':')}::/64`;
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
   * Decides, before anything is evaluated, whether this attempt may be: reserves it if so. account is
   * the credential's account name (for example `u:<email>` or `k:<key id>`), address the client's.
   */
  admit(accountName: string, rawAddress: string): Admission {
    const now = this.now();
    const account = `a:${accountName.slice(0, bruteForceKeyCharsMax).toLowerCase()}`;
    const address = `i:${addressKey(rawAddress)}`;
    const pairKey = `p:${account}\u0000${address}`;
    const pair = this.live(pairKey, now);
    const trusted = (this.trustedPairs.get(pairKey) ?? 0) > now && (pair?.failures ?? 0) < bruteForceTrustedPairFailuresMax;
    const accountCounter = this.live(account, now);
    const addressCounter = this.live(address, now);
    const delayMs = this.tarpitMs(pair);
    if (!trusted && this.blocked(accountCounter, this.settings.failureFactor, now)) return { admitted: false, delayMs, lockedBy: 'account' };
    if (this.blocked(addressCounter, this.settings.addressFailureFactor, now)) return { admitted: false, delayMs, lockedBy: 'address' };
    const ticket: Ticket = {
      // A trusted pair neither waits for nor uses up its account's allowance.
      account: trusted ? undefined : this.counter(account, accountCounter),
      address: this.counter(address, addressCounter),
      pair: this.counter(pairKey, pair),
      pairKey,
      settled: false,
    };
    if (ticket.account !== undefined) ticket.account.inFlight++;
    ticket.address.inFlight++;
    ticket.pair.inFlight++;
    return { admitted: true, ticket, delayMs };
  }

  /** The credential was right: the pair's tarpit resets and the pair becomes exempt from its account's lockout. */
  succeeded(ticket: Ticket): void {
    if (!this.settle(ticket)) return;
    ticket.pair.failures = 0;
    this.trustedPairs.delete(ticket.pairKey);
    this.trustedPairs.set(ticket.pairKey, this.now() + bruteForceTrustedPairTtlMs);
    this.evictOldest(this.trustedPairs, bruteForceTrustedPairsMax, () => true);
  }

  /** The credential was wrong: one more failure for the account, the address and the pair. */
  failed(ticket: Ticket): void {
    if (!this.settle(ticket)) return;
    const now = this.now();
    if (ticket.account !== undefined) this.countFailure(ticket.account, this.settings.failureFactor, now);
    this.countFailure(ticket.address, this.settings.addressFailureFactor, now);
    this.countFailure(ticket.pair, 0, now);
  }

  /** The attempt was not evaluated (the hash queue was full, an internal error): it counts for nothing. */
  released(ticket: Ticket): void {
    this.settle(ticket);
  }

  private settle(ticket: Ticket): boolean {
    if (ticket.settled) return false;
    ticket.settled = true;
    if (ticket.account !== undefined) ticket.account.inFlight--;
    ticket.address.inFlight--;
    ticket.pair.inFlight--;
    return true;
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
   * Locked now, or no failures left before the next lockout once those in flight are counted. After
   * a lockout ends, the counter admits another factor's worth of attempts before the next, longer one.
   */
  private blocked(counter: Counter | undefined, factor: number, now: number): boolean {
    if (factor === 0 || counter === undefined) return false;
    if (now < counter.lockedUntilMs) return true;
    const nextLockoutAt = (Math.floor(counter.failures / factor) + 1) * factor;
    return counter.failures + counter.inFlight >= nextLockoutAt;
  }

  private tarpitMs(pair: Counter | undefined): number {
    const { tarpitStepMs, tarpitMaxMs } = this.settings;
    if (pair === undefined || pair.failures === 0 || tarpitStepMs === 0) return 0;
    // 2 ** 30 already passes any sane cap; the exponent is bounded so the number stays finite.
    return Math.min(tarpitStepMs * 2 ** Math.min(pair.failures - 1, 30), tarpitMaxMs);
  }

  /** The counter, or undefined if there is none or it has expired (then it is dropped). */
  private live(key: string, now: number): Counter | undefined {
    const counter = this.counters.get(key);
    if (counter === undefined) return undefined;
    if (this.expired(counter, now)) {
      this.counters.delete(key);
      return undefined;
    }
    return counter;
  }

  private expired(counter: Counter, now: number): boolean {
    return counter.inFlight === 0 && now >= counter.lockedUntilMs && now - counter.lastFailureMs >= this.settings.failureResetMs;
  }

  /** The live counter, or a new one (re-inserted last, so the Map's order is oldest use first). */
  private counter(key: string, existing: Counter | undefined): Counter {
    const counter = existing ?? { failures: 0, inFlight: 0, lockedUntilMs: 0, lastFailureMs: 0 };
    this.counters.delete(key);
    this.counters.set(key, counter);
    if (existing === undefined) {
      const now = this.now();
      this.evictOldest(this.counters, bruteForceCountersMax, (c) => c.inFlight === 0 && (this.expired(c, now) || now >= c.lockedUntilMs));
      // All idle ones are locked: under a flood that large, the oldest lockout goes first.
      this.evictOldest(this.counters, bruteForceCountersMax, (c) => c.inFlight === 0);
    }
    return counter;
  }

  /** Drops the oldest entries that may go until map is within max; stops after a bounded scan. */
  private evictOldest<V>(map: Map<string, V>, max: number, mayGo: (value: V) => boolean): void {
    if (map.size <= max) return;
    let scanned = 0;
    for (const [key, value] of map) {
      if (map.size <= max || scanned++ > 64) return;
      if (mayGo(value)) map.delete(key);
    }
  }
}
