// Pins StringMap to a Map model: random sets, deletes and lookups over keys that share buckets, growth, reservation, and iteration while it changes.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { stringHash, StringMap } from '../src/store/string-map.js';

function lcg(seed: number): (n: number) => number {
  let x = seed;
  return (n) => { x = (Math.imul(x, 1103515245) + 12345) >>> 0; return x % n; };
}

function assertSame(map: StringMap<number>, model: Map<string, number>, keys: readonly string[]): void {
  assert.equal(map.size, model.size);
  for (const k of keys) {
    assert.equal(map.get(k), model.get(k), `get(${k})`);
    assert.equal(map.has(k), model.has(k), `has(${k})`);
  }
  assert.deepEqual([...map.values()].sort((a, b) => a - b), [...model.values()].sort((a, b) => a - b));
}

test('random sets and deletes leave it what a Map is, through growth and chains that wrap around the buckets', () => {
  const random = lcg(Number(process.env['STRING_MAP_SEED'] ?? 11));
  // Few distinct keys against many operations: every key is set, deleted and set again many times over.
  const keys = Array.from({ length: 600 }, (_, i) => `k${i}${'x'.repeat(i % 7)}`);
  const map = new StringMap<number>();
  const model = new Map<string, number>();
  for (let step = 0; step < 40_000; step++) {
    const key = keys[random(keys.length)]!;
    if (random(3) === 0) assert.equal(map.delete(key), model.delete(key));
    else {
      map.set(key, step);
      model.set(key, step);
    }
    if (step % 997 === 0) assertSame(map, model, keys);
  }
  assertSame(map, model, keys);
  for (const k of keys) map.delete(k);
  assert.equal(map.size, 0);
  assert.deepEqual([...map.values()], []);
  assert.equal(map.get(keys[0]!), undefined);
});

test('a key that shares its bucket with others is found after any of them is deleted', () => {
  const map = new StringMap<number>();
  // 16 buckets to begin with: 6 keys in 16 buckets collide often enough, and deleting each in turn moves the chains.
  for (let round = 0; round < 200; round++) {
    const keys = Array.from({ length: 6 }, (_, i) => `r${round}-${i}`);
    keys.forEach((k, i) => map.set(k, i));
    for (let gone = 0; gone < keys.length; gone++) {
      map.delete(keys[gone]!);
      for (let i = gone + 1; i < keys.length; i++) assert.equal(map.get(keys[i]!), i, `${keys[i]} after deleting ${keys[gone]}`);
      assert.equal(map.get(keys[gone]!), undefined);
    }
    assert.equal(map.size, 0);
  }
});

test('values come in insertion order until a deletion leaves a hole, which the next new key fills', () => {
  const map = new StringMap<string>();
  for (const k of ['a', 'b', 'c', 'd']) map.set(k, k);
  map.set('b', 'B');
  assert.deepEqual([...map.values()], ['a', 'B', 'c', 'd']);
  map.delete('c');
  map.set('e', 'e');
  map.set('f', 'f');
  assert.deepEqual([...map.values()], ['a', 'B', 'e', 'd', 'f']);
});

test('a walk of values while the map changes visits every value present throughout exactly once', () => {
  const random = lcg(5);
  const map = new StringMap<string>();
  const stable = Array.from({ length: 3000 }, (_, i) => `stable${i}`);
  for (const k of stable) map.set(k, k);
  let churn = 0;
  for (let i = 0; i < 2000; i++) map.set(`churn${churn++}`, `churn`);
  const seen = new Map<string, number>();
  for (const value of map.values()) {
    seen.set(value, (seen.get(value) ?? 0) + 1);
    // Deletions (which shift chains and free positions), insertions (which fill them and grow the buckets).
    for (let j = 0; j < 3; j++) {
      if (random(2) === 0) map.delete(`churn${random(churn)}`);
      else map.set(`churn${churn++}`, 'churn');
    }
  }
  for (const k of stable) assert.equal(seen.get(k), 1, k);
});

test('reserve makes room without changing what it holds, and a fill of that many then finds every key', () => {
  const map = new StringMap<number>();
  map.set('before', -1);
  map.reserve(50_000);
  for (let i = 0; i < 50_000; i++) map.set(`user${i}@example.com`, i);
  assert.equal(map.size, 50_001);
  assert.equal(map.get('before'), -1);
  for (let i = 0; i < 50_000; i += 7) assert.equal(map.get(`user${i}@example.com`), i);
  assert.equal(map.get('user50000@example.com'), undefined);
});

test('stringHash depends on the seed and on every code unit, non-ASCII included', () => {
  assert.equal(stringHash('abc', 1), stringHash('abc', 1));
  assert.notEqual(stringHash('abc', 1), stringHash('abc', 2));
  assert.notEqual(stringHash('abc', 1), stringHash('abd', 1));
  assert.notEqual(stringHash('é', 1), stringHash('e', 1));
  assert.notEqual(stringHash('', 1), stringHash('\u0000', 1));
});

test('a reserve in the middle of a walk of values (it replaces the entries array) leaves the walk whole', () => {
  const map = new StringMap<string>();
  const keys = Array.from({ length: 500 }, (_, i) => `k${i}`);
  for (const k of keys) map.set(k, k);
  map.delete('k7');
  const seen: string[] = [];
  let added = 0;
  for (const value of map.values()) {
    seen.push(value);
    if (seen.length === 100) {
      map.reserve(10_000);
      // A value changed after the reserve is seen as it is now, as a Map's walk would.
      map.set('k400', 'k400 changed');
    }
    if (seen.length % 50 === 0) map.set(`late${added++}`, `late`);
  }
  assert.deepEqual(seen.filter((v) => v !== 'late'), keys.filter((k) => k !== 'k7').map((k) => (k === 'k400' ? 'k400 changed' : k)));
  assert.equal(map.get('k499'), 'k499');
  assert.equal(map.size, 499 + added);
});

test('fillEmpty leaves a fresh map what puts in the same order would; two equal keys, or a map that has held entries, leave it as it was', () => {
  const random = lcg(17);
  const keys = Array.from({ length: 20_000 }, (_, i) => `id${i}-${random(1_000_000)}`);
  const values = keys.map((_, i) => i);
  const map = new StringMap<number>();
  assert.equal(map.fillEmpty(keys, values), true);
  const model = new Map(keys.map((k, i) => [k, i]));
  assertSame(map, model, [...keys, 'absent', '']);
  assert.deepEqual([...map.values()], values, 'insertion order');
  // It goes on as any map: deletes shift chains the fill made, sets reuse positions.
  for (let i = 0; i < keys.length; i += 3) assert.equal(map.delete(keys[i]!), model.delete(keys[i]!));
  map.set('late', -1);
  model.set('late', -1);
  assertSame(map, model, [...keys, 'late']);
  assert.equal(map.fillEmpty(['other'], [1]), false, 'a map that has held entries');
  assertSame(map, model, [...keys, 'late', 'other']);

  const twice = new StringMap<number>();
  assert.equal(twice.fillEmpty(['a', 'b', 'c', 'b'], [1, 2, 3, 4]), false);
  assert.equal(twice.size, 0);
  assert.deepEqual([...twice.values()], []);
  for (const k of ['a', 'b', 'c']) assert.equal(twice.get(k), undefined);
  assert.equal(twice.fillEmpty(['a', 'b', 'c'], [1, 2, 3]), true, 'still empty, so it can be filled');
  assert.deepEqual([...twice.values()], [1, 2, 3]);
  assert.equal(twice.get('b'), 2);
});
