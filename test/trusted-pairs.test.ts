// The trusted pairs table: HalfSipHash-2-4 as published, a bounded set of buckets that gives up the soonest-ending trust, and an export that only the same key reads back.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { halfSipHash64Of, TrustedPairs, trustedPairRecordBytes, trustedPairWays } from '../src/auth/trusted-pairs.js';

/** HalfSipHash-2-4 with a 64-bit tag, key 00..07, message 00..(n-1): the reference implementation's first vectors (vectors_hsip64). */
const vectors = [
  '218d1f59b9b83cc8', 'be552412f8387315', '064f39ef7c50eb57', 'ce0f1a45f7060679', 'd5e78a175be52ea1',
  'cb9d7c3f2f3db580', 'ce3e91358aa2bc25', 'ff202728b07bc684', 'edfee820bce4858c', '5b51cccc13888307',
];

test('HalfSipHash-2-4 answers the published vectors, and hashes a string as its UTF-16LE bytes', () => {
  const key = Uint8Array.from({ length: 8 }, (_, i) => i);
  vectors.forEach((hex, n) => {
    const [a, b] = halfSipHash64Of(key, Uint8Array.from({ length: n }, (_, i) => i));
    const tag = Buffer.alloc(8);
    tag.writeInt32LE(a, 0);
    tag.writeInt32LE(b, 4);
    assert.equal(tag.toString('hex'), hex, `${n} bytes`);
  });
  for (const text of ['', 'a', 'ab', 'abc', 'p:a:u:owner@example.com\u0000i:203.0.113.10', 'ünïcødé \u{1f600}']) {
    assert.deepEqual(halfSipHash64Of(key, text), halfSipHash64Of(key, Buffer.from(text, 'utf16le')), JSON.stringify(text));
  }
});

test('a pair is trusted until its time, renewed in place, and found only under its own key', () => {
  const pairs = new TrustedPairs(64);
  pairs.useKey(Buffer.alloc(8, 1));
  assert.equal(pairs.until('p:a'), 0);
  pairs.trust('p:a', 1_000);
  pairs.trust('p:b', 2_000);
  assert.equal(pairs.until('p:a'), 1_000);
  assert.equal(pairs.until('p:b'), 2_000);
  pairs.trust('p:a', 3_000);
  assert.equal(pairs.until('p:a'), 3_000);
  assert.equal(pairs.size, 2, 'renewed, not added again');

  const exported = pairs.export(2_500);
  assert.equal(exported.length, trustedPairRecordBytes, 'only pairs still trusted after now');
  const sameKey = new TrustedPairs(64);
  sameKey.useKey(Buffer.alloc(8, 1));
  assert.equal(sameKey.import(exported, 2_500, 2_800), 1);
  assert.equal(sameKey.until('p:a'), 2_800, 'capped at untilMax');
  assert.equal(sameKey.until('p:b'), 0);
  const otherKey = new TrustedPairs(64);
  otherKey.useKey(Buffer.alloc(8, 2));
  otherKey.import(exported, 2_500, 2_800);
  assert.equal(otherKey.until('p:a'), 0);

  const garbled = Buffer.from(exported);
  garbled.writeDoubleLE(Number.NaN, 8);
  assert.equal(sameKey.import(garbled, 0, 10_000), 0, 'a time that is no time is skipped');
  pairs.useKey(Buffer.alloc(8, 3));
  assert.equal(pairs.size, 0, 'a new key forgets what the old one found');
});

test('the table stays within its slots, a full bucket giving up the trust that ends first', () => {
  const slots = 256;
  const pairs = new TrustedPairs(slots);
  // A fixed key: with a random one the latest 64 pairs overfill one of the 32 buckets in about 1 run of 170.
  pairs.useKey(Buffer.alloc(8, 1));
  const total = slots * 8;
  for (let i = 0; i < total; i++) pairs.trust(`p:${i}`, 10_000 + i);
  assert.ok(pairs.size <= slots);
  let recentFound = 0;
  let oldFound = 0;
  for (let i = 0; i < slots / 4; i++) {
    if (pairs.until(`p:${total - 1 - i}`) === 10_000 + total - 1 - i) recentFound++;
    if (pairs.until(`p:${i}`) !== 0) oldFound++;
  }
  assert.equal(recentFound, slots / 4, 'the latest pairs are all held');
  assert.equal(oldFound, 0, 'the earliest gave way');
  assert.throws(() => new TrustedPairs(100), /power of two/);
  assert.throws(() => new TrustedPairs(trustedPairWays / 2), /power of two/);
});
