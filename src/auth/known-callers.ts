// Credentials recognised by the exact text they came in (an admin call's Authorization header; a POST /authenticate body with that header) and the TCP peer, after a full check passed: a keyed hash and a lookup.
//
// An admin tool or a client application sends the same Basic credentials with every call. The full
// check (src/service/authenticator.ts) parses them, finds the User, asks the brute-force limiter, matches
// the password against the verify cache and the User against the base Application: a large share of a
// POST /authenticate by API key, repeated on every call. Once it has passed, the pair (header, peer)
// is remembered here as a keyed hash, never the header itself, with what a repeat must find unchanged,
// which the Authenticator checks on every hit: the very User object (users are immutable values, so any
// change to the account makes a new one) and the limiter's counters for that pair
// (BruteForceLimiter.standing). An entry lasts knownCallerTtlMs, so the full check still runs
// about once a second per caller: it renews the pair's standing with the limiter, and a password's
// entry never outlives the verification it rests on by more than that (the Authenticator also asks the
// verify cache on every hit). The peer is part of the key: the same credentials from another address
// take the full way and meet the limiter there.
//
// POST /authenticate is remembered the same way by its exact body (credential, Application, ip_address),
// the caller's Authorization header and the peer, with the Application it passed against and the caller's
// own entry (keyOfRequest; see Authenticator.recognised): one keyed hash recognises both credentials.
// Such an entry never outlives its caller's (remember's notAfterMs). Production bodies mostly never repeat
// (each end user from its own address): a body is remembered only once it has been seen before (repeated(),
// a bit per keyed hash), so distinct traffic pays a bit test, not an entry and an eviction, per success.

import { authorizationHeaderBytesMax, knownRequestBytesMax, knownSightingBits, knownSightingsMax } from '../config/limits.js';
import type { User } from '../domain/entities.js';
import { KeyedHash } from './keyed-hash.js';
import type { Ticket } from './limiter.js';
import { RecencyMap } from './recency-map.js';
import { Sightings } from './sightings.js';

/** What a full check that passed leaves behind, for a repeat to be judged against. */
export interface KnownCaller {
  readonly user: User;
  /** Username and password, rather than an API Key: the password's verification must still be in the verify cache. */
  readonly byPassword: boolean;
  /** The ticket of the check that passed: its counters say whether the limiter would still let the pair through. */
  readonly ticket: Ticket;
}

/** E: what is kept per entry (a KnownCaller, and for POST /authenticate what its audit line names). */
export class KnownCallers<E extends KnownCaller = KnownCaller> {
  /** The key is held only inside the KeyedHash: util.inspect and JSON never show its bytes. */
  readonly #keyed = KeyedHash.withRandomKey();
  /** By keyed hash of (peer, header or body), oldest remembered first. */
  readonly #entries = new RecencyMap<{ readonly entry: E; readonly expiresAtMs: number }>();
  /** One bit per keyed hash seen once (repeated()). */
  readonly #sightings = new Sightings(knownSightingBits, knownSightingsMax);
  /**
   * The last keys made, with what they were made of: a request's key is asked for again when its success is
   * remembered, and a caller's header by every request it sends. Bodies are never written after they arrive,
   * so the same body object holds the same bytes.
   */
  readonly #lastHeader: { authorization: string; peer: string; key: string | undefined } = { authorization: '', peer: '', key: undefined };
  readonly #lastRequest: { body: Uint8Array | undefined; authorization: string; peer: string; key: string | undefined } = { body: undefined, authorization: '', peer: '', key: undefined };
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
    const last = this.#lastHeader;
    if (last.authorization === authorization && last.peer === peer) return last.key;
    // A peer address never holds a NUL, so the pair is encoded unambiguously.
    const key = this.#keyed.digest(`${peer}\u0000${authorization}`);
    last.authorization = authorization;
    last.peer = peer;
    last.key = key;
    return key;
  }

  /**
   * The same for a request's exact body with the Authorization header it came with, from a peer (POST
   * /authenticate carries its credentials in the body, the caller's in the header); undefined without a
   * header, or past the lengths either is let be. The header's length goes first, so the pair of texts
   * is encoded unambiguously.
   */
  keyOfRequest(body: Uint8Array, authorization: string, peer: string): string | undefined {
    if (body.length === 0 || body.length > knownRequestBytesMax) return undefined;
    if (authorization === '' || authorization.length > authorizationHeaderBytesMax) return undefined;
    const last = this.#lastRequest;
    if (last.body === body && last.authorization === authorization && last.peer === peer) return last.key;
    const key = this.#keyed.digest(`${peer}\u0000${authorization.length}\u0000${authorization}`, body);
    last.body = body;
    last.authorization = authorization;
    last.peer = peer;
    last.key = key;
    return key;
  }

  /**
   * Whether key was seen before (by an earlier call), marking it seen: a success is worth remembering only
   * for a key that repeats. A false yes (another key's bit) only remembers one that may not repeat.
   */
  repeated(key: string): boolean {
    // The key is a keyed hash as latin1 text: any three of its bytes are uniformly spread.
    return this.#sightings.repeated(key.charCodeAt(0) | (key.charCodeAt(1) << 8) | (key.charCodeAt(2) << 16));
  }

  /** The unexpired entry under key; an expired one is dropped. */
  get(key: string): E | undefined {
    return this.held(key)?.entry;
  }

  /** The same, with when it expires. */
  held(key: string): { readonly entry: E; readonly expiresAtMs: number } | undefined {
    const held = this.#entries.get(key);
    if (held === undefined) return undefined;
    if (this.#now() >= held.expiresAtMs) {
      this.#entries.delete(key);
      return undefined;
    }
    return held;
  }

  /** Kept for the TTL, or until notAfterMs if that comes first (an entry that rests on another one). */
  remember(key: string, entry: E, notAfterMs = Infinity): void {
    if (this.#entriesMax === 0 || this.#ttlMs === 0) return;
    this.#entries.set(key, { entry, expiresAtMs: Math.min(this.#now() + this.#ttlMs, notAfterMs) });
    if (this.#entries.size > this.#entriesMax) this.#entries.delete(this.#entries.oldest()!.key);
  }

  forget(key: string): void {
    this.#entries.delete(key);
  }
}
