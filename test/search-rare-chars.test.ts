// A short term holding a rarer character (accented, another script, uncommon punctuation) passes over the haystacks that lack it without reading them, and still finds every user a scan finds, through updates, deletes and a bulk load.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { User } from '../src/domain/entities.js';
import { UserSearchIndex, type SearchCursor } from '../src/store/search.js';

function user(id: string, name: string): User {
  return {
    id, email: `${id}@mail.example`, name, status: 'ENABLED', customData: null, passwordHash: 'h', organization: 'o',
    applications: [], groups: [], apikeys: [], createdAt: 1, modifiedAt: 1,
  };
}

/** Every match, a step of at most `workMax` units at a time. */
function stepToEnd(cursor: SearchCursor, workMax: number): string[] {
  const out: string[] = [];
  for (let steps = 0; !cursor.step(out, Number.POSITIVE_INFINITY, workMax); steps++) assert.ok(steps < 1_000_000, 'the cursor makes progress');
  return out;
}

const userCount = 20_000;
/** The few users whose names hold rarer characters. */
const rareNames = new Map<number, string>([[3, 'Zoé Dupré'], [4_000, 'Jürgen Öz'], [9_999, 'Ana! Silva'], [15_000, '日本 Taro'], [userCount - 1, 'Zoë Ünal']]);
const nameOf = (i: number): string => rareNames.get(i) ?? `Jo Smith ${i}`;

test('a short term with a rarer character is found by a scan that skips the haystacks lacking it, in any slices', () => {
  const index = new UserSearchIndex();
  for (let i = 0; i < userCount; i++) index.upsert(user(`u${i}`, nameOf(i)));
  for (const term of ['é', 'zo', 'é ', 'ö', 'ü', '!', '日', '日本', 'ë', 'ß', 'q~']) {
    const expected = index.scan(term, Number.POSITIVE_INFINITY);
    for (const workMax of [1, 7, 1000, Number.POSITIVE_INFINITY]) {
      const cursor = index.cursor(term);
      assert.deepEqual(stepToEnd(cursor, workMax), expected, `"${term}", steps of ${workMax}`);
    }
  }
  // The skipping itself: every user checked would be 20,000 units of work.
  for (const term of ['é', 'ß', 'q~']) {
    const cursor = index.cursor(term);
    stepToEnd(cursor, Number.POSITIVE_INFINITY);
    assert.ok(cursor.workDone < userCount / 4, `"${term}": ${cursor.workDone} units of work for ${userCount} users`);
  }
  // A term of common characters only is checked haystack by haystack, as before.
  assert.deepEqual(index.search('jo', 3), ['u0', 'u1', 'u2']);
});

test('rarer characters follow updates and deletes, and haystacks made late after a bulk load', () => {
  const live = new Map<string, User>();
  const index = new UserSearchIndex((id) => live.get(id));
  index.defer(); // a snapshot load: haystacks are made when first needed
  for (let i = 0; i < 5000; i++) {
    const u = user(`u${i}`, nameOf(i));
    live.set(u.id, u);
    index.addLoaded(u.id);
  }
  // Changed before their haystacks were made: the made haystack is the current User's.
  live.set('u10', user('u10', 'René'));
  assert.deepEqual(stepToEnd(index.cursor('é'), 5), ['u3', 'u10']);
  // A User gains the character, another loses it, a third is deleted.
  const gained = user('u20', 'Chloé');
  live.set(gained.id, gained);
  index.upsert(gained, true);
  const lost = user('u3', 'Zoe Dupre');
  live.set(lost.id, lost);
  index.upsert(lost, true);
  live.delete('u10');
  index.remove('u10');
  assert.deepEqual(stepToEnd(index.cursor('é'), 5), ['u20']);
  while (index.buildStep(97));
  assert.deepEqual(stepToEnd(index.cursor('é'), 3), ['u20']);
  // New Users after the build, with and without the character.
  const later = user('u5000', 'Élodie');
  live.set(later.id, later);
  index.upsert(later);
  assert.deepEqual(stepToEnd(index.cursor('é'), 2), ['u20', 'u5000']);
  assert.deepEqual(index.search('ö', 10), index.scan('ö', 10));
});
