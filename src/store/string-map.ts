// StringMap: a Map from strings to values for a million keys, filled at start-up several times faster than a Map.
//
// Why not a Map: filling one with a million fresh strings cost 450-690 ms per index (measured on the
// benchmark's Users), most of it memory latency: each insert reads the key string's hash, a bucket, and
// the keys already in that bucket's chain, and every growth reads every key string again to rehash it.
// Here each key's hash is computed once, kept in a typed array beside its bucket, and compared before
// any key is read; growth and a reservation made before a bulk fill move only those arrays.
//
// Layout: entries live densely (keys[e], values[e]) at positions that never move while they live; a
// deleted entry's position is reused by the next insert. Buckets (open addressing, linear probing,
// at most half full) hold entry + 1 (0: empty) and the entry's hash. Deletion shifts the probe chain
// back instead of leaving tombstones, so lookups never slow down with churn.
//
// Iteration (values) walks the entry positions, so it is safe while the map changes, with a Map's
// guarantees for what was there throughout: an entry present from start to end of the walk is visited
// once. An entry added meanwhile may or may not be (a reused position may lie behind the walk), which
// is all a fuzzy snapshot or a streamed listing needs. Order is insertion order until deletions make
// holes. The hash is seeded per map; keys are inserted only by authenticated writes.

import { randomInt } from 'node:crypto';

/** Buckets are at most this full: linear probing stays short (expected ~1.5 probes to find, ~2.5 to miss). */
const bucketLoadMax = 0.5;
const bucketsMin = 16;

/** FNV-1a over UTF-16 code units from a seed, then murmur3's finaliser so the low bits (the bucket) depend on every unit. */
export function stringHash(key: string, seed: number): number {
  let h = seed;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}

function bucketsFor(entries: number): number {
  let n = bucketsMin;
  while (n * bucketLoadMax < entries) n *= 2;
  return n;
}

export class StringMap<V> {
  private readonly seed = randomInt(2 ** 31);
  private readonly keys: (string | undefined)[] = [];
  private readonly vals: (V | undefined)[] = [];
  /** Positions of deleted entries, reused before keys grows. */
  private readonly freed: number[] = [];
  private buckets = new Int32Array(bucketsMin);
  private hashes = new Int32Array(bucketsMin);
  private mask = bucketsMin - 1;
  private count = 0;

  get size(): number {
    return this.count;
  }

  /** Makes room for `entries` in all: a fill of that many then never regrows the buckets. */
  reserve(entries: number): void {
    if (this.buckets.length < bucketsFor(entries)) this.rehash(bucketsFor(entries));
  }

  get(key: string): V | undefined {
    const at = this.find(key, stringHash(key, this.seed));
    return at < 0 ? undefined : this.vals[this.buckets[at]! - 1];
  }

  has(key: string): boolean {
    return this.find(key, stringHash(key, this.seed)) >= 0;
  }

  /** As Map.set: a key already present keeps its position and takes the new value. */
  set(key: string, value: V): this {
    const hash = stringHash(key, this.seed);
    const found = this.find(key, hash);
    if (found >= 0) {
      this.vals[this.buckets[found]! - 1] = value;
      return this;
    }
    if (this.count + 1 > this.buckets.length * bucketLoadMax) this.rehash(this.buckets.length * 2);
    const entry = this.freed.pop() ?? this.keys.length;
    this.keys[entry] = key;
    this.vals[entry] = value;
    let at = hash & this.mask;
    while (this.buckets[at] !== 0) at = (at + 1) & this.mask;
    this.buckets[at] = entry + 1;
    this.hashes[at] = hash;
    this.count++;
    return this;
  }

  delete(key: string): boolean {
    let at = this.find(key, stringHash(key, this.seed));
    if (at < 0) return false;
    const entry = this.buckets[at]! - 1;
    this.keys[entry] = undefined;
    this.vals[entry] = undefined;
    this.freed.push(entry);
    this.count--;
    // Backward shift: pull each later bucket of the chain into the hole if its home allows, so no probe
    // for a key still present ever meets an empty bucket before it.
    const { buckets, hashes, mask } = this;
    for (let next = (at + 1) & mask; buckets[next] !== 0; next = (next + 1) & mask) {
      if (((next - hashes[next]!) & mask) >= ((next - at) & mask)) {
        buckets[at] = buckets[next]!;
        hashes[at] = hashes[next]!;
        at = next;
      }
    }
    buckets[at] = 0;
    return true;
  }

  /** Live values by entry position: safe while the map changes (see the top of this file). */
  *values(): Generator<V, void, undefined> {
    const { keys, vals } = this;
    for (let e = 0; e < keys.length; e++) if (keys[e] !== undefined) yield vals[e]!;
  }

  /** The bucket holding key, or -1. */
  private find(key: string, hash: number): number {
    const { buckets, hashes, keys, mask } = this;
    for (let at = hash & mask; ; at = (at + 1) & mask) {
      const entry = buckets[at]!;
      if (entry === 0) return -1;
      if (hashes[at] === hash && keys[entry - 1] === key) return at;
    }
  }

  private rehash(size: number): void {
    const oldBuckets = this.buckets;
    const oldHashes = this.hashes;
    this.buckets = new Int32Array(size);
    this.hashes = new Int32Array(size);
    this.mask = size - 1;
    for (let i = 0; i < oldBuckets.length; i++) {
      const entry = oldBuckets[i]!;
      if (entry === 0) continue;
      const hash = oldHashes[i]!;
      let at = hash & this.mask;
      while (this.buckets[at] !== 0) at = (at + 1) & this.mask;
      this.buckets[at] = entry;
      this.hashes[at] = hash;
    }
  }
}
