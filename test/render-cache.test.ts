// The byte-bounded cache of kept User renderings: the total never passes its bound, oldest go first, an entry too large is never kept.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RenderCache } from '../src/http/render-cache.js';

interface Entry { bytes: number }

test('the bytes held stay under the bound as entries come and grow; the oldest go first', () => {
  const cache = new RenderCache<string, Entry>(10_000, 3_000);
  for (let i = 0; i < 100; i++) {
    cache.keep(`k${i}`, { bytes: 1_000 + (i % 7) * 200 });
    assert.ok(cache.bytes <= 10_000, `${cache.bytes} after ${i + 1}`);
  }
  assert.ok(cache.bytes > 5_000, 'it keeps what fits');
  assert.equal(cache.get('k0'), undefined, 'the oldest went first');
  assert.ok(cache.get('k99') !== undefined, 'the newest is kept');
  // An entry that grows (a second rendering added) is charged again, and others make room.
  const grown = cache.get('k99')!;
  grown.bytes += 1_500;
  cache.keep('k99', grown);
  assert.ok(cache.bytes <= 10_000);
  assert.equal(cache.get('k99'), grown);
});

test('an entry over entryBytesMax is not kept, nor is one that grows past it', () => {
  const cache = new RenderCache<string, Entry>(10_000, 3_000);
  cache.keep('big', { bytes: 3_001 });
  assert.equal(cache.get('big'), undefined);
  assert.equal(cache.bytes, 0);
  const entry = { bytes: 2_000 };
  cache.keep('growing', entry);
  assert.equal(cache.get('growing'), entry);
  entry.bytes = 3_500;
  cache.keep('growing', entry);
  assert.equal(cache.get('growing'), undefined);
  assert.equal(cache.bytes, 0);
});

test('a new value under a kept key replaces it and its charge; delete gives its bytes back', () => {
  const cache = new RenderCache<string, Entry>(10_000, 3_000);
  cache.keep('a', { bytes: 1_000 });
  const before = cache.bytes;
  cache.keep('a', { bytes: 2_000 });
  assert.equal(cache.bytes, before + 1_000);
  assert.equal(cache.size, 1);
  cache.delete('a');
  assert.equal(cache.bytes, 0);
  assert.equal(cache.size, 0);
});

test('deleted entries leave the eviction order: the oldest live entry goes next, and the order stays bounded', () => {
  const cache = new RenderCache<string, Entry>(10_000, 3_000);
  for (let i = 0; i < 5; i++) cache.keep(`k${i}`, { bytes: 1_000 });
  cache.delete('k0');
  cache.delete('k1');
  // 3 live entries (3,768 bytes): six more of 1,000 pass the bound, and k2, the oldest still kept, goes first.
  for (let i = 5; i < 11; i++) cache.keep(`k${i}`, { bytes: 1_000 });
  assert.equal(cache.get('k2'), undefined);
  assert.ok(cache.get('k3') !== undefined || cache.get('k4') !== undefined);
  assert.ok(cache.get('k10') !== undefined);
  assert.ok(cache.bytes <= 10_000);
  // Many keeps and deletes with no eviction between them: what is held stays what the entries say.
  for (let i = 0; i < 100_000; i++) {
    cache.keep(`churn${i}`, { bytes: 10 });
    cache.delete(`churn${i}`);
  }
  const live = cache.size;
  let counted = 0;
  for (let i = 0; i <= 10; i++) if (cache.get(`k${i}`) !== undefined) counted++;
  assert.equal(live, counted);
  const order = (cache as unknown as { order: unknown[]; head: number });
  assert.ok(order.order.length - order.head <= 2 * live + 64, `the order holds ${order.order.length - order.head} slots for ${live} entries`);
});

test('once full, a new key is taken one time in admitEveryWhenFull; kept keys still grow and get replaced', () => {
  const cache = new RenderCache<string, Entry>(10_000, 3_000, 4);
  for (let i = 0; i < 8; i++) cache.keep(`k${i}`, { bytes: 900 });
  assert.equal(cache.size, 8, 'while there is room, every key is taken');
  const before = cache.bytes;
  const taken: string[] = [];
  for (let i = 8; i < 20; i++) {
    cache.keep(`k${i}`, { bytes: 900 });
    if (cache.get(`k${i}`) !== undefined) taken.push(`k${i}`);
    assert.ok(cache.bytes <= 10_000);
  }
  assert.deepEqual(taken, ['k11', 'k15', 'k19'], 'every fourth new key pushes the oldest out');
  assert.equal(cache.bytes, before);
  // A kept key's entry that grows, or a new value under it, is not a new key: no turn to wait.
  const kept = cache.get('k19')!;
  kept.bytes += 500;
  cache.keep('k19', kept);
  assert.equal(cache.get('k19'), kept);
  const replaced = { bytes: 900 };
  cache.keep('k15', replaced);
  assert.equal(cache.get('k15'), replaced);
});
