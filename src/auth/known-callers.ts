// Callers of the admin API recognised by their exact Authorization header and TCP peer after a full check passed: a keyed hash and a lookup.
//
// An admin tool or a client application sends the same Basic credentials with every call. The full
// check (src/service/authenticator.ts) parses them, finds the User, asks the brute-force limiter, matches
// the password against the verify cache and the User against the base Application; that was 5-6 us
// of a 27 us POST /authenticate by API key (alternated builds, 100,000 Users). Once it has passed, the
// pair (header, peer) is remembered here as a keyed hash, never the header itself, with what a repeat
// must find unchanged, which the Authenticator checks on every hit: the very User object (users are
// immutable values, so any change to the account makes a new one) and the limiter's counters for that
// pair (BruteForceLimiter.standing). An entry lasts knownCallerTtlMs, so the full check still runs
// about once a second per caller: it renews the pair's standing with the limiter, and a password's
// entry never outlives the verification it rests on by more than that (the Authenticator also asks the
// verify cache on every hit). The peer is part of the key: the same credentials from another address
// take the full way and meet the limiter there.

import { authorizationHeaderBytesMax } from '../config/limits.js';
import type { User } from '../domain/entities.js';
import { KeyedHash } from './keyed-hash.js';
import type { Ticket } from './limiter.js';

export interface KnownCaller {
  readonly user: User;
  /** Username and password, rather than an API Key: the password's verification must still be in the verify cache. */
  readonly byPassword: boolean;
  /** The ticket of the check that passed: its counters say whether the limiter would still let the pair through. */
  readonly ticket: Ticket;
  readonly expiresAtMs: number;
}

export class KnownCallers {
  /** The key is held only inside the KeyedHash: util.inspect and JSON never show its bytes. */
  readonly #keyed = KeyedHash.withRandomKey();
  /** By keyed hash of (peer, header); insertion order is age order, so the first key is the oldest. */
  readonly #entries = new Map<string, KnownCaller>();
  readonly #ttlMs: number;
  readonly #entriesMax: number;
  readonly #now: () => number;

  constructor(opts: { ttlMs: number; entriesMax: number; now?: () => number }) {
    this.#ttlMs = opts.ttlMs;
    this.#entriesMax = opts.entriesMax;
    this.#now = opts.now ?? Date.now;
  }

  get size(): number {
    return this.#entries.size;
  }

  /**
   * What identifies a (header, peer) pair here: a keyed hash, so the credentials themselves are not kept.
   * Undefined for no header, or one longer than any Basic credentials are let be (never known, never hashed).
   */
  key(authorization: string, peer: string): string | undefined {
    if (authorization === '' || authorization.length > authorizationHeaderBytesMax) return undefined;
    // A peer address never holds a NUL, so the pair is encoded unambiguously.
    return this.#keyed.mac(`${peer}\u0000${authorization}`);
  }

  /** The unexpired entry under key; an expired one is dropped. */
  get(key: string): KnownCaller | undefined {
    const entry = this.#entries.get(key);
    if (entry !== undefined && this.#now() >= entry.expiresAtMs) {
      this.#entries.delete(key);
      return undefined;
    }
    return entry;
  }

  remember(key: string, user: User, byPassword: boolean, ticket: Ticket): void {
    if (this.#entriesMax === 0 || this.#ttlMs === 0) return;
    this.#entries.delete(key);
    this.#entries.set(key, { user, byPassword, ticket, expiresAtMs: this.#now() + this.#ttlMs });
    if (this.#entries.size > this.#entriesMax) this.#entries.delete(this.#entries.keys().next().value!);
  }

  forget(key: string): void {
    this.#entries.delete(key);
  }
}
