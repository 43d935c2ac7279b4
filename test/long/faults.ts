// The long cluster fault runs: `npm run test:faults -- --runs 50` runs that many Jepsen-style runs (test/helpers/cluster-faults.ts), one seed each, and prints per-run and total figures.
//
// Options: --runs N (default 50), --seed S (the first run's seed; run k uses S + k), --duration S (seconds of
// operations per run, default 45), --clients N (default 8), --timeout MS (per request, default 4000),
// --keep DIR (a run with a violation writes its history and every process's log to DIR/seed-S).
// AUTHD_TEST_MAIN_JS=/path/to/dist/src/main.js runs the nodes from another build. Exit code 1 when any run broke an
// invariant or could not be checked.

import { numberOption, stringOption } from '../helpers/fault-args.js';
import { faultCounts, formatRunReport, readinessLieMs, runFaultRun, violationsByInvariant, type FaultRunReport } from '../helpers/cluster-faults.js';
import { countOperations, invariants } from '../helpers/cluster-history.js';
import { natsServerPath } from '../helpers/nats-cluster.js';

const runs = numberOption('runs', 50);
const firstSeed = numberOption('seed', Date.now() % 1_000_000);
const durationS = numberOption('duration', 45);
const clients = numberOption('clients', 8);
const requestTimeoutMs = numberOption('timeout', 4_000);
const keepDir = stringOption('keep');

function add(into: Map<string, number>, from: ReadonlyMap<string, number>): void {
  for (const [key, n] of from) into.set(key, (into.get(key) ?? 0) + n);
}

function formatCounts(counts: ReadonlyMap<string, number>): string {
  return [...counts].sort(([a], [b]) => a.localeCompare(b)).map(([key, n]) => `${key} ${n}`).join(', ');
}

if (natsServerPath() === undefined) {
  console.error('nats-server is not installed: the fault runs need it (Debian/Ubuntu: apt-get install nats-server)');
  process.exit(1);
}
console.log(`cluster fault runs: ${runs} runs from seed ${firstSeed}, ${durationS} s of operations each, ${clients} clients; ` +
  `authd from ${process.env['AUTHD_TEST_MAIN_JS'] ?? 'this build'}`);

const started = performance.now();
const operations = new Map<string, number>();
const faults = new Map<string, number>();
const violations = new Map<string, number>(invariants.map((inv, i) => [`${i + 1}.${inv}`, 0]));
const violatingSeeds: number[] = [];
const erroredSeeds: number[] = [];
let operationCount = 0;
let faultCount = 0;
let conflicts = 0;
let writesRefused = 0;
let readinessLies = 0;
let staleRefusals = 0;
let sharedEmailWarnings = 0;
let problems = 0;

for (let k = 0; k < runs; k++) {
  const seed = firstSeed + k;
  let report: FaultRunReport;
  try {
    report = await runFaultRun({ seed, durationMs: durationS * 1000, clients, requestTimeoutMs, log: (line) => console.log(line), ...(keepDir === undefined ? {} : { keepDir }) });
  } catch (error) {
    // A run that could not start or restart its processes says nothing about the invariants: counted apart.
    console.log(`seed ${seed}: the run failed: ${(error as Error).stack ?? String(error)}`);
    erroredSeeds.push(seed);
    continue;
  }
  console.log(`run ${k + 1}/${runs} ${formatRunReport(report)}`);
  operationCount += report.operations.length;
  faultCount += report.faults.length;
  add(operations, countOperations(report.operations));
  add(faults, faultCounts(report.faults));
  for (const [inv, n] of violationsByInvariant(report)) violations.set(`${invariants.indexOf(inv) + 1}.${inv}`, violations.get(`${invariants.indexOf(inv) + 1}.${inv}`)! + n);
  if (report.check.violations.length > 0 || report.problems.length > 0) violatingSeeds.push(seed);
  conflicts += report.conflicts;
  writesRefused += report.writesRefused;
  readinessLies += report.readiness.lies.length;
  staleRefusals += report.check.staleRefusals.length;
  sharedEmailWarnings += report.sharedEmailWarnings;
  problems += report.problems.length;
}

console.log([
  '',
  `== cluster fault runs (seeds ${firstSeed}..${firstSeed + runs - 1}, ${Math.round((performance.now() - started) / 1000)} s) ==`,
  `runs: ${runs - erroredSeeds.length} checked${erroredSeeds.length === 0 ? '' : `, ${erroredSeeds.length} failed to run (seeds ${erroredSeeds.join(', ')})`}`,
  `operations: ${operationCount} (${formatCounts(operations)})`,
  `faults: ${faultCount} (${formatCounts(faults)})`,
  `write conflicts ${conflicts}, writes refused ${writesRefused} (nodes' /metrics)`,
  `readiness lies (ready for ${readinessLieMs} ms or more while behind): ${readinessLies}`,
  `stale refusals: ${staleRefusals}; logged "Users sharing one email key": ${sharedEmailWarnings}; runs that could not be checked fully: ${problems}`,
  `violations by invariant: ${formatCounts(violations)}`,
  `runs with a violation: ${violatingSeeds.length}${violatingSeeds.length === 0 ? '' : ` (seeds ${violatingSeeds.join(', ')})`}`,
].join('\n'));
process.exit(violatingSeeds.length > 0 || erroredSeeds.length > 0 ? 1 : 0);
