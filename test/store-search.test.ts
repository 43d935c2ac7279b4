// The trigram search index answers exactly what a linear scan over the same haystacks answers, through updates, deletes, partial builds and compactions.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { User } from '../src/domain/entities.js';
import { searchHaystack, UserSearchIndex } from '../src/store/search.js';
import { prng } from './helpers/prng.js';
import { word } from './helpers/search-words.js';

function user(rand: () => number, id: string): User {
  const keys = rand() < 0.3 ? [{ id: `K${id.toUpperCase().padEnd(24, 'X')}`, name: '', description: '', status: 'ENABLED' as const, nonce: 'n', createdAt: 1, modifiedAt: 1 }] : [];
  return {
    id, email: `${word(rand, 3)}@${word(rand, 2)}.com`, name: `${word(rand, 2)} ${word(rand, 3)}`, status: 'ENABLED',
    customData: rand() < 0.5 ? { company_name: word(rand, 2).toUpperCase() } : null, passwordHash: 'h', organization: 'o',
    applications: [], groups: [], apikeys: keys, createdAt: 1, modifiedAt: 1,
  };
}

function buildAll(index: UserSearchIndex): void {
  while (index.buildStep(7));
}

function checkAgainstScan(index: UserSearchIndex, rand: () => number, seed: number): void {
  for (let i = 0; i < 300; i++) {
    const term = word(rand, 1 + Math.floor(rand() * 3)).toLowerCase().slice(0, 2 + Math.floor(rand() * 5));
    const limit = rand() < 0.5 ? Infinity : 1 + Math.floor(rand() * 5);
    assert.deepEqual(index.search(term, limit), index.scan(term, limit), `seed ${seed}, term "${term}", limit ${limit}`);
  }
}

test('search equals a linear scan after inserts, updates, deletes and background builds', () => {
  for (const seed of [1, 2, 3, 4]) {
    const rand = prng(seed);
    const index = new UserSearchIndex();
    const live = new Map<string, User>();
    let next = 0;
    for (let round = 0; round < 6; round++) {
      if (round === 2) index.defer(); // what a snapshot load does: postings left to buildStep
      for (let i = 0; i < 150; i++) {
        const roll = rand();
        if (roll < 0.5 || live.size === 0) {
          const u = user(rand, `u${next++}`);
          live.set(u.id, u);
          index.upsert(u);
        } else if (roll < 0.8) {
          const id = [...live.keys()][Math.floor(rand() * live.size)]!;
          const u = { ...user(rand, id) };
          live.set(id, u);
          index.upsert(u);
        } else {
          const id = [...live.keys()][Math.floor(rand() * live.size)]!;
          live.delete(id);
          index.remove(id);
        }
      }
      checkAgainstScan(index, rand, seed); // possibly mid-build or mid-compaction
      for (let steps = Math.floor(rand() * 20); steps > 0; steps--) index.buildStep(1 + Math.floor(rand() * 9));
      checkAgainstScan(index, rand, seed); // part indexed, the rest scanned
      buildAll(index);
      assert.equal(index.building, false);
      checkAgainstScan(index, rand, seed);
    }
  }
});

test('results come in creation order and stop at the limit', () => {
  const rand = prng(9);
  const index = new UserSearchIndex();
  for (let i = 0; i < 50; i++) index.upsert({ ...user(rand, `id${i}`), email: `common${i}@x.io` });
  assert.deepEqual(index.search('common', 3), ['id0', 'id1', 'id2']);
  // An update that adds a trigram to an old user appends it out of order; order must still hold.
  index.upsert({ ...user(rand, 'id1'), email: 'zzqq@x.io' });
  index.upsert({ ...user(rand, 'id0'), email: 'zzqq1@x.io' });
  assert.deepEqual(index.search('zzqq', 10), ['id0', 'id1']);
  assert.deepEqual(index.search('zzqq', 10), index.scan('zzqq', 10));
});

test('stale postings are dropped a step at a time while searches keep using the index', () => {
  const rand = prng(11);
  const index = new UserSearchIndex();
  const ids = Array.from({ length: 200 }, (_, i) => `id${i}`);
  for (const id of ids) index.upsert(user(rand, id));
  assert.equal(index.building, false);
  // Replacing every haystack leaves most postings stale: a compaction starts, with nothing left to index.
  for (const id of ids) index.upsert({ ...user(rand, id), email: `${id}-moved@elsewhere.example`, name: `renamed ${id}` });
  for (const id of ids.slice(0, 50)) index.remove(id);
  assert.equal(index.building, true);
  let steps = 0;
  do {
    steps++;
    checkAgainstScan(index, rand, 11);
    for (const term of ['moved', 'renamed id1', 'elsewhere', 'id19']) assert.deepEqual(index.search(term, Infinity), index.scan(term, Infinity), term);
    // Mutations between steps, behind and ahead of the compaction's position.
    const id = ids[50 + Math.floor(rand() * 150)]!;
    index.upsert(user(rand, id));
  } while (index.buildStep(3));
  assert.ok(steps > 10, `the compaction took ${steps} steps`);
  checkAgainstScan(index, rand, 11);
});

test('a bulk build answers exactly while Users change between its counting pass and its lists being made', () => {
  // The build counts each list's docs first and makes every list at that size: a User changed in between
  // must still be found (its lists outgrow their counted size) and never by what it no longer holds.
  for (const seed of [21, 22]) {
    const rand = prng(seed);
    const live = new Map<string, User>();
    const index = new UserSearchIndex((id) => live.get(id));
    index.defer();
    const ids = Array.from({ length: 400 }, (_, i) => `u${i}`);
    for (const id of ids) {
      live.set(id, user(rand, id));
      index.addLoaded(id);
    }
    let changes = 0;
    do {
      // After every step, some Users take a trigram that no one had when it was counted, or lose theirs.
      for (let i = 0; i < 6; i++) {
        const id = ids[Math.floor(rand() * ids.length)]!;
        const u = { ...user(rand, id), name: rand() < 0.7 ? `qqzx ${changes++}` : 'plain' };
        live.set(id, u);
        index.upsert(u, true);
      }
    } while (index.buildStep(4));
    for (const term of ['qqzx', 'qqz', 'plain', 'u1', 'com']) {
      const model = ids.filter((id) => searchHaystack(live.get(id)!).includes(term));
      assert.deepEqual(index.search(term, Infinity), model, `seed ${seed}, term "${term}"`);
    }
    checkAgainstScan(index, rand, seed);
  }
});
