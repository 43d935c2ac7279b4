// What the benchmark reports: result types, number formatting, the tables, the summary of targets, and bench/results/latest-<front end>.json.

import { cpus, availableParallelism, release, totalmem } from 'node:os';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

export interface MicroResult {
  readonly name: string;
  readonly group: string;
  readonly opsPerSec: number;
  /** Mean time per operation. */
  readonly meanUs: number;
  /** Relative margin of error, percent. */
  readonly marginPct: number;
  readonly samples: number;
}

export interface MicroReport {
  readonly users: number;
  readonly loadMs: number;
  /** Completing the search index after the load (the server does this in the background). */
  readonly searchBuildMs: number;
  readonly results: MicroResult[];
  /** Mean time of a full linear scan over the same strings divided by the index's, over the same terms. */
  readonly searchSpeedup: number;
  readonly searchTerms: number;
  /** Each term alone: median index time and one scan, in µs. */
  readonly searchPerTerm: ReadonlyArray<{ term: string; kind: string; matches: number; indexUs: number; scanUs: number }>;
  readonly argon2VerifyMs: number;
  readonly argon2HashMs: number;
}

/** Above this share of one core, the load generator may be what set a row's pace, and the row says so. */
export const generatorBusyShareMax = 0.8;

/** CPU time over wall time of a measured run, 1 = one full core. */
export interface CpuShare {
  /** 'wrk', or 'autocannon' (in the benchmark's own process). */
  readonly generator: string;
  readonly generatorShare: number;
  readonly serverShare: number;
  /** True when measured over the whole scenario (its warm-up and set-up included) rather than the measured run alone. */
  readonly wholeScenario?: boolean;
}

/** "wrk 34% / server 98%", flagged when the generator may have set the pace. */
export function describeCpu(cpu: CpuShare): string {
  const pct = (share: number): string => (Number.isNaN(share) ? '?' : `${Math.round(share * 100)}%`);
  const busy = cpu.generatorShare > generatorBusyShareMax ? ` GENERATOR-BOUND (> ${generatorBusyShareMax * 100}% of a core)` : '';
  return `${cpu.generator} ${pct(cpu.generatorShare)} / server ${pct(cpu.serverShare)}${cpu.wholeScenario === true ? ' (whole scenario)' : ''}${busy}`;
}

export interface ScenarioResult {
  readonly id: string;
  readonly name: string;
  /** 2xx answers per second; null where the scenario is not a throughput run (G, H, I). */
  readonly reqPerSec: number | null;
  readonly p50Ms: number | null;
  readonly p99Ms: number | null;
  /** reqPerSec over the ceiling's (GET or POST, as `ceiling` says). */
  readonly ratio: number | null;
  readonly ceiling: 'GET' | 'POST' | null;
  /** The ceiling of that method measured just before this scenario, when one was (A, B, D): the ratio is against it. */
  readonly ceilingBesidePerSec?: number;
  /** When set, the verdict is the ratio: pass = ratio >= ratioMin, decided once the run's ceilings are all in (judgeRatios). */
  readonly ratioMin?: number;
  readonly target: string;
  /** The generator's and the server's CPU while it ran, where measured. */
  readonly cpu?: CpuShare;
  /** null: informational, no target. */
  readonly pass: boolean | null;
  /** The measured value the verdict rests on, in words (for the table). */
  readonly verdict: string;
  readonly extra: Record<string, unknown>;
}

export interface Machine {
  readonly cpus: number;
  readonly availableParallelism: number;
  readonly model: string;
  readonly memoryGiB: number;
  readonly node: string;
  readonly kernel: string;
  readonly date: string;
}

export type FrontEndKind = 'uws' | 'node';

/** The front end both authd and the ceiling ran on (the Node version is the machine's). */
export interface FrontEndUsed {
  readonly kind: FrontEndKind;
  /** The uWS build (package and version), for uws. */
  readonly build: string | undefined;
  /** Why this one: asked for, or what the server's FRONT_END=auto would pick here. */
  readonly reason: string;
}

export interface BenchReport {
  readonly mode: 'full' | 'quick';
  readonly users: number;
  readonly connections: number;
  readonly durationS: number;
  readonly totalS: number;
  readonly machine: Machine;
  readonly frontEnd: FrontEndUsed;
  readonly server: Record<string, string>;
  readonly ceilings: Record<string, unknown>;
  readonly scenarios: ScenarioResult[];
  readonly micro: MicroReport;
}

/**
 * Ratios against the ceiling measured beside the scenario where there is one, else against the mean of the
 * run's ceiling measurements (at its start and, in a full run, at its end). A ceiling measured minutes away
 * can meet other weather on a shared machine (in one run the first POST ceiling fell to 53,511/s against
 * 70,000-77,000/s undisturbed); one measured just before meets the scenario's, as nearly as can be. Rows
 * judged by their ratio get their verdict here; row.verdict then holds only what follows it.
 */
export function judgeRatios(rows: readonly ScenarioResult[], ceilingPerSec: Readonly<Record<'GET' | 'POST', number>>): ScenarioResult[] {
  return rows.map((row) => {
    if (row.ceiling === null || row.reqPerSec === null) return row;
    const ratio = row.reqPerSec / (row.ceilingBesidePerSec ?? ceilingPerSec[row.ceiling]);
    if (row.ratioMin === undefined) return { ...row, ratio };
    return { ...row, ratio, pass: ratio >= row.ratioMin, verdict: `${ratio.toFixed(2)} x${row.verdict}` };
  });
}

/** The ids of rows judged against a ceiling beside them, for the report's header: "A, B and D". */
export function besideList(rows: readonly ScenarioResult[]): string {
  const ids = rows.filter((r) => r.ceilingBesidePerSec !== undefined).map((r) => r.id);
  return ids.length <= 1 ? ids.join('') : `${ids.slice(0, -1).join(', ')} and ${ids[ids.length - 1]}`;
}

/** The front end in a report's words: "node:http", or "uWebSockets.js (<package> <version>)". */
export function frontEndName(frontEnd: FrontEndUsed): string {
  return frontEnd.kind === 'node' ? 'node:http' : `uWebSockets.js (${frontEnd.build ?? 'unknown build'})`;
}

export function machine(): Machine {
  const list = cpus();
  return {
    cpus: list.length, availableParallelism: availableParallelism(), model: list[0]?.model.trim() ?? 'unknown',
    memoryGiB: Math.round(totalmem() / 2 ** 30), node: process.version, kernel: release(), date: new Date().toISOString(),
  };
}

export function formatOps(ops: number): string {
  return ops >= 100 ? Math.round(ops).toLocaleString('en-US') : ops.toFixed(1);
}

export function formatUs(us: number): string {
  if (us >= 1000) return `${(us / 1000).toFixed(2)} ms`;
  if (us >= 1) return `${us.toFixed(2)} µs`;
  return `${(us * 1000).toFixed(0)} ns`;
}

export function compact(n: number): string {
  return n >= 1e6 ? `${+(n / 1e6).toFixed(2)}M` : n >= 1e3 ? `${+(n / 1e3).toFixed(1)}k` : String(n);
}

export function ms(value: number | null | undefined): string {
  if (value === null || value === undefined || Number.isNaN(value)) return '-';
  return value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1) : value.toFixed(2);
}

export function mb(bytes: number): string {
  return Number.isNaN(bytes) ? '?' : `${Math.round(bytes / 1e6).toLocaleString('en-US')} MB`;
}

function cell(value: string): string {
  return value.replace(/\|/g, '\\|');
}

/** One Markdown table, pasteable into docs/performance.md as it is. */
export function scenarioTable(scenarios: readonly ScenarioResult[]): string {
  const header = ['scenario', 'req/s', 'p50 ms', 'p99 ms', 'x ceiling', 'generator / server CPU', 'target', 'result'];
  const rows = scenarios.map((s) => [
    `${s.id}. ${s.name}`,
    s.reqPerSec === null ? '-' : formatOps(s.reqPerSec),
    ms(s.p50Ms),
    ms(s.p99Ms),
    s.ratio === null ? '-' : `${s.ratio.toFixed(2)} (${s.ceiling})`,
    s.cpu === undefined ? '-' : describeCpu(s.cpu),
    s.target,
    `${s.pass === null ? 'info' : s.pass ? 'MET' : 'MISSED'}: ${s.verdict}`,
  ]);
  return [header, header.map(() => '---'), ...rows].map((r) => `| ${r.map(cell).join(' | ')} |`).join('\n');
}

export function microTable(micro: MicroReport): string {
  const header = ['micro benchmark', 'ops/s', 'per op', '±%'];
  const rows = micro.results.map((r) => [`${r.group}: ${r.name}`, formatOps(r.opsPerSec), formatUs(r.meanUs), r.marginPct.toFixed(1)]);
  return [header, header.map(() => '---'), ...rows].map((r) => `| ${r.map(cell).join(' | ')} |`).join('\n');
}

/** A CpuShare read back from a report's JSON (NaN is written as null there), or undefined if it is not one. */
export function asCpuShare(value: unknown): CpuShare | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const v = value as Record<string, unknown>;
  if (typeof v['generator'] !== 'string') return undefined;
  const share = (n: unknown): number => (typeof n === 'number' ? n : Number.NaN);
  return { generator: v['generator'], generatorShare: share(v['generatorShare']), serverShare: share(v['serverShare']), ...(v['wholeScenario'] === true ? { wholeScenario: true } : {}) };
}

/** How a row came out: its target met or missed, no target (info), or no result at all (error). */
export function outcome(row: ScenarioResult): 'met' | 'missed' | 'info' | 'error' {
  if (row.extra['error'] !== undefined) return 'error';
  return row.pass === null ? 'info' : row.pass ? 'met' : 'missed';
}

/**
 * The latency bounds a target opens with, as "p50 <= 0.3 ms, p99 <= 2 ms" (F' and F): undefined when it
 * does not open with one. Only the opening list counts, so that "... /health p99 < 5 ms" (C) is not taken
 * for a bound on the row's own p99.
 */
export function latencyTargetsMs(target: string): { p50Ms?: number; p99Ms?: number } | undefined {
  const bounds: { p50Ms?: number; p99Ms?: number } = {};
  const bound = /^(?:,\s*)?p(50|99)\s*<=\s*(\d+(?:\.\d+)?)\s*ms\b/;
  let rest = target.trim();
  for (let m = bound.exec(rest); m !== null; m = bound.exec(rest)) {
    bounds[m[1] === '50' ? 'p50Ms' : 'p99Ms'] = Number(m[2]);
    rest = rest.slice(m[0].length);
  }
  return bounds.p50Ms === undefined && bounds.p99Ms === undefined ? undefined : bounds;
}

/** The verdict's first clause (up to a "; " outside parentheses), its asides dropped if it is still long. */
function verdictHead(verdict: string, charsMax: number): string {
  const text = verdict.replace(/^; /, '');
  let depth = 0;
  let end = text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '(') depth++;
    else if (c === ')') depth = Math.max(0, depth - 1);
    else if (c === ';' && depth === 0) { end = i; break; }
  }
  let head = text.slice(0, end);
  if (head.length > charsMax) head = head.replace(/\s*\([^()]*\)/g, '');
  return head.length <= charsMax ? head : `${head.slice(0, charsMax - 3)}...`;
}

const valueColumn = (value: string): string => `${value.padEnd(28)}  `;

/** One line per row with a target ("A'  0.23 x ceiling  (target >= 0.5)  MISSED by 0.27"), then "7 of 12 targets met". */
export function targetSummary(rows: readonly ScenarioResult[]): string[] {
  const judged = rows.filter((r) => r.pass !== null);
  const idWidth = Math.max(0, ...judged.map((r) => r.id.length)) + 2;
  const lines = judged.map((r) => {
    const id = r.id.padEnd(idWidth);
    if (outcome(r) === 'error') return `${id}ERROR: ${verdictHead(r.verdict.replace(/^ERROR: /, ''), 100)}`;
    const word = r.pass === true ? 'MET' : 'MISSED';
    const latency = latencyTargetsMs(r.target);
    if (r.ratioMin !== undefined && r.ratio !== null) {
      // A miss that rounds to 0.00 would read as none.
      const short = r.ratioMin - r.ratio;
      const by = r.pass === true ? '' : ` by ${short.toFixed(short < 0.005 ? 3 : 2)}`;
      const floor = r.extra['floor'] as { ratio?: number } | undefined;
      const floorSaid = floor?.ratio === undefined ? '' : `; the floor ${floor.ratio.toFixed(2)}`;
      return `${id}${valueColumn(`${r.ratio.toFixed(2)} x ceiling`)}(target >= ${r.ratioMin})  ${word}${by}${floorSaid}`;
    }
    if (latency !== undefined) {
      const over = ([['p50', r.p50Ms, latency.p50Ms], ['p99', r.p99Ms, latency.p99Ms]] as const)
        .filter(([, value, max]) => value !== null && max !== undefined && value > max)
        .map(([name, value, max]) => `${name} by ${ms(value! - max!)} ms`);
      const value = `p50 ${ms(r.p50Ms)} ms, p99 ${ms(r.p99Ms)} ms`;
      return `${id}${valueColumn(value)}(target ${r.target})  ${word}${r.pass === true || over.length === 0 ? '' : ` ${over.join(', ')}`}`;
    }
    return `${id}${valueColumn(verdictHead(r.verdict, 60))}(target ${r.target})  ${word}`;
  });
  const met = judged.filter((r) => r.pass === true).length;
  return [...lines, `${met} of ${judged.length} targets met`];
}

export function writeReport(path: string, report: BenchReport): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `${JSON.stringify(report, null, 2)}\n`);
}
