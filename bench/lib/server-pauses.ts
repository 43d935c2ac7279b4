// What the server did over a window of a run: its pauses (collections by kind, event-loop delay, from the difference of two scrapes of its cumulative GET /metrics histograms) and the CPU it and the load generator used.

import { procCpuSeconds } from './processes.js';
import { call, type ScenarioContext } from './scenario-kit.js';

/** One histogram's change over the window: count, seconds, and per upper bound ('+Inf' last) how many fell at or under it but over the bound before. */
export interface HistogramDelta {
  readonly count: number;
  readonly seconds: number;
  readonly perBucket: ReadonlyArray<{ readonly le: string; readonly n: number }>;
}

export interface ServerPauses {
  readonly gc: Readonly<Record<string, HistogramDelta>>;
  readonly loopDelay: HistogramDelta;
  /** Percent of one core over the window: the server process, its main thread (the event loop), and this process (the load generator). */
  readonly cpu?: { readonly serverPct: number; readonly eventLoopPct: number; readonly generatorPct: number };
}

type Histogram = { count: number; seconds: number; cumulative: Array<{ le: string; n: number }> };

/** Every histogram series of `name` in an exposition, by its labels other than le ('' for none). */
function histograms(text: string, name: string): Map<string, Histogram> {
  const out = new Map<string, Histogram>();
  const series = (labels: string): Histogram => {
    let h = out.get(labels);
    if (h === undefined) out.set(labels, h = { count: 0, seconds: 0, cumulative: [] });
    return h;
  };
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}_`)) continue;
    const m = /^[a-z_]+_(bucket|sum|count)(?:\{([^}]*)\})? (\S+)$/.exec(line);
    if (m === null) continue;
    const value = Number(m[3]);
    const labels = (m[2] ?? '').split(',').filter((l) => l !== '' && !l.startsWith('le=')).join(',');
    if (m[1] === 'bucket') series(labels).cumulative.push({ le: /le="([^"]+)"/.exec(m[2] ?? '')?.[1] ?? '', n: value });
    else if (m[1] === 'sum') series(labels).seconds = value;
    else series(labels).count = value;
  }
  return out;
}

/** Counts per bucket (not cumulative), in the exposition's order. */
function countsOf(h: Histogram | undefined): number[] {
  return h === undefined ? [] : h.cumulative.map(({ n }, i) => n - (i === 0 ? 0 : h.cumulative[i - 1]!.n));
}

function delta(before: Histogram | undefined, after: Histogram): HistogramDelta {
  const was = countsOf(before);
  const now = countsOf(after);
  return {
    count: after.count - (before?.count ?? 0), seconds: after.seconds - (before?.seconds ?? 0),
    perBucket: after.cumulative.map(({ le }, i) => ({ le, n: now[i]! - (was[i] ?? 0) })),
  };
}

/** GET /metrics as text, or undefined when the server gives none. */
export async function scrapeMetrics(ctx: ScenarioContext): Promise<string | undefined> {
  try {
    const res = await call(ctx, 'GET', '/metrics');
    return res.status === 200 ? res.text : undefined;
  } catch {
    return undefined;
  }
}

/** What happened between two expositions of GET /metrics; undefined when the second has no event-loop histogram. */
export function pausesBetween(first: string, second: string): ServerPauses | undefined {
  const loopAfter = histograms(second, 'authd_event_loop_delay_seconds').get('');
  if (loopAfter === undefined) return undefined;
  const gcBefore = histograms(first, 'nodejs_gc_duration_seconds');
  const gc: Record<string, HistogramDelta> = {};
  for (const [labels, h] of histograms(second, 'nodejs_gc_duration_seconds')) gc[/kind="([^"]+)"/.exec(labels)?.[1] ?? labels] = delta(gcBefore.get(labels), h);
  return { gc, loopDelay: delta(histograms(first, 'authd_event_loop_delay_seconds').get(''), loopAfter) };
}

/**
 * One route's requests between two expositions, by the server's own time for each (from its arrival to its answer
 * handed to the socket): a pause between two requests is in none of them. Undefined when the route has no series.
 */
export function routeTimesBetween(first: string, second: string, method: string, route: string): HistogramDelta | undefined {
  const name = 'authd_http_request_duration_seconds';
  const labels = `method="${method}",route="${route}"`;
  const after = histograms(second, name).get(labels);
  return after === undefined ? undefined : delta(histograms(first, name).get(labels), after);
}

/** Scrapes now; the function it returns scrapes again and gives what happened in between (undefined where the server has no such metrics). */
export async function serverWindow(ctx: ScenarioContext): Promise<() => Promise<ServerPauses | undefined>> {
  const first = await scrapeMetrics(ctx);
  const startedAt = performance.now();
  const server = procCpuSeconds(ctx.pid);
  const eventLoop = procCpuSeconds(ctx.pid, ctx.pid);
  const generator = process.cpuUsage();
  return async () => {
    const seconds = (performance.now() - startedAt) / 1000;
    const pct = (cpuSeconds: number): number => Math.round((cpuSeconds / seconds) * 100);
    const { user, system } = process.cpuUsage(generator);
    const cpu = {
      serverPct: pct(procCpuSeconds(ctx.pid) - server), eventLoopPct: pct(procCpuSeconds(ctx.pid, ctx.pid) - eventLoop), generatorPct: pct((user + system) / 1e6),
    };
    const second = await scrapeMetrics(ctx);
    const pauses = first === undefined || second === undefined ? undefined : pausesBetween(first, second);
    return pauses === undefined ? undefined : { ...pauses, cpu: Number.isNaN(cpu.serverPct) ? undefined : cpu };
  };
}

/** "(50, 100] ms": the range of the highest bucket that counted anything, or undefined if none did. */
function longest(h: HistogramDelta): string | undefined {
  for (let i = h.perBucket.length - 1; i >= 0; i--) {
    if (h.perBucket[i]!.n <= 0) continue;
    const low = i === 0 ? '0' : String(Number(h.perBucket[i - 1]!.le) * 1000);
    const high = h.perBucket[i]!.le === '+Inf' ? 'inf' : String(Number(h.perBucket[i]!.le) * 1000);
    return `(${low}, ${high}] ms`;
  }
  return undefined;
}

/** How many counted over `seconds` (a bucket bound). */
export function over(h: HistogramDelta, seconds: number): number {
  const from = h.perBucket.findIndex(({ le }) => le !== '+Inf' && Number(le) >= seconds);
  return from === -1 ? 0 : h.perBucket.slice(from + 1).reduce((sum, { n }) => sum + n, 0);
}

/** One line: event-loop stalls over 20 ms and the longest, then collections by kind with their time and longest pause. */
export function describePauses(p: ServerPauses): string {
  const stalls = over(p.loopDelay, 0.02);
  const loop = stalls === 0 ? 'event loop never late by more than 20 ms' : `event loop late by more than 20 ms ${stalls} times, the longest ${longest(p.loopDelay)}`;
  const gcs = ['major', 'minor', 'incremental']
    .map((kind) => [kind, p.gc[kind]] as const)
    .filter(([, h]) => h !== undefined && h.count > 0)
    .map(([kind, h]) => `${h!.count} ${kind} (${Math.round(h!.seconds * 1000)} ms, longest ${longest(h!)})`);
  const cpu = p.cpu === undefined ? '' : `; CPU (% of a core): server ${p.cpu.serverPct} (event loop ${p.cpu.eventLoopPct}), load generator ${p.cpu.generatorPct}`;
  return `${loop}; GC: ${gcs.length === 0 ? 'none' : gcs.join(', ')}${cpu}`;
}
