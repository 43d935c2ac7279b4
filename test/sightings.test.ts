// The bit table of things seen once (src/auth/sightings.ts): a second sighting is told, the table stays bounded, and false repeats stay rare.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Sightings, textHash } from '../src/auth/sightings.js';

test('the first sighting is new, the second a repeat', () => {
  const seen = new Sightings(1 << 16, 1 << 13);
  assert.equal(seen.repeated(textHash('user-a')), false);
  assert.equal(seen.repeated(textHash('user-a')), true);
  assert.equal(seen.repeated(textHash('user-b')), false);
});

test('the table is wiped once it holds marksMax marks, so false repeats stay near marksMax / bits', () => {
  const bits = 1 << 16;
  const seen = new Sightings(bits, bits / 8);
  let falseRepeats = 0;
  const ids = 8 * (bits / 8);
  for (let i = 0; i < ids; i++) if (seen.repeated(textHash(`id-${i}`))) falseRepeats++;
  assert.ok(falseRepeats < ids / 8, `${falseRepeats} of ${ids} distinct ids taken for repeats`);
  assert.ok(falseRepeats > 0, 'a bit table does collide');
});

test('the size must be a power of two', () => {
  assert.throws(() => new Sightings(1000, 100), RangeError);
});
