// Property-based fuzzing (fast-check) of every endpoint, in-process: hostile requests never get a 5xx, never touch a built-in prototype, never change anything when refused, write one audit line per mutation, and every accepted write reads back the same after a recovery.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { HashPool } from '../src/auth/hash-pool.js';
import { emptyFuzzTotals, formatFuzzTotals, fuzzInProcess } from './helpers/fault-fuzz-runner.js';

/** `npm run test:fuzz -- --cases N` runs many more. */
const cases = 2500;
let pool: HashPool;

before(() => {
  pool = new HashPool({ workers: 2, queueMax: 256, argon2: { memoryKiB: 1024, iterations: 1, parallelism: 1 } });
});

after(async () => {
  await pool.close();
});

test(`${cases} hostile requests over every endpoint, in-process: no 5xx, no prototype pollution, no partial change, one audit line per mutation, every accepted write survives a recovery`, async (t) => {
  const seed = Number(process.env['FUZZ_SEED'] ?? 1337);
  t.diagnostic(`fast-check seed ${seed} (FUZZ_SEED=${seed} replays it)`);
  const totals = emptyFuzzTotals();
  await fuzzInProcess({ cases, seed, pool }, totals);
  t.diagnostic(formatFuzzTotals(totals));
  assert.equal(totals.cases, cases);
  assert.ok(totals.acceptedWrites > 100, 'the fuzz got past validation often enough to write');
  assert.ok((totals.byStatus.get(400) ?? 0) > 100, 'and was refused often enough');
});
