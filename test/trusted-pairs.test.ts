// The trusted pairs table: HalfSipHash-2-4 as published, a bounded set of buckets that gives up the soonest-ending trust, and an export that only the same key reads back.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { bruteForceTrustedPairAccountWaysMax, bruteForceTrustedPairCallerWaysMax } from '../src/config/limits.js';
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
  assert.equal(pairs.until('a:a', '', 'a'), 0);
  pairs.trust('a:a', '', 'a', 1_000, 0);
  pairs.trust('a:b', '', 'b', 2_000, 0);
  assert.equal(pairs.until('a:a', '', 'a'), 1_000);
  assert.equal(pairs.until('a:b', '', 'b'), 2_000);
  pairs.trust('a:a', '', 'a', 3_000, 0);
  assert.equal(pairs.until('a:a', '', 'a'), 3_000);
  assert.equal(pairs.size, 2, 'renewed, not added again');

  const exported = pairs.export(2_500);
  assert.equal(exported.length, trustedPairRecordBytes, 'only pairs still trusted after now');
  const sameKey = new TrustedPairs(64);
  sameKey.useKey(Buffer.alloc(8, 1));
  assert.equal(sameKey.import(exported, 2_500, 2_800), 1);
  assert.equal(sameKey.until('a:a', '', 'a'), 2_800, 'capped at untilMax');
  assert.equal(sameKey.until('a:b', '', 'b'), 0);
  const otherKey = new TrustedPairs(64);
  otherKey.useKey(Buffer.alloc(8, 2));
  otherKey.import(exported, 2_500, 2_800);
  assert.equal(otherKey.until('a:a', '', 'a'), 0);

  const garbled = Buffer.from(exported);
  garbled.writeDoubleLE(Number.NaN, 16);
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
  // Each its own account and caller: no quota binds, so the trust that ends first gives way.
  for (let i = 0; i < total; i++) pairs.trust(`a:${i}`, `caller${i}`, `${i}`, 10_000 + i, 0);
  assert.ok(pairs.size <= slots);
  let recentFound = 0;
  let oldFound = 0;
  for (let i = 0; i < slots / 4; i++) {
    if (pairs.until(`a:${total - 1 - i}`, `caller${total - 1 - i}`, `${total - 1 - i}`) === 10_000 + total - 1 - i) recentFound++;
    if (pairs.until(`a:${i}`, `caller${i}`, `${i}`) !== 0) oldFound++;
  }
  assert.equal(recentFound, slots / 4, 'the latest pairs are all held');
  assert.equal(oldFound, 0, 'the earliest gave way');
  assert.throws(() => new TrustedPairs(100), /power of two/);
  assert.throws(() => new TrustedPairs(trustedPairWays / 2), /power of two/);
});

// Issue 42, finding 5: an authenticator with one valid account pushed other pairs out of the table with successes from many ip_address values.
describe('issue 42: trust cannot be evicted by one caller', () => {
  const slots = 64;
  const buckets = slots / trustedPairWays;
  const now = 1_000;

  /** A small table under a fixed key, so that which pairs share a bucket is the same on every run. */
  function table(): TrustedPairs {
    const pairs = new TrustedPairs(slots);
    pairs.useKey(Buffer.alloc(8, 7));
    return pairs;
  }

  /** A pair: its account key, its caller ('' for a Basic caller) and its address. */
  type Pair = readonly [accountKey: string, scope: string, address: string];

  /** Pairs of an account each, of the caller scope(i) ('': a Basic caller's), added until the table is full: the pairs held. */
  function fill(pairs: TrustedPairs, scope: (i: number) => string, until: number): Pair[] {
    const held: Pair[] = [];
    for (let i = 0; pairs.size < slots; i++) {
      held.push([`a:other${i}`, scope(i), `other${i}`]);
      pairs.trust(`a:other${i}`, scope(i), `other${i}`, until + i, now);
    }
    return held.filter((pair) => pairs.until(...pair) !== 0);
  }

  /** Successes of one caller: with one account, or an account each. */
  function flood(pairs: TrustedPairs, caller: string, count: number, oneAccount: boolean, from = 0): number {
    let held = 0;
    for (let i = from; i < from + count; i++) {
      const account = oneAccount ? 'a:u:mallory@example.com' : `a:u:mallory${i}@example.com`;
      if (pairs.trust(account, caller, `198.51.${i >> 8}.${i & 255}`, 500_000 + i, now)) held++;
    }
    return held;
  }

  const lost = (pairs: TrustedPairs, held: readonly Pair[]): number => held.filter((pair) => pairs.until(...pair) === 0).length;

  test('one account pushes out at most its quota of slots in all, and nothing more however long it goes on', () => {
    const pairs = table();
    const others = fill(pairs, (i) => `caller${i}`, 100_000);
    flood(pairs, 'attacker', 10_000, true);
    const first = lost(pairs, others);
    assert.ok(first <= bruteForceTrustedPairAccountWaysMax, `${first} pushed out`);
    flood(pairs, 'attacker', 10_000, true, 10_000);
    assert.equal(lost(pairs, others), first, 'at its quota, the account replaces only its own');
    assert.equal(pairs.size, slots);
  });

  test('one caller with an account per success pushes out at most its quota of each full bucket', () => {
    const pairs = table();
    const others = fill(pairs, (i) => `caller${i}`, 100_000);
    flood(pairs, 'attacker', 10_000, false);
    const first = lost(pairs, others);
    assert.ok(first <= bruteForceTrustedPairCallerWaysMax * buckets, `${first} pushed out`);
    flood(pairs, 'attacker', 10_000, false, 10_000);
    assert.equal(lost(pairs, others), first, 'at its quota, the caller replaces only its own');
  });

  test('a caller\'s pairs never take the place of the admin API\'s Basic pairs, and survive an export and import', () => {
    const pairs = table();
    const basic = fill(pairs, () => '', 100_000);
    assert.equal(basic.length, slots);
    for (let c = 0; c < 20; c++) assert.equal(flood(pairs, `caller${c}`, 500, false, c * 500), 0, 'no slot a caller may take');
    assert.equal(lost(pairs, basic), 0);

    const restarted = table();
    assert.equal(restarted.import(pairs.export(now), now, Infinity), slots);
    flood(restarted, 'attacker', 2_000, false);
    assert.equal(lost(restarted, basic), 0, 'still Basic pairs after the import');
    // A Basic newcomer still takes its place among them, the trust that ends first giving way.
    assert.equal(restarted.trust('a:u:admin@example.com', '', '203.0.113.5', 900_000, now), true);
  });

  test('one account\'s pairs stay in one bucket, however many addresses it succeeds from', () => {
    const pairs = table();
    flood(pairs, 'attacker', 1_000, true);
    assert.equal(pairs.size, trustedPairWays, 'the free slots of its own bucket are taken, no other');
  });

  test('pairs a caller holds past its quota give way first: newcomers of others find room even in a table it filled', () => {
    const pairs = table();
    flood(pairs, 'attacker', 1_000, false);
    assert.equal(pairs.size, slots, 'free slots are taken whatever the quota');
    const newcomers: Pair[] = [];
    for (let i = 0; i < 2 * buckets; i++) {
      newcomers.push([`a:newcomer${i}`, `caller${i}`, `newcomer${i}`]);
      // Their trust ends before the attacker's: they still take the place of its guests, not the other way round.
      assert.equal(pairs.trust(`a:newcomer${i}`, `caller${i}`, `newcomer${i}`, 100_000 + i, now), true);
    }
    flood(pairs, 'attacker', 10_000, false, 1_000);
    assert.equal(lost(pairs, newcomers), 0);
  });
});
