// The long crash runs: `npm run test:crash -- --cycles 1000 --seeds 20000` runs the real-server crash loop for that many cycles and the power-loss model check for that many seeds, and prints the figures.
//
// Options: --cycles N (default 1000), --seeds N (power-loss seeds, default 20000), --seed S (first seed),
// --only crash|power (run one of the two). Exit code 1 on the first broken promise, with its seed.

import { emptyCrashTotals, formatCrashTotals, runCrashLoop } from '../helpers/fault-crash-loop.js';
import { emptyTotals, formatTotals, runPowerLossCase } from '../helpers/fault-power-loss.js';
import { numberOption, stringOption } from '../helpers/fault-args.js';


const only = stringOption('only');
const cycles = numberOption('cycles', 1000);
const seeds = numberOption('seeds', 20000);
const seed = numberOption('seed', Date.now() % 1_000_000);

async function powerLoss(): Promise<void> {
  const totals = emptyTotals();
  const started = performance.now();
  for (let s = seed; s < seed + seeds; s++) {
    await runPowerLossCase(s, totals);
    if ((s - seed + 1) % 5000 === 0) console.log(`power loss: ${s - seed + 1}/${seeds} seeds, ${totals.lostAcknowledged} acknowledged records lost`);
  }
  console.log(`\n== power loss (seeds ${seed}..${seed + seeds - 1}, ${Math.round((performance.now() - started) / 1000)} s) ==\n${formatTotals(totals)}`);
}

async function crashLoop(): Promise<void> {
  const totals = emptyCrashTotals();
  const started = performance.now();
  await runCrashLoop({
    cycles, seed, pointShare: 0.5,
    progress: (line) => { if (totals.cycles % 50 === 0) console.log(line); },
  }, totals);
  console.log(`\n== crash loop (seed ${seed}, ${Math.round((performance.now() - started) / 1000)} s) ==\n${formatCrashTotals(totals)}`);
}

try {
  if (only !== 'crash' && seeds > 0) await powerLoss();
  if (only !== 'power' && cycles > 0) await crashLoop();
} catch (err) {
  console.error(`FAILED: ${(err as Error).message}`);
  process.exit(1);
}
