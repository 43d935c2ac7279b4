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

test('the table is wiped once it holds marksMax marks, and false repeats stay near the square of its fill', () => {
  const bits = 1 << 16;
  const seen = new Sightings(bits, bits / 8);
  let falseRepeats = 0;
  const ids = 8 * (bits / 8);
  for (let i = 0; i < ids; i++) if (seen.repeated(textHash(`id-${i}`))) falseRepeats++;
  // The fill climbs to 1/8 between wipes: false repeats about (1/8)² / 3 of the time, where one bit per id gave 1/16.
  assert.ok(falseRepeats < ids / 64, `${falseRepeats} of ${ids} distinct ids taken for repeats`);
  assert.ok(falseRepeats > 0, 'a bit table does collide');
});

test('a repeat is told after any number of other ids, until the table is wiped', () => {
  const seen = new Sightings(1 << 16, 1 << 13);
  assert.equal(seen.repeated(textHash('kept')), false);
  for (let i = 0; i < 1000; i++) seen.repeated(textHash(`other-${i}`));
  assert.equal(seen.repeated(textHash('kept')), true);
});

test('the size must be a power of two', () => {
  assert.throws(() => new Sightings(1000, 100), RangeError);
});
