// The crash loop in short: the real server under concurrent mutations of every kind, killed at random moments and at the kill points, restarted and checked against a model, cycle after cycle.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { emptyCrashTotals, formatCrashTotals, runCrashLoop } from './helpers/fault-crash-loop.js';

/** `npm run test:crash -- --cycles 1000` runs the long version. */
const cycles = 12;

test(`${cycles} crash cycles: every acknowledged mutation survives, nothing unacknowledged and not in flight appears, nothing is applied twice`, async (t) => {
  const seed = Number(process.env['CRASH_SEED'] ?? 4242);
  t.diagnostic(`seed ${seed} (CRASH_SEED=${seed} replays the same choices; the kill moments depend on timing)`);
  const totals = emptyCrashTotals();
  await runCrashLoop({ cycles, seed, pointShare: 0.5 }, totals);
  for (const line of formatCrashTotals(totals).split('\n')) t.diagnostic(line);
  assert.equal(totals.cycles, cycles);
  assert.equal(totals.lostAcknowledged, 0);
  assert.ok(totals.acknowledged > cycles * 10, 'each cycle got real work done');
});
