// Posting lists delta-coded in blocks hold exactly the ascending docs a plain sorted array would, through appends, inserts, compaction and skip-ahead reads.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { blockDocsMax, BulkSizing, Postings, PostingsCursor } from '../src/store/postings.js';
import { prng } from './helpers/prng.js';

const docMax = 2 ** 31 - 1;

/** Ascending distinct docs with gaps from 1 to about 2^spanBits, spread over every varint length. */
function ascendingDocs(rand: () => number, count: number, spanBits: number): number[] {
  const docs: number[] = [];
  let doc = -1;
  for (let i = 0; i < count; i++) {
    const gap = 1 + Math.floor(2 ** (rand() * spanBits));
    if (doc + gap > docMax) break;
    doc += gap;
    docs.push(doc);
  }
  return docs;
}

function listOf(docs: readonly number[]): Postings {
  const p = new Postings(0);
  for (const doc of docs) assert.equal(p.add(doc), true);
  return p;
}

/** Reads the list back whole and checks its blocks: each holds 1..blockDocsMax docs (compaction in place relies on it). */
function checkList(p: Postings, docs: readonly number[], context: string): void {
  assert.equal(p.length, docs.length, `${context}: length`);
  assert.deepEqual(p.toArray(), docs, context);
  const counts = p.blockDocCounts();
  for (const count of counts) assert.ok(count >= 1 && count <= blockDocsMax, `${context}: a block of ${count} docs`);
  assert.equal(counts.reduce((a, b) => a + b, 0), docs.length, `${context}: docs in blocks`);
}

/** The first doc >= target at index `from` or later, as the model answers it. */
function firstAtLeast(docs: readonly number[], from: number, target: number): number {
  let i = from;
  while (i < docs.length && docs[i]! < target) i++;
  return i;
}

/** Seeks ascending targets (some exactly on docs, some between, some far ahead) and compares each answer with the model. */
function checkSeeks(p: Postings, docs: readonly number[], rand: () => number, context: string): void {
  const cursor = new PostingsCursor(p);
  let at = 0;
  let target = 0;
  for (let probe = 0; probe < 400; probe++) {
    const roll = rand();
    if (roll < 0.3 && at < docs.length) target = docs[Math.min(docs.length - 1, at + Math.floor(rand() * 300))]!;
    else if (roll < 0.5) target += 1;
    else target += Math.floor(2 ** (rand() * 31));
    target = Math.min(target, docMax);
    at = firstAtLeast(docs, at, target);
    const expected = at < docs.length ? docs[at]! : -1;
    assert.equal(cursor.seek(target), expected, `${context}: seek(${target})`);
    if (expected < 0) break;
  }
}

test('random ascending lists read back whole and by skip-ahead seeks, every gap size from 1 to 2^31', () => {
  for (const seed of [1, 2, 3, 4, 5, 6, 7, 8]) {
    const rand = prng(seed);
    for (const spanBits of [1, 4, 8, 14, 21, 31]) {
      const count = Math.floor(rand() * 1500);
      const docs = ascendingDocs(rand, count, spanBits);
      const p = listOf(docs);
      const context = `seed ${seed}, span 2^${spanBits}, ${docs.length} docs`;
      assert.equal(p.length, docs.length, context);
      assert.deepEqual(p.toArray(), docs, context);
      checkSeeks(p, docs, rand, context);
    }
  }
});

test('a seek lands on the right doc at, just before and just past every block boundary', () => {
  const docs = Array.from({ length: 1000 }, (_, i) => i * 3 + 7);
  const p = listOf(docs);
  for (let start = 0; start < docs.length; start += 64) {
    for (const target of [docs[start]! - 1, docs[start]!, docs[start]! + 1]) {
      const expected = docs[firstAtLeast(docs, 0, target)] ?? -1;
      assert.equal(new PostingsCursor(p).seek(target), expected, `fresh cursor, seek(${target})`);
    }
  }
  // One cursor walking every doc in turn crosses each boundary by reading on, not by skipping.
  const walker = new PostingsCursor(p);
  for (const doc of docs) assert.equal(walker.seek(doc), doc);
  assert.equal(walker.seek(docs[docs.length - 1]! + 1), -1);
  // A target below the cursor's doc leaves it where it is.
  const cursor = new PostingsCursor(p);
  assert.equal(cursor.seek(2000), 2002);
  assert.equal(cursor.seek(10), 2002);
});

test('empty lists, single docs and the extremes of the doc range', () => {
  const empty = new Postings(0);
  assert.equal(empty.length, 0);
  assert.deepEqual(empty.toArray(), []);
  assert.equal(new PostingsCursor(empty).seek(0), -1);
  assert.deepEqual(empty.compact(0, 100, () => false), { read: 0, resumeAt: -1 });
  for (const docs of [[0], [docMax], [0, docMax], [0, 1, docMax - 1, docMax], [5, 2 ** 30, docMax], [127, 128, 16383, 16384, 2097151, 2097152, 268435455, 268435456]]) {
    const p = listOf(docs);
    assert.deepEqual(p.toArray(), docs);
    assert.equal(p.add(docs[docs.length - 1]!), false, 'the last doc again');
    assert.equal(p.add(docs[0]!), false, 'the first doc again');
    for (const doc of docs) assert.equal(new PostingsCursor(p).seek(doc), doc, `seek(${doc}) in ${docs.join(',')}`);
    assert.equal(new PostingsCursor(p).seek(0), docs[0]);
  }
});

test('inserts below the last doc keep the list in order, split full blocks and refuse docs already listed', () => {
  for (const seed of [11, 12, 13, 14]) {
    const rand = prng(seed);
    const model = new Set<number>();
    const p = new Postings(0);
    // Appends first (blocks fill to the limit), then inserts all over it: some before the first doc, many into
    // one block, many just past a listed doc (past a block's last, the next block's first gap shrinks, maybe to fewer bytes).
    for (const doc of ascendingDocs(rand, 600, seed % 2 === 0 ? 6 : 12)) {
      model.add(doc);
      p.add(doc);
    }
    const listed = [...model];
    const top = Math.max(...model);
    for (let i = 0; i < 3000; i++) {
      const roll = rand();
      const doc = roll < 0.05 ? Math.floor(rand() * 3) : roll < 0.3 ? Math.floor(rand() * 200)
        : roll < 0.6 ? Math.min(top - 1, listed[Math.floor(rand() * listed.length)]! + 1 + Math.floor(rand() * 4)) : Math.floor(rand() * top);
      assert.equal(p.add(doc), !model.has(doc), `seed ${seed}: add(${doc})`);
      model.add(doc);
      if (i % 500 === 0) {
        const sorted = [...model].sort((a, b) => a - b);
        checkList(p, sorted, `seed ${seed}, after ${i} inserts`);
        checkSeeks(p, sorted, rand, `seed ${seed}, after ${i} inserts`);
      }
    }
    // Appends still follow: the last block's count stayed right through splits.
    for (let doc = top + 1; doc < top + 400; doc += 2) {
      model.add(doc);
      p.add(doc);
    }
    const sorted = [...model].sort((a, b) => a - b);
    checkList(p, sorted, `seed ${seed}, at the end`);
    checkSeeks(p, sorted, rand, `seed ${seed}, at the end`);
  }
});

test('compaction drops the refused docs in steps, between which the list still reads, grows and shrinks', () => {
  for (const seed of [21, 22, 23, 24, 25, 26]) {
    const rand = prng(seed);
    const docs = ascendingDocs(rand, 1 + Math.floor(rand() * 3000), [3, 10, 20][seed % 3]!);
    const p = listOf(docs);
    const model = new Set(docs);
    const dropRate = [0, 0.1, 0.5, 0.9, 1][seed % 5]!;
    const stale = new Set(docs.filter(() => rand() < dropRate));
    let fromDoc = 0;
    let steps = 0;
    for (;;) {
      const before = p.length;
      const { read, resumeAt } = p.compact(fromDoc, 1 + Math.floor(rand() * 400), (doc) => !stale.has(doc));
      const after = p.toArray();
      const context = `seed ${seed}, step ${steps} from ${fromDoc}`;
      checkList(p, after, context);
      assert.equal(p.length, after.length, `${context}: length`);
      assert.ok(read >= before - p.length, `${context}: dropped more than it read`);
      for (let i = 1; i < after.length; i++) assert.ok(after[i - 1]! < after[i]!, `${context}: out of order at ${i}`);
      const present = new Set(after);
      for (const doc of after) assert.ok(model.has(doc), `${context}: ${doc} made up`);
      for (const doc of model) if (!present.has(doc)) assert.ok(stale.has(doc), `${context}: ${doc} lost`);
      const upTo = resumeAt < 0 ? Infinity : resumeAt;
      for (const doc of after) if (stale.has(doc)) assert.ok(doc < fromDoc || doc >= upTo, `${context}: stale ${doc} kept`);
      model.clear();
      for (const doc of after) model.add(doc);
      checkSeeks(p, after, rand, `seed ${seed}, step ${steps}`);
      // Between steps the index appends new users and, rarely, inserts for an updated one.
      if (rand() < 0.5) {
        const doc = (after[after.length - 1] ?? -1) + 1 + Math.floor(rand() * 50);
        p.add(doc);
        model.add(doc);
      }
      if (rand() < 0.3 && after.length > 0) {
        const doc = Math.floor(rand() * after[after.length - 1]!);
        if (!stale.has(doc)) {
          p.add(doc);
          model.add(doc);
        }
      }
      steps++;
      if (resumeAt < 0) break;
      assert.ok(resumeAt > fromDoc || read > 0, 'progress');
      fromDoc = resumeAt;
    }
    // A pass from the first doc to the end leaves no stale doc.
    while (p.compact(0, Infinity, (doc) => !stale.has(doc)).resumeAt >= 0);
    const sorted = [...model].filter((doc) => !stale.has(doc)).sort((a, b) => a - b);
    checkList(p, sorted, `seed ${seed}: after a full pass`);
    checkSeeks(p, sorted, rand, `seed ${seed}: after a full pass`);
    // The list goes on taking appends and inserts.
    const next = (sorted[sorted.length - 1] ?? -1) + 1000;
    assert.equal(p.add(next), true);
    assert.equal(p.add(next), false);
    if (sorted.length > 0) assert.equal(p.add(sorted[0]!), false);
    const appended = [...sorted, next];
    for (let doc = next + 1; doc < next + 300; doc += 3) {
      p.add(doc);
      appended.push(doc);
    }
    checkList(p, appended, `seed ${seed}: appends after the pass`);
  }
});

test('after compaction packs a list full blocks, appends open a new block when the last is full', () => {
  for (const [keptCount, docsPerStep] of [[127, 50], [128, 50], [129, 50], [256, 50], [128, Infinity], [256, Infinity], [200, Infinity]] as const) {
    const docs = Array.from({ length: 400 }, (_, i) => i * 2);
    const p = listOf(docs);
    for (let from = 0; from >= 0; ) from = p.compact(from, docsPerStep, (doc) => doc < keptCount * 2).resumeAt;
    const expected = docs.slice(0, keptCount);
    for (let doc = 1000; doc < 1400; doc++) {
      p.add(doc);
      expected.push(doc);
    }
    checkList(p, expected, `${keptCount} kept`);
  }
});

test('compaction that drops every doc leaves an empty list that takes docs again', () => {
  const p = listOf(Array.from({ length: 700 }, (_, i) => i * 5));
  for (let from = 0; from >= 0; ) from = p.compact(from, 100, () => false).resumeAt;
  assert.equal(p.length, 0);
  assert.deepEqual(p.toArray(), []);
  assert.equal(new PostingsCursor(p).seek(0), -1);
  assert.equal(p.add(42), true);
  assert.equal(p.add(7), true);
  assert.deepEqual(p.toArray(), [7, 42]);
});

test('lists the bulk build sizes from its count are filled without growing out of its shared buffers', () => {
  const rand = prng(31);
  const users = 5000;
  const keysOfDoc: number[][] = [];
  for (let doc = 0; doc < users; doc++) {
    const keys: number[] = [];
    // Ascii keys and hashed keys above them; a key repeated within a doc counts once.
    for (let k = 0; k < 12; k++) {
      const roll = rand();
      // Common keys, rare ones (a few docs far apart: a list whose slack is under a varint), hashed ones.
      keys.push(roll < 0.5 ? Math.floor(rand() * 300) : roll < 0.8 ? 1000 + Math.floor(rand() * 3000) : (1 << 21) + Math.floor(rand() * 50));
    }
    keysOfDoc.push(keys);
  }
  const sizing = new BulkSizing(0, users);
  for (let doc = 0; doc < users; doc++) {
    for (const key of keysOfDoc[doc]!) sizing.countKey(doc, key);
    if (doc % 500 === 499) sizing.reserve();
  }
  sizing.countedUpTo = users;
  sizing.reserve();
  sizing.counted();
  const lists = new Map<number, Postings>();
  const model = new Map<number, number[]>();
  for (let doc = 0; doc < users; doc++) {
    for (const key of keysOfDoc[doc]!) {
      let p = lists.get(key);
      if (p === undefined) lists.set(key, (p = sizing.listFor(key)));
      p.add(doc);
      const docs = model.get(key) ?? [];
      if (docs[docs.length - 1] !== doc) docs.push(doc);
      model.set(key, docs);
    }
  }
  const buffers = new Set<ArrayBufferLike>();
  for (const [key, p] of lists) {
    assert.deepEqual(p.toArray(), model.get(key), `key ${key}`);
    buffers.add(p.bytes.buffer);
    buffers.add(p.skips.buffer);
  }
  // Every list still in the buffers it was carved from: one for a build this small.
  assert.equal(buffers.size, 1, `${buffers.size} buffers for ${lists.size} lists`);
});
