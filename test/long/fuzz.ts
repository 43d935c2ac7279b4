// The long fuzz runs: `npm run test:fuzz -- --cases 100000 --http-cases 20000` runs the in-process fuzz of every endpoint (all invariants, restarts every 250 requests) and the real-server fuzz over raw sockets, and prints the figures.
//
// Options: --cases N (in-process requests, default 50000), --http-cases N (real-server requests, default
// 5000; 0 skips it), --seed S. Exit code 1 on the first broken invariant, with its seed.

import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { HashPool } from '../../src/auth/hash-pool.js';
import { emptyFuzzTotals, formatFuzzTotals, fuzzInProcess } from '../helpers/fault-fuzz-runner.js';
import { numberOption } from '../helpers/fault-args.js';


const cases = numberOption('cases', 50_000);
const httpCases = numberOption('http-cases', 5_000);
const seed = numberOption('seed', Date.now() % 1_000_000);
/** In-process cases per fast-check run; each run is a fresh service and seed, so state stays small. */
const casesPerRun = 5_000;

const pool = new HashPool({ workers: 2, queueMax: 256, argon2: { memoryKiB: 1024, iterations: 1, parallelism: 1 } });
try {
  const totals = emptyFuzzTotals();
  const started = performance.now();
  for (let run = 0; totals.cases < cases; run++) {
    await fuzzInProcess({ cases: Math.min(casesPerRun, cases - totals.cases), seed: seed + run, pool }, totals);
    console.log(`in-process: ${totals.cases}/${cases} requests`);
  }
  console.log(`\n== in-process fuzz (seeds ${seed}.., ${Math.round((performance.now() - started) / 1000)} s) ==\n${formatFuzzTotals(totals)}`);
} catch (err) {
  console.error(`FAILED: ${(err as Error).message}`);
  process.exit(1);
} finally {
  await pool.close();
}

if (httpCases > 0) {
  const testFile = fileURLToPath(new URL('../fuzz-http.test.js', import.meta.url));
  const started = performance.now();
  const run = spawnSync(process.execPath, ['--test', testFile], {
    env: { ...process.env, FUZZ_HTTP_CASES: String(httpCases), FUZZ_SEED: String(seed) }, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024,
  });
  const diagnostics = run.stdout.split('\n').filter((l) => l.startsWith('# ') && !/^# (tests|suites|pass|fail|cancelled|skipped|todo|duration_ms) /.test(l));
  console.log(`\n== real-server fuzz (${Math.round((performance.now() - started) / 1000)} s) ==\n${diagnostics.map((l) => l.slice(2)).join('\n')}`);
  if (run.status !== 0) {
    console.error(`FAILED:\n${run.stdout.split('\n').filter((l) => l.includes('error') || l.includes('not ok')).join('\n')}`);
    process.exit(1);
  }
}
