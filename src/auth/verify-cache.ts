// The verified-credential cache: remembers recent successful verifications so repeats skip argon2.
//
// It holds only HMAC-SHA256(per-process random key, secret): a heap dump or a bug that exposes the
// cache yields neither the secret nor anything an attacker can test guesses against offline, and the
// key dies with the process. An entry is tied to the exact User object it was verified against;
// users are immutable values, so any change (password, status, memberships) makes a new object and the
// entry stops matching at once, with no invalidation call to forget.

import { KeyedHash, sameText } from './keyed-hash.js';

interface Entry {
  readonly version: unknown;
  /** The keyed hash's 32 bytes as latin1 text (see KeyedHash). */
  readonly mac: string;
  readonly expiresAtMs: number;
}

export class VerifyCache {
  private readonly ttlMs: number;
  private readonly entriesMax: number;
  private readonly now: () => number;
  /** The key is held only inside the KeyedHash: util.inspect and JSON never show its bytes. */
  private readonly keyed = KeyedHash.withRandomKey();
  /** Insertion order is age order: remember() re-inserts, so the first key is always the oldest. */
  private readonly entries = new Map<string, Entry>();

  constructor(opts: { ttlMs: number; entriesMax: number; now?: () => number }) {
    if (!(opts.ttlMs >= 0)) throw new RangeError('ttlMs must be >= 0');
    if (!Number.isInteger(opts.entriesMax) || opts.entriesMax < 0) throw new RangeError('entriesMax must be an integer >= 0');
    this.ttlMs = opts.ttlMs;
    this.entriesMax = opts.entriesMax;
    this.now = opts.now ?? Date.now;
  }

  get size(): number {
    return this.entries.size;
  }

  /** Remember that `secret` verified for `subject` while `version` was current. Stores only a keyed hash of the secret. */
  remember(subject: string, version: unknown, secret: string): void {
    if (this.entriesMax === 0) return;
    this.entries.delete(subject);
    this.entries.set(subject, { version, mac: this.mac(secret), expiresAtMs: this.now() + this.ttlMs });
    while (this.entries.size > this.entriesMax) {
      const oldest = this.entries.keys().next().value as string;
      this.entries.delete(oldest);
    }
  }

  /** True only for an unexpired entry of this very `version` (===) whose keyed hash matches, compared in constant time. */
  check(subject: string, version: unknown, secret: string): boolean {
    const entry = this.entries.get(subject);
    if (entry === undefined) return false;
    if (entry.version !== version || this.now() >= entry.expiresAtMs) {
      this.entries.delete(subject); // stale for good: the user changed or the time ran out
      return false;
    }
    // A wrong secret leaves the entry alone: otherwise anyone could evict a user's entry by guessing.
    return sameText(this.mac(secret), entry.mac);
  }

  /** Whether a verification of `subject` is remembered for this very `version` (===) and has not expired, whatever its secret. */
  holds(subject: string, version: unknown): boolean {
    const entry = this.entries.get(subject);
    return entry !== undefined && entry.version === version && this.now() < entry.expiresAtMs;
  }

  /** The keyed hash of a secret as text: a map key that identifies the secret without holding it. */
  fingerprint(secret: string): string {
    return this.mac(secret);
  }

  forget(subject: string): void {
    this.entries.delete(subject);
  }

  clear(): void {
    this.entries.clear();
  }

  private mac(secret: string): string {
    return this.keyed.mac(secret);
  }
}
