// Search checks each User's fields folded as it compares (no folded copy kept): it answers what foldText of each field, then includes, answers, for mixed case, accents, NFD, ß, İ and other scripts.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { foldText } from '../src/domain/email.js';
import type { User } from '../src/domain/entities.js';
import { asciiIncludes, foldedIncludes, isAscii } from '../src/store/fold-match.js';
import { userMatches, UserSearchIndex, type SearchCursor } from '../src/store/search.js';
import { prng } from './helpers/prng.js';

/**
 * What a field may hold: ASCII of both cases, digits and punctuation, letters that fold to a longer or
 * composed text (İ to i + U+0307, the Kelvin sign to k), combining marks that NFC joins to the letter
 * before them, ß and its capital, Greek sigmas, Cyrillic, CJK and a character beyond the BMP.
 */
const asciiPool = 'aAbBeEiIkKoOsSzZ09 .@-_!';
const otherPool = [
  '\u00e9', '\u00c9', 'e\u0301', 'E\u0301', '\u00f6', '\u00d6', 'o\u0308', '\u0308', '\u0301', '\u0307', '\u00df', '\u1e9e', '\u0130', '\u0131',
  'i\u0307', '\u212a', '\u03a3', '\u03c3', '\u03c2', '\u0414', '\u0434', '\u65e5', '\u672c', '\u{1f600}', '\u212b', '\u00c5',
];

function randomText(rand: () => number, length: number, nonAsciiShare: number): string {
  let text = '';
  for (let i = 0; i < length; i++) {
    text += rand() < nonAsciiShare ? otherPool[Math.floor(rand() * otherPool.length)]! : asciiPool[Math.floor(rand() * asciiPool.length)]!;
  }
  return text;
}

/** A term as the route makes one (foldText): a piece of a folded text, a piece of the raw text folded, or random text folded. */
function randomTerm(rand: () => number, texts: readonly string[]): string {
  const source = texts[Math.floor(rand() * texts.length)]!;
  const roll = rand();
  let term: string;
  if (roll < 0.4) {
    const folded = foldText(source);
    const from = Math.floor(rand() * folded.length);
    term = folded.slice(from, from + 1 + Math.floor(rand() * 4));
  } else if (roll < 0.7) {
    const from = Math.floor(rand() * source.length);
    term = foldText(source.slice(from, from + 1 + Math.floor(rand() * 4)));
  } else {
    term = foldText(randomText(rand, 1 + Math.floor(rand() * 3), rand() < 0.5 ? 0 : 0.5));
  }
  return term.length === 0 ? 'a' : term;
}

const fieldsOf = (u: User): string[] => {
  const company = u.customData?.['company_name'];
  return [u.email, u.name, u.id, ...u.apikeys.map((k) => k.id), ...(typeof company === 'string' ? [company] : [])];
};
/** The reference: each field folded whole, then searched. */
const naiveMatches = (u: User, term: string): boolean => fieldsOf(u).some((field) => foldText(field).includes(term));

function randomUser(rand: () => number, id: string): User {
  const share = rand() < 0.5 ? 0 : 0.3;
  const keys = Array.from({ length: Math.floor(rand() * 3) }, () => ({
    id: randomText(rand, 6, 0).toUpperCase(), name: '', description: '', status: 'ENABLED' as const, nonce: 'n', createdAt: 1, modifiedAt: 1,
  }));
  return {
    id, email: `${randomText(rand, 5, share)}@${randomText(rand, 3, 0)}.example`, name: randomText(rand, 1 + Math.floor(rand() * 9), share),
    status: 'ENABLED', customData: rand() < 0.5 ? { company_name: randomText(rand, 1 + Math.floor(rand() * 8), share) } : null,
    passwordHash: 'h', organization: 'o', applications: [], groups: [], apikeys: keys, createdAt: 1, modifiedAt: 1,
  };
}

test('a field folded as it is compared contains exactly the terms its folded copy contains', () => {
  for (const seed of [1, 2, 3]) {
    const rand = prng(seed);
    for (let i = 0; i < 20_000; i++) {
      const text = randomText(rand, Math.floor(rand() * 12), [0, 0.1, 0.5][i % 3]!);
      const term = randomTerm(rand, [text.length === 0 ? 'x' : text]);
      assert.equal(foldedIncludes(text, term), foldText(text).includes(term), `seed ${seed}: ${JSON.stringify(text)} contains ${JSON.stringify(term)}`);
      if (isAscii(text) && isAscii(term)) {
        const first = term.charAt(0);
        assert.equal(asciiIncludes(text, term, first, first.toUpperCase()), foldText(text).includes(term), `seed ${seed}: ASCII ${JSON.stringify(text)} contains ${JSON.stringify(term)}`);
      }
    }
  }
  // Cases a matcher that lowercases ASCII only, or compares before NFC, would get wrong.
  const cases: [string, string, boolean][] = [
    ['JOHN', 'jo', true], ['Zoé', 'zoé', true], ['Zoe\u0301', 'zoé', true], ['Zoe\u0301', 'zoe', false], ['STRASSE', 'ss', true],
    ['Straße', 'ss', false], ['STRA\u1e9eE', '\u00df', true], ['İstanbul', 'is', false], ['İstanbul', 'i\u0307s', true], ['\u212a', 'k', true],
    ['ΣΊΣΥΦΟΣ', 'σ', true], ['ΣΊΣΥΦΟΣ', 'ς', false], ['Ab😀C', '😀c', true], ['abc', '', true], ['A', 'ab', false],
  ];
  for (const [text, term, expected] of cases) {
    assert.equal(foldedIncludes(text, term), expected, `${JSON.stringify(text)} contains ${JSON.stringify(term)}`);
    assert.equal(foldText(text).includes(term), expected, `the reference agrees on ${JSON.stringify(text)}`);
  }
});

test('a User matches a term only within one field, as the reference does, and never across two', () => {
  const rand = prng(7);
  for (let i = 0; i < 5_000; i++) {
    const u = randomUser(rand, `Id${i}x`);
    const fields = fieldsOf(u);
    for (let t = 0; t < 4; t++) {
      const term = randomTerm(rand, fields);
      assert.equal(userMatches(u, term), naiveMatches(u, term), `user ${JSON.stringify(fields)}, term ${JSON.stringify(term)}`);
    }
    // The end of one field and the start of the next: found only where one field holds both.
    const at = Math.floor(rand() * (fields.length - 1));
    const spanning = foldText(fields[at]!).slice(-2) + foldText(fields[at + 1]!).slice(0, 2);
    assert.equal(userMatches(u, spanning), naiveMatches(u, spanning), `user ${JSON.stringify(fields)}, spanning term ${JSON.stringify(spanning)}`);
  }
  const u = randomUser(prng(8), 'id');
  const joined = { ...u, email: 'ann@x.example', name: 'Lee', customData: null, apikeys: [] };
  assert.equal(userMatches(joined, 'examplelee'), false);
  assert.equal(userMatches(joined, 'ample'), true);
});

/** Every match, a step of at most `workMax` units at a time. */
function stepToEnd(cursor: SearchCursor, workMax: number): string[] {
  const out: string[] = [];
  for (let steps = 0; !cursor.step(out, Number.POSITIVE_INFINITY, workMax); steps++) assert.ok(steps < 1_000_000, 'the cursor makes progress');
  return out;
}

test('the index, built, part built or scanning, answers what the reference answers for every term', () => {
  for (const seed of [31, 32]) {
    const rand = prng(seed);
    const live = new Map<string, User>();
    const index = new UserSearchIndex((id) => live.get(id));
    index.defer(); // a snapshot load: docs settled and indexed by buildStep, scanned meanwhile
    const ids: string[] = [];
    for (let i = 0; i < 1_500; i++) {
      const u = randomUser(rand, `Id${i}Z`);
      ids.push(u.id);
      live.set(u.id, u);
      index.addLoaded(u.id);
    }
    const check = (where: string): void => {
      for (let t = 0; t < 60; t++) {
        const term = randomTerm(rand, fieldsOf(live.get(ids[Math.floor(rand() * ids.length)]!) ?? randomUser(rand, 'x')));
        const model = ids.filter((id) => live.has(id) && naiveMatches(live.get(id)!, term));
        assert.deepEqual(stepToEnd(index.cursor(term), 1 + Math.floor(rand() * 50)), model, `seed ${seed}, ${where}, term ${JSON.stringify(term)}`);
      }
    };
    check('nothing settled');
    let step = 0;
    do {
      if (step++ % 40 === 0) check(`build step ${step}`);
      const id = ids[Math.floor(rand() * ids.length)]!;
      if (rand() < 0.1) {
        live.delete(id);
        index.remove(id);
      } else if (live.has(id)) {
        const u = { ...randomUser(rand, id) };
        live.set(id, u);
        index.upsert(u, true);
      }
    } while (index.buildStep(1 + Math.floor(rand() * 8)));
    check('built');
  }
});
