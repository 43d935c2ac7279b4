// StringMap: a Map from strings to values for a million keys, filled at start-up faster than a Map.
//
// Why not a Map: filling one with a million fresh strings is a large part of start-up per index, most
// of it memory latency: each insert reads the key string's hash, a bucket, and
// the keys already in that bucket's chain, and every growth reads every key string again to rehash it.
// Here each key's hash is computed once, kept in a typed array beside its bucket, and compared before
// any key is read; growth and a reservation made before a bulk fill move only those arrays.
//
// Layout: entries live densely (key and value side by side) at positions that never move while they
// live; a deleted entry's position is reused by the next insert. Buckets (open addressing, linear probing,
// at most half full) hold entry + 1 (0: empty) and the entry's hash side by side, so a lookup touches one
// cache line of buckets and one of entries before the key itself. Deletion shifts the probe chain back
// instead of leaving tombstones, so lookups never slow down with churn.
//
// Iteration (values) walks the entry positions, so it is safe while the map changes, with a Map's
// guarantees for what was there throughout: an entry present from start to end of the walk is visited
// once. An entry added meanwhile may or may not be (a reused position may lie behind the walk), which
// is all a fuzzy snapshot or a streamed listing needs. Order is insertion order until deletions make
// holes. The hash is seeded per map; keys are inserted only by authenticated writes.

import { randomInt } from 'node:crypto';
import { fmix32, fnv1a } from '../domain/hash.js';

/** Buckets are at most this full: linear probing stays short (expected ~1.5 probes to find, ~2.5 to miss). */
const bucketLoadMax = 0.5;
const bucketsMin = 16;

/** FNV-1a over UTF-16 code units from a seed, then murmur3's finaliser so the low bits (the bucket) depend on every unit. */
export function stringHash(key: string, seed: number): number {
  return fmix32(fnv1a(key, seed));
}

/** Home buckets per group of the fill order: a group's buckets span a few cache lines, written close together. */
const fillGroupBucketsLog2 = 8;

/** Indexes of `hashes` by their home bucket's group (a counting sort, stable): the order fillEmpty places them in. */
function fillOrder(hashes: Int32Array, mask: number): Int32Array {
  const n = hashes.length;
  const starts = new Int32Array((mask >>> fillGroupBucketsLog2) + 2);
  for (let i = 0; i < n; i++) starts[((hashes[i]! & mask) >>> fillGroupBucketsLog2) + 1] += 1;
  for (let g = 1; g < starts.length; g++) starts[g] += starts[g - 1]!;
  const order = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    const g = (hashes[i]! & mask) >>> fillGroupBucketsLog2;
    order[starts[g]!] = i;
    starts[g] += 1;
  }
  return order;
}

function bucketsFor(entries: number): number {
  let n = bucketsMin;
  while (n * bucketLoadMax < entries) n *= 2;
  return n;
}

export class StringMap<V> {
  private readonly seed = randomInt(2 ** 31);
  /** Entry e's key at 2e and value at 2e + 1 (a deleted entry's key is undefined): one cache line for both. */
  private entries: unknown[] = [];
  /** Entries ever placed: positions from here on have never held one. */
  private top = 0;
  /** Positions of deleted entries, reused before entries grows. */
  private readonly freed: number[] = [];
  /** Bucket b's entry + 1 (0: empty) at 2b and that entry's hash at 2b + 1: a probe reads one cache line. */
  private table = new Int32Array(2 * bucketsMin);
  /** Buckets - 1. */
  private mask = bucketsMin - 1;
  private count = 0;

  get size(): number {
    return this.count;
  }

  /** Makes room for `entries` in all: a fill of that many then never regrows the buckets. */
  reserve(entries: number): void {
    const buckets = bucketsFor(entries);
    if (this.mask + 1 < buckets) this.rehash(buckets);
    // Sized once rather than grown by half as it fills: a fill of a million keys would leave 40% of it unused.
    if (this.entries.length < 2 * entries) {
      const sized = new Array<unknown>(2 * entries);
      for (let i = 0; i < 2 * this.top; i++) sized[i] = this.entries[i];
      this.entries = sized;
    }
  }

  /**
   * For a map that has never held an entry: keys[i] -> values[i] for every i, as put()s in that order would leave
   * it, and true. False, with the map as it was, if it has held entries or two of the keys are equal. Entries are
   * placed in bucket order, so the buckets are written in one sweep rather than at a cache miss each, and each key
   * is read once, in order.
   */
  fillEmpty(keys: readonly string[], values: readonly V[]): boolean {
    if (this.top !== 0) return false;
    const n = keys.length;
    this.reserve(n);
    const { entries, seed } = this;
    const hashes = new Int32Array(n);
    for (let i = 0; i < n; i++) {
      const key = keys[i]!;
      hashes[i] = stringHash(key, seed);
      entries[2 * i] = key;
      entries[2 * i + 1] = values[i];
    }
    const { table, mask } = this;
    const order = fillOrder(hashes, mask);
    for (let k = 0; k < n; k++) {
      const i = order[k]!;
      const hash = hashes[i]!;
      let at = hash & mask;
      for (let e = table[2 * at]!; e !== 0; at = (at + 1) & mask, e = table[2 * at]!) {
        if (table[2 * at + 1] === hash && entries[2 * e - 2] === keys[i]) {
          this.entries.fill(undefined, 0, 2 * n);
          table.fill(0);
          return false;
        }
      }
      table[2 * at] = i + 1;
      table[2 * at + 1] = hash;
    }
    this.top = n;
    this.count = n;
    return true;
  }

  get(key: string): V | undefined {
    const at = this.find(key, stringHash(key, this.seed));
    return at < 0 ? undefined : this.entries[2 * this.table[2 * at]! - 1] as V;
  }

  has(key: string): boolean {
    return this.find(key, stringHash(key, this.seed)) >= 0;
  }

  /** As Map.set: a key already present keeps its position and takes the new value. */
  set(key: string, value: V): this {
    this.put(key, value);
    return this;
  }

  /** set, returning the value the key had (undefined if it was not present): a replace in one lookup. */
  put(key: string, value: V): V | undefined {
    const hash = stringHash(key, this.seed);
    const found = this.find(key, hash);
    const { entries } = this;
    if (found >= 0) {
      const at = 2 * this.table[2 * found]! - 1;
      const had = entries[at] as V;
      entries[at] = value;
      return had;
    }
    if (this.count + 1 > (this.mask + 1) * bucketLoadMax) this.rehash(2 * (this.mask + 1));
    const entry = this.freed.pop() ?? this.top++;
    entries[2 * entry] = key;
    entries[2 * entry + 1] = value;
    this.place(entry + 1, hash);
    this.count++;
    return undefined;
  }

  delete(key: string): boolean {
    let at = this.find(key, stringHash(key, this.seed));
    if (at < 0) return false;
    const { table, mask, entries } = this;
    const entry = table[2 * at]! - 1;
    entries[2 * entry] = undefined;
    entries[2 * entry + 1] = undefined;
    this.freed.push(entry);
    this.count--;
    // Backward shift: pull each later bucket of the chain into the hole if its home allows, so no probe
    // for a key still present ever meets an empty bucket before it.
    for (let next = (at + 1) & mask; table[2 * next] !== 0; next = (next + 1) & mask) {
      const hash = table[2 * next + 1]!;
      if (((next - hash) & mask) >= ((next - at) & mask)) {
        table[2 * at] = table[2 * next]!;
        table[2 * at + 1] = hash;
        at = next;
      }
    }
    table[2 * at] = 0;
    return true;
  }

  /** Live values by entry position: safe while the map changes (see the top of this file). */
  *values(): Generator<V, void, undefined> {
    // this.entries each time: a reserve() meanwhile replaces the array.
    for (let i = 0; i < 2 * this.top; i += 2) if (this.entries[i] !== undefined) yield this.entries[i + 1] as V;
  }

  /** The bucket holding key, or -1. */
  private find(key: string, hash: number): number {
    const { table, entries, mask } = this;
    for (let at = hash & mask; ; at = (at + 1) & mask) {
      const entry = table[2 * at]!;
      if (entry === 0) return -1;
      if (table[2 * at + 1] === hash && entries[2 * entry - 2] === key) return at;
    }
  }

  /** Puts entry + 1 with its hash in the first empty bucket from its home. */
  private place(entryPlusOne: number, hash: number): void {
    const { table, mask } = this;
    let at = hash & mask;
    while (table[2 * at] !== 0) at = (at + 1) & mask;
    table[2 * at] = entryPlusOne;
    table[2 * at + 1] = hash;
  }

  private rehash(buckets: number): void {
    const old = this.table;
    this.table = new Int32Array(2 * buckets);
    this.mask = buckets - 1;
    for (let i = 0; i < old.length; i += 2) if (old[i] !== 0) this.place(old[i]!, old[i + 1]!);
  }
}
