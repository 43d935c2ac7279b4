// RuntimeStats: collection pauses land in the bucket of their length, and a blocked event loop shows as a late delay sample.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pauseBucketsS, RuntimeStats } from '../src/http/runtime-stats.js';

const bucketOf = (seconds: number): number => {
  const i = pauseBucketsS.findIndex((le) => seconds <= le);
  return i === -1 ? pauseBucketsS.length : i;
};

test('a pause is counted once, in the first bucket whose bound it does not pass, and summed', () => {
  const stats = new RuntimeStats();
  stats.recordGc('major', 0.03);
  stats.recordGc('major', 0.001);
  stats.recordGc('minor', 7);
  const major = stats.gc.get('major')!;
  assert.equal(major.count, 2);
  assert.equal(major.buckets[bucketOf(0.03)], 1);
  assert.equal(major.buckets[bucketOf(0.001)], 1, 'a pause equal to a bound is in that bucket');
  assert.ok(Math.abs(major.sum - 0.031) < 1e-12);
  assert.equal(stats.gc.get('minor')!.buckets[pauseBucketsS.length], 1, 'past every bound: the last slot');
  assert.equal(stats.gc.get('incremental')!.count, 0);
});

test('started, it samples the delay; a loop held for 60 ms shows as a sample late by 50 ms or more; stopped, it samples no more', async () => {
  const stats = new RuntimeStats();
  stats.start();
  try {
    await new Promise((resolve) => setTimeout(resolve, 50));
    const held = performance.now();
    while (performance.now() - held < 60) { /* hold the event loop */ }
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.ok(stats.loopDelay.count >= 2, 'samples were taken');
    const late = stats.loopDelay.buckets.slice(bucketOf(0.05)).reduce((a, b) => a + b, 0);
    assert.ok(late >= 1, 'the held loop is in the bucket holding 50 ms or one above');
  } finally {
    stats.stop();
  }
  const count = stats.loopDelay.count;
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.equal(stats.loopDelay.count, count);
});
