// The verified-credential cache: remembers recent successful verifications so repeats skip argon2.
//
// It holds only HMAC-SHA256(per-process random key, secret): a bug that exposes the cache yields neither
// the secret nor anything to test guesses against offline, as the key lives only in this process's memory
// and dies with it (whoever reads all of that memory has both: see the README's security notes). An entry
// is tied to the exact User object it was verified against; users are immutable values, so any change
// (password, status, memberships) makes a new object and the entry stops matching at once, with no
// invalidation call to forget.
//
// How long an entry answers: while it is used at least once per idleMs, and never past ttlMs after the
// argon2 check it rests on, however busy. A use only writes the entry's last-use time (no allocation, no
// reordering of the Map); expiry is lazy on lookup, and remember(), which follows an argon2 run, sweeps a
// bounded number of entries for the idle ones, so a full cache drops those before it evicts a busy one.

import { performance } from 'node:perf_hooks';
import { verifyCacheIdleMsDefault, verifyCacheSweepEntries } from '../config/limits.js';
import { KeyedHash, sameText } from './keyed-hash.js';

/** A class rather than a literal: one shape for every entry, and lastUsedMs stays a number field written in place. */
class Entry {
  constructor(
    readonly version: unknown,
    /** The keyed hash's 32 bytes as latin1 text (see KeyedHash). */
    readonly mac: string,
    /** The argon2 check this rests on plus ttlMs: no use extends it. */
    readonly notAfterMs: number,
    public lastUsedMs: number,
  ) {}
}

/** What a cache did since it was made, for the metrics: answers that spared an argon2 run, and entries that ran out or were pushed out. */
export interface VerifyCacheCounts {
  /** check() matches and holds() yeses. */
  hits: number;
  /** Entries found or swept unused for idleMs. */
  expiredIdle: number;
  /** Entries found or dropped at ttlMs after their verification. */
  expiredTtl: number;
  /** Entries pushed out by entriesMax before the sweep found them expired (the oldest verification goes first). */
  evicted: number;
}

export class VerifyCache {
  /** Plain number fields incremented in place: counting costs the hot path no allocation. */
  private readonly tally: VerifyCacheCounts = { hits: 0, expiredIdle: 0, expiredTtl: 0, evicted: 0 };
  private readonly ttlMs: number;
  private readonly idleMs: number;
  private readonly entriesMax: number;
  private readonly now: () => number;
  /** The key is held only inside the KeyedHash: util.inspect and JSON never show its bytes. */
  private readonly keyed = KeyedHash.withRandomKey();
  /** Insertion order is verification order: remember() re-inserts, so the first key is the nearest to its ttlMs. */
  private readonly entries = new Map<string, Entry>();
  /** Where the idle sweep goes on: a live Map iterator skips deleted entries and reaches later ones. */
  private sweep: Iterator<[string, Entry]>;

  /**
   * ttlMs: the longest an entry answers after the verification it rests on; idleMs: how long it answers unused
   * (above ttlMs it changes nothing). Either at 0 turns the cache off.
   */
  constructor(opts: { ttlMs: number; idleMs?: number; entriesMax: number; now?: () => number }) {
    const idleMs = opts.idleMs ?? verifyCacheIdleMsDefault;
    if (!(opts.ttlMs >= 0)) throw new RangeError('ttlMs must be >= 0');
    if (!(idleMs >= 0)) throw new RangeError('idleMs must be >= 0');
    if (!Number.isInteger(opts.entriesMax) || opts.entriesMax < 0) throw new RangeError('entriesMax must be an integer >= 0');
    this.ttlMs = opts.ttlMs;
    this.idleMs = idleMs;
    this.entriesMax = opts.ttlMs === 0 || idleMs === 0 ? 0 : opts.entriesMax;
    // A monotonic clock (as cheap as Date.now): setting the wall clock back must not stretch an entry past ttlMs.
    this.now = opts.now ?? ((): number => performance.now());
    this.sweep = this.entries.entries();
  }

  get size(): number {
    return this.entries.size;
  }

  /** What the cache did since it was made (read when the metrics are scraped). */
  get counts(): Readonly<VerifyCacheCounts> {
    return this.tally;
  }

  /** Remember that `secret` verified for `subject` while `version` was current, as of now. Stores only a keyed hash of the secret. */
  remember(subject: string, version: unknown, secret: string): void {
    if (this.entriesMax === 0) return;
    const now = this.now();
    this.entries.delete(subject);
    this.entries.set(subject, new Entry(version, this.mac(secret), now + this.ttlMs, now));
    this.dropExpired(now);
    while (this.entries.size > this.entriesMax) {
      const oldest = this.entries.keys().next().value as string;
      this.entries.delete(oldest);
      this.tally.evicted++;
    }
  }

  /**
   * True only for a live entry (see the file's header) of this very `version` (===) whose keyed hash matches,
   * compared in constant time. A match counts as a use.
   */
  check(subject: string, version: unknown, secret: string): boolean {
    const entry = this.entries.get(subject);
    if (entry === undefined) return false;
    const now = this.now();
    if (entry.version !== version || !this.live(entry, now)) {
      if (entry.version === version) this.countExpired(entry);
      this.entries.delete(subject); // stale for good: the user changed or the time ran out
      return false;
    }
    // A wrong secret leaves the entry alone (otherwise anyone could evict a user's entry by guessing) and does not keep it alive.
    if (!sameText(this.mac(secret), entry.mac)) return false;
    entry.lastUsedMs = now;
    this.tally.hits++;
    return true;
  }

  /**
   * Whether a verification of `subject` is remembered for this very `version` (===) and is live, whatever its
   * secret. A yes counts as a use: the caller asks for a request whose credentials it recognised exactly.
   */
  holds(subject: string, version: unknown): boolean {
    const entry = this.entries.get(subject);
    if (entry === undefined || entry.version !== version) return false;
    const now = this.now();
    if (!this.live(entry, now)) return false;
    entry.lastUsedMs = now;
    this.tally.hits++;
    return true;
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

  private live(entry: Entry, now: number): boolean {
    return now < entry.notAfterMs && now - entry.lastUsedMs < this.idleMs;
  }

  /** Counts an entry that is not live by the bound it ran into first (at once: its TTL). */
  private countExpired(entry: Entry): void {
    if (entry.notAfterMs <= entry.lastUsedMs + this.idleMs) this.tally.expiredTtl++;
    else this.tally.expiredIdle++;
  }

  /**
   * Drops the entries past their ttlMs at the front (the oldest verifications; each is dropped once, so this is
   * O(1) amortised), then looks at up to verifyCacheSweepEntries more where the last sweep stopped and drops the
   * idle ones: the whole cache is looked at once every size / verifyCacheSweepEntries verifications.
   */
  private dropExpired(now: number): void {
    for (const [subject, entry] of this.entries) {
      if (now < entry.notAfterMs) break;
      this.entries.delete(subject);
      this.tally.expiredTtl++;
    }
    for (let i = 0; i < verifyCacheSweepEntries; i++) {
      let step = this.sweep.next();
      if (step.done === true) {
        this.sweep = this.entries.entries();
        step = this.sweep.next();
        if (step.done === true) return;
      }
      const [subject, entry] = step.value;
      if (!this.live(entry, now)) {
        this.countExpired(entry);
        this.entries.delete(subject);
      }
    }
  }
}
