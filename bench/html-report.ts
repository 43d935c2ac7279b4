// `node dist/bench/html-report.js <report.json> [page.html]`: the HTML page and the summary of targets of a saved benchmark report, without running it again.

import { readFileSync } from 'node:fs';
import { htmlPathBeside, writeHtmlReport } from './lib/html-report.js';
import { targetSummary, type BenchReport } from './lib/report.js';

const usage = 'usage: node dist/bench/html-report.js bench/results/latest-<front end>.json [page.html]  (default: the .html beside the .json)';

/** The fields the page reads without looking: a file that lacks one is not a report of `npm run bench`. */
const requiredFields = ['mode', 'users', 'connections', 'machine', 'frontEnd', 'server', 'ceilings', 'scenarios', 'micro'];

function main(argv: readonly string[]): number {
  const [jsonPath, htmlPath, ...more] = argv;
  if (jsonPath === undefined || jsonPath === '--help' || jsonPath === '-h' || more.length > 0) {
    process.stderr.write(`${usage}\n`);
    return jsonPath === '--help' || jsonPath === '-h' ? 0 : 2;
  }
  const report = JSON.parse(readFileSync(jsonPath, 'utf8')) as BenchReport;
  const missing = requiredFields.filter((f) => (report as unknown as Record<string, unknown>)[f] === undefined);
  if (missing.length > 0 || !Array.isArray(report.scenarios)) {
    process.stderr.write(`${jsonPath} is not a benchmark report (no ${missing.join(', ') || 'scenarios list'})\n${usage}\n`);
    return 1;
  }
  const out = htmlPath ?? htmlPathBeside(jsonPath);
  writeHtmlReport(out, report);
  process.stdout.write(`${[...targetSummary(report.scenarios), `page: ${out}`].join('\n')}\n`);
  return 0;
}

try {
  process.exitCode = main(process.argv.slice(2));
} catch (err) {
  process.stderr.write(`html-report: ${err instanceof Error ? err.message : String(err)}\n${usage}\n`);
  process.exitCode = 1;
}
