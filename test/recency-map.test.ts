// RecencyMap: use order kept by relinking entries, so the oldest is found and dropped in O(1) after any deletes.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RecencyMap } from '../src/auth/recency-map.js';

test('oldest first: set and touch make a key the newest, delete unlinks it anywhere', () => {
  const map = new RecencyMap<number>();
  for (const key of ['a', 'b', 'c', 'd']) map.set(key, key.charCodeAt(0));
  map.touch(map.entry('a')!);
  map.set('c', 0);
  assert.deepEqual([...map].map(([k]) => k), ['b', 'd', 'a', 'c']);
  assert.equal(map.get('c'), 0);
  assert.equal(map.delete('d'), true);
  assert.equal(map.delete('d'), false);
  assert.equal(map.oldest()!.key, 'b');
  map.delete('b');
  map.delete('c');
  assert.deepEqual([...map].map(([k]) => k), ['a']);
  map.delete('a');
  assert.equal(map.oldest(), undefined);
  assert.equal(map.size, 0);
  map.set('e', 1);
  assert.deepEqual([...map], [['e', 1]]);
});

test('against a model: random sets, touches and deletes keep the same order as an array', () => {
  let seed = 24;
  const random = (n: number): number => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed % n; };
  const map = new RecencyMap<number>();
  let model: string[] = [];
  for (let step = 0; step < 20_000; step++) {
    const key = `k${random(50)}`;
    const op = random(3);
    if (op === 0) { map.set(key, step); model = [...model.filter((k) => k !== key), key]; }
    else if (op === 1) { const e = map.entry(key); if (e !== undefined) { map.touch(e); model = [...model.filter((k) => k !== key), key]; } }
    else { map.delete(key); model = model.filter((k) => k !== key); }
    if (step % 97 === 0) assert.deepEqual([...map].map(([k]) => k), model, `seed 24, step ${step}`);
    assert.equal(map.oldest()?.key, model[0]);
    assert.equal(map.size, model.length);
  }
});
