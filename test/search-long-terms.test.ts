// Long terms whose trigrams are common and alike (company names that share words) answer what a scan answers, however the search is sliced.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { User } from '../src/domain/entities.js';
import { UserSearchIndex, type SearchCursor } from '../src/store/search.js';
import { prng } from './helpers/prng.js';

// Company names made of a few shared words, as in a real tenant list: "Wyvern Logistics Ltd", "Wyvern Labs Inc",
// "Raven Logistics SA". Their trigrams are in thousands of users' haystacks, those of one word nearly the same users.
const prefixes = ['Wyvern', 'Raven', 'Granite', 'Boreal', 'Maple'];
const cores = ['Logistics', 'Labs', 'Bakery', 'Biotech', 'Ventures'];
const suffixes = [' Ltd', ' LLC', ' Inc', ' SA', ''];
const firsts = ['ana', 'joao', 'sofia', 'wei', 'olga', 'lars'];
const lasts = ['novak', 'silva', 'lee', 'loft', 'ravensson'];

function pick<T>(rand: () => number, items: readonly T[]): T {
  return items[Math.floor(rand() * items.length)]!;
}

function user(rand: () => number, i: number): User {
  // Skewed: the first companies hold most users, the last few only a handful.
  const company = `${prefixes[Math.floor(rand() * rand() * prefixes.length)]!} ${pick(rand, cores)}${pick(rand, suffixes)}`;
  const first = pick(rand, firsts);
  const last = pick(rand, lasts);
  return {
    id: `u${i}`, email: `${first}.${last}${i}@${company.toLowerCase().replace(/[^a-z]/g, '')}.example`, name: `${first} ${last}`,
    status: 'ENABLED', customData: rand() < 0.9 ? { company_name: company } : null, passwordHash: 'h', organization: 'o',
    applications: [], groups: [], apikeys: [], createdAt: 1, modifiedAt: 1,
  };
}

/** What people type: a company's name or its start, a name, an address's start (1 to 6 characters). */
function term(rand: () => number, users: readonly User[]): string {
  const u = pick(rand, users);
  const company = (u.customData?.['company_name'] as string | undefined) ?? 'Maple Labs Inc';
  switch (Math.floor(rand() * 4)) {
    case 0: return company.toLowerCase().slice(0, 3 + Math.floor(rand() * (company.length - 2)));
    case 1: return company.toLowerCase().slice(Math.floor(rand() * 6));
    case 2: return pick(rand, [...firsts, ...lasts]);
    default: return u.email.slice(0, 1 + Math.floor(rand() * 6));
  }
}

/** Every match, at most `countMax` at a time and `workMax` units per step, as request slices take them. */
function stepped(cursor: SearchCursor, limit: number, countMax: number, workMax: number): string[] {
  const out: string[] = [];
  for (let steps = 0; out.length < limit; steps++) {
    assert.ok(steps < 1_000_000, 'the cursor makes progress');
    if (cursor.step(out, Math.min(limit, out.length + countMax), workMax)) break;
  }
  return out;
}

test('long and short terms over company names that share words: the first page and every match equal a scan, in any slices', () => {
  for (const seed of [1, 2]) {
    const rand = prng(seed);
    const index = new UserSearchIndex();
    const users: User[] = [];
    for (let i = 0; i < 6000; i++) {
      const u = user(rand, i);
      users.push(u);
      index.upsert(u);
    }
    // Some users change company or leave, so lists hold stale postings the intersection must see through.
    for (let i = 0; i < 600; i++) {
      const at = Math.floor(rand() * users.length);
      if (rand() < 0.5) {
        const moved = { ...user(rand, at), id: users[at]!.id };
        users[at] = moved;
        index.upsert(moved);
      } else {
        index.remove(users[at]!.id);
      }
    }
    for (let i = 0; i < 400; i++) {
      const t = term(rand, users);
      const where = `seed ${seed}, term "${t}"`;
      assert.deepEqual(index.search(t, 21), index.scan(t, 21), `${where}: first page`);
      const all = index.scan(t, Number.POSITIVE_INFINITY);
      assert.deepEqual(index.search(t, Number.POSITIVE_INFINITY), all, `${where}: every match`);
      const workMax = 1 + Math.floor(rand() * 40);
      const countMax = 1 + Math.floor(rand() * 5);
      assert.deepEqual(stepped(index.cursor(t), Number.POSITIVE_INFINITY, countMax, workMax), all, `${where}: steps of ${workMax}, ${countMax} at a time`);
    }
  }
});

test('a term whose rarest trigrams belong to one word finds the few users of the one company it names', () => {
  const index = new UserSearchIndex();
  const users: User[] = [];
  // Thousands at Wyvern Labs, a few at Wyvern Logistics Ltd among them: the word "wyvern" passes every
  // list but the ones of "logistics".
  for (let i = 0; i < 5000; i++) {
    const company = i % 997 === 5 ? 'Wyvern Logistics Ltd' : i % 2 === 0 ? 'Wyvern Labs Inc' : 'Raven Logistics SA';
    const u: User = {
      id: `w${i}`, email: `user${i}@mail.example`, name: `User ${i}`, status: 'ENABLED', customData: { company_name: company },
      passwordHash: 'h', organization: 'o', applications: [], groups: [], apikeys: [], createdAt: 1, modifiedAt: 1,
    };
    users.push(u);
    index.upsert(u);
  }
  const expected = users.filter((u) => u.customData!['company_name'] === 'Wyvern Logistics Ltd').map((u) => u.id);
  assert.ok(expected.length >= 5);
  for (const t of ['wyvern logistics ltd', 'wyvern logistics', 'vern logi']) {
    assert.deepEqual(index.search(t, Number.POSITIVE_INFINITY), expected, t);
    assert.deepEqual(index.search(t, 2), expected.slice(0, 2), `${t}, first 2`);
    for (const workMax of [1, 3, 17]) assert.deepEqual(stepped(index.cursor(t), Number.POSITIVE_INFINITY, 1, workMax), expected, `${t}, steps of ${workMax}`);
  }
});
