// The search index's map from a User's id to its doc number: a table of doc numbers whose keys are read from the docs themselves.
//
// Why not a Map: at a million Users a Map<string, number> holds about 28 MB (three words an entry and its
// buckets), though every key is already held by the doc it maps to. Here a bucket is one Int32 (doc + 1,
// 0: empty), at most half full: 8 MB at a million, and a key is compared by reading its doc's id. Open
// addressing with linear probing; a deletion shifts the probe chain back instead of leaving tombstones.
// The hash is seeded per table; ids come only from authenticated writes.

import { randomInt } from 'node:crypto';
import { stringHash } from './string-map.js';

/** Buckets are at most this full: linear probing stays short (expected ~1.5 probes to find, ~2.5 to miss). */
const bucketLoadMax = 0.5;
const bucketsMin = 16;

export class DocsById {
  private readonly seed = randomInt(2 ** 31);
  /** Doc + 1 per bucket, 0 for an empty one. */
  private table = new Int32Array(bucketsMin);
  private mask = bucketsMin - 1;
  private count = 0;

  /** idOf: the id of a doc in the table, read whenever a probe meets it (also while it is being deleted or moved). */
  constructor(private readonly idOf: (doc: number) => string) {}

  get size(): number {
    return this.count;
  }

  /** Makes room for `entries` in all: filling that many then never regrows the table. */
  reserve(entries: number): void {
    let buckets = this.mask + 1;
    while (buckets * bucketLoadMax < entries) buckets *= 2;
    if (buckets > this.mask + 1) this.rehash(buckets);
  }

  get(id: string): number | undefined {
    const at = this.find(id);
    return at < 0 ? undefined : this.table[at]! - 1;
  }

  /** Maps an id not in the table to doc. */
  add(id: string, doc: number): void {
    if (this.count + 1 > (this.mask + 1) * bucketLoadMax) this.rehash(2 * (this.mask + 1));
    this.place(doc + 1, stringHash(id, this.seed));
    this.count++;
  }

  /** Unmaps id; call it while its doc still answers idOf with it. */
  delete(id: string): boolean {
    let at = this.find(id);
    if (at < 0) return false;
    const { table, mask } = this;
    this.count--;
    // Backward shift: pull each later bucket of the chain into the hole if its home allows, so no probe
    // for an id still present ever meets an empty bucket before it.
    for (let next = (at + 1) & mask; table[next] !== 0; next = (next + 1) & mask) {
      const home = stringHash(this.idOf(table[next]! - 1), this.seed) & mask;
      if (((next - home) & mask) >= ((next - at) & mask)) {
        table[at] = table[next]!;
        at = next;
      }
    }
    table[at] = 0;
    return true;
  }

  /** The bucket holding id, or -1. */
  private find(id: string): number {
    const { table, mask } = this;
    for (let at = stringHash(id, this.seed) & mask; ; at = (at + 1) & mask) {
      const entry = table[at]!;
      if (entry === 0) return -1;
      if (this.idOf(entry - 1) === id) return at;
    }
  }

  private place(docPlusOne: number, hash: number): void {
    const { table, mask } = this;
    let at = hash & mask;
    while (table[at] !== 0) at = (at + 1) & mask;
    table[at] = docPlusOne;
  }

  private rehash(buckets: number): void {
    const old = this.table;
    this.table = new Int32Array(buckets);
    this.mask = buckets - 1;
    for (let i = 0; i < old.length; i++) if (old[i] !== 0) this.place(old[i]!, stringHash(this.idOf(old[i]! - 1), this.seed));
  }
}
