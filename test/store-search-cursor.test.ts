// A search cursor stepped a few units of work at a time answers what a linear scan answers, in the same order, and copes with users changed between its slices.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { User } from '../src/domain/entities.js';
import { searchHaystack, UserSearchIndex, type SearchCursor } from '../src/store/search.js';
import { prng } from './helpers/prng.js';
import { word } from './helpers/search-words.js';

function user(rand: () => number, id: string): User {
  return {
    id, email: `${word(rand, 3)}@${word(rand, 2)}.com`, name: `${word(rand, 2)} ${word(rand, 3)}`, status: 'ENABLED',
    customData: rand() < 0.5 ? { company_name: word(rand, 2).toUpperCase() } : null, passwordHash: 'h', organization: 'o',
    applications: [], groups: [], apikeys: [], createdAt: 1, modifiedAt: 1,
  };
}

/** Terms of 1 to 6 characters: the short ones are scanned, the others intersect postings. */
function randomTerm(rand: () => number): string {
  return word(rand, 1 + Math.floor(rand() * 3)).toLowerCase().slice(0, 1 + Math.floor(rand() * 6));
}

/** Every match, a step of at most `workMax` units at a time, with `between` run after each step. */
function stepToEnd(cursor: SearchCursor, workMax: number, between: () => void = () => {}): string[] {
  const out: string[] = [];
  for (let steps = 0; !cursor.step(out, Number.POSITIVE_INFINITY, workMax); steps++) {
    assert.ok(steps < 1_000_000, 'the cursor makes progress');
    between();
  }
  return out;
}

function randomIndex(rand: () => number, users: number, deferFrom: number): { index: UserSearchIndex; live: Map<string, User> } {
  const index = new UserSearchIndex();
  const live = new Map<string, User>();
  for (let i = 0; i < users; i++) {
    if (i === deferFrom) index.defer(); // what a snapshot load does: the rest waits for buildStep
    const u = user(rand, `u${i}`);
    live.set(u.id, u);
    index.upsert(u);
  }
  return { index, live };
}

test('a cursor stepped by tiny slices finds what a scan finds, in the same order, indexed, mid-build or not indexed at all', () => {
  for (const seed of [1, 2, 3]) {
    const rand = prng(seed);
    const { index } = randomIndex(rand, 400, 150);
    for (let phase = 0; phase < 3; phase++) {
      // phase 0: 150 indexed, 250 scanned; 1: part of the build done; 2: all indexed.
      if (phase === 1) for (let i = 0; i < 10; i++) index.buildStep(7);
      if (phase === 2) while (index.buildStep(50));
      for (let i = 0; i < 200; i++) {
        const term = randomTerm(rand);
        const workMax = 1 + Math.floor(rand() * 8);
        const where = `seed ${seed}, phase ${phase}, term "${term}", slices of ${workMax}`;
        assert.deepEqual(stepToEnd(index.cursor(term), workMax), index.scan(term, Infinity), where);
        // A count cap is the limit of a scan, whichever slice it falls in.
        const limit = 1 + Math.floor(rand() * 5);
        const cursor = index.cursor(term);
        const capped: string[] = [];
        while (!cursor.step(capped, limit, workMax) && capped.length < limit);
        assert.deepEqual(capped, index.scan(term, limit), `${where}, limit ${limit}`);
      }
    }
  }
});

test('the build advancing between slices neither loses nor repeats a match', () => {
  for (const seed of [4, 5, 6]) {
    const rand = prng(seed);
    const { index } = randomIndex(rand, 500, 20);
    const terms = Array.from({ length: 40 }, () => randomTerm(rand));
    const expected = terms.map((t) => index.scan(t, Infinity));
    const cursors = terms.map((t) => index.cursor(t));
    const found: string[][] = terms.map(() => []);
    // All cursors advance together while buildStep indexes the users they have and have not reached yet.
    for (let round = 0; cursors.some((c) => !c.done); round++) {
      cursors.forEach((c, i) => c.step(found[i]!, Infinity, 1 + Math.floor(rand() * 5)));
      index.buildStep(1 + Math.floor(rand() * 6));
      assert.ok(round < 100_000);
    }
    terms.forEach((t, i) => assert.deepEqual(found[i], expected[i], `seed ${seed}, term "${t}"`));
  }
});

test('users updated, deleted or created between slices: the untouched are found exactly as by a scan, nothing twice, nothing that never matched', () => {
  for (const seed of [7, 8, 9, 10]) {
    const rand = prng(seed);
    const { index, live } = randomIndex(rand, 300, rand() < 0.5 ? 300 : 100);
    let next = 300;
    for (let round = 0; round < 60; round++) {
      const term = randomTerm(rand);
      /** Every haystack each touched user had during the walk. */
      const touched = new Map<string, string[]>();
      const touch = (id: string, haystack: string | undefined): void => {
        const seen = touched.get(id) ?? [];
        if (live.has(id)) seen.push(searchHaystack(live.get(id)!));
        if (haystack !== undefined) seen.push(haystack);
        touched.set(id, seen);
      };
      const insertionOrder = [...live.keys()];
      const found = stepToEnd(index.cursor(term), 1 + Math.floor(rand() * 6), () => {
        const roll = rand();
        const ids = [...live.keys()];
        const id = ids[Math.floor(rand() * ids.length)]!;
        if (roll < 0.3) {
          const u = user(rand, id);
          touch(id, searchHaystack(u));
          live.set(id, u);
          index.upsert(u);
        } else if (roll < 0.5 && live.size > 50) {
          touch(id, undefined);
          live.delete(id);
          index.remove(id);
        } else if (roll < 0.6) {
          const u = user(rand, `u${next++}`);
          touch(u.id, searchHaystack(u));
          insertionOrder.push(u.id);
          live.set(u.id, u);
          index.upsert(u);
        }
        if (rand() < 0.3) index.buildStep(1 + Math.floor(rand() * 5));
      });
      const where = `seed ${seed}, round ${round}, term "${term}"`;
      assert.equal(new Set(found).size, found.length, `${where}: reported twice`);
      const positions = found.map((id) => insertionOrder.indexOf(id));
      assert.ok(positions.every((p, i) => p >= 0 && (i === 0 || p > positions[i - 1]!)), `${where}: not in creation order`);
      for (const id of found) {
        const haystacks = touched.get(id) ?? [searchHaystack(live.get(id)!)];
        assert.ok(haystacks.some((h) => h.includes(term)), `${where}: ${id} never matched`);
      }
      const untouchedMatches = index.scan(term, Infinity).filter((id) => !touched.has(id));
      assert.deepEqual(found.filter((id) => !touched.has(id)), untouchedMatches, `${where}: untouched users`);
      // Between rounds the index settles (stale postings and all), as the server's idle steps make it.
      if (rand() < 0.3) while (index.buildStep(20));
    }
  }
});

test('an empty term, or one holding the field separator, is done at once with nothing', () => {
  const rand = prng(12);
  const { index } = randomIndex(rand, 50, 50);
  for (const term of ['', 'a\u0000b', '\u0000']) {
    const cursor = index.cursor(term);
    assert.equal(cursor.done, true);
    const out: string[] = [];
    assert.equal(cursor.step(out, Infinity, 1), true);
    assert.deepEqual(out, []);
  }
});

test('haystacks left to be made after a bulk load answer for the current User, whenever they are made', () => {
  for (const seed of [7, 8, 9]) {
    const rand = prng(seed);
    const live = new Map<string, User>();
    const index = new UserSearchIndex((id) => live.get(id));
    index.defer(); // a snapshot load: haystacks are made by the build or by the first scan that needs them
    // Creation order, as the model answers in it: a User deleted and created again moves to the end.
    const ids: string[] = [];
    for (let i = 0; i < 300; i++) {
      const u = user(rand, `u${i}`);
      live.set(u.id, u);
      ids.push(u.id);
      // The load itself (no id lookup, settled later), then Users created while the build has not run yet.
      if (i < 200) index.addLoaded(u.id);
      else index.upsert(u);
    }
    const model = (term: string): string[] => ids.filter((id) => live.has(id) && searchHaystack(live.get(id)!).includes(term));
    for (let phase = 0; phase < 3; phase++) {
      // Users changed, deleted, and deleted then created again before their doc is settled, while the build runs, and after.
      for (let i = 0; i < 40; i++) {
        const id = ids[Math.floor(rand() * ids.length)]!;
        const r = rand();
        if (!live.has(id)) {
          const again = user(rand, id);
          live.set(id, again);
          ids.splice(ids.indexOf(id), 1);
          ids.push(id);
          index.upsert(again, false);
        } else if (r < 0.3) {
          live.delete(id);
          index.remove(id);
        } else {
          const changed = user(rand, id);
          live.set(id, changed);
          index.upsert(changed, true);
        }
      }
      if (phase === 1) for (let i = 0; i < 10; i++) index.buildStep(13);
      if (phase === 2) while (index.buildStep(50));
      for (let i = 0; i < 100; i++) {
        const term = randomTerm(rand);
        const where = `seed ${seed}, phase ${phase}, term "${term}"`;
        assert.deepEqual(stepToEnd(index.cursor(term), 1 + Math.floor(rand() * 40)), model(term), where);
        assert.deepEqual(index.search(term, Infinity), model(term), `${where}, in one call`);
      }
    }
  }
});
