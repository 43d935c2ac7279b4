// What every HTTP scenario shares: the context it runs in, requests with the admin's credentials, warm-up then measure, and the shape of a table row.

import type { Fixtures } from './dataset.js';
import { basicAuth, runLoad, type LoadResult } from './load.js';
import type { MicroReport, ScenarioResult } from './report.js';

export interface ScenarioContext {
  readonly port: number;
  readonly pid: number;
  readonly dataDir: string;
  readonly keyFile: string;
  readonly fixtures: Fixtures;
  readonly micro: MicroReport;
  readonly connections: number;
  readonly warmS: number;
  readonly measureS: number;
  /** Scenario C runs longer: at ~40 answers a second, a short run has too few samples for a p99. */
  readonly argon2MeasureS: number;
  readonly ceilingGet: LoadResult;
  readonly ceilingPost: LoadResult;
}

export const json = { 'content-type': 'application/json' };

/**
 * The end user's address, as a client application passes it in `ip_address`. Given on every
 * POST /authenticate so that the server's per-address brute-force counters see many end users, as in
 * production, instead of charging every attempt to the load generator's own 127.0.0.1 (which is also
 * the admin caller's address: one address for everything would lock the benchmark's own admin out).
 */
export function endUserAddress(n: number): string {
  return `10.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
}

export function adminHeaders(f: Fixtures): Record<string, string> {
  return { authorization: basicAuth(f.adminEmail, f.password), ...json };
}

export async function call(ctx: ScenarioContext, method: string, path: string, body?: unknown): Promise<{ status: number; text: string; headers: Headers }> {
  const res = await fetch(`http://127.0.0.1:${ctx.port}${path}`, {
    method, headers: adminHeaders(ctx.fixtures), body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, text: await res.text(), headers: res.headers };
}

/** Warm-up (JIT, caches, connections), then the measured run with the same settings. */
export async function measure(ctx: ScenarioContext, opts: Omit<Parameters<typeof runLoad>[0], 'durationS' | 'port'>, durationS = ctx.measureS): Promise<LoadResult> {
  await runLoad({ ...opts, port: ctx.port, durationS: ctx.warmS });
  return runLoad({ ...opts, port: ctx.port, durationS });
}

export function unexpected(load: LoadResult): string {
  const bad = Object.entries(load.statusCounts).filter(([code]) => !code.startsWith('2'));
  const parts = bad.map(([code, n]) => `${n}x${code}`);
  if (load.errors > 0) parts.push(`${load.errors} errors`);
  if (load.timeouts > 0) parts.push(`${load.timeouts} timeouts`);
  return parts.length === 0 ? '' : `; unexpected: ${parts.join(', ')}`;
}

export function httpRow(
  id: string, name: string, load: LoadResult, ceiling: 'GET' | 'POST', ctx: ScenarioContext,
  target: string, pass: boolean | null, verdict: string, extra: Record<string, unknown> = {},
): ScenarioResult {
  const base = ceiling === 'GET' ? ctx.ceilingGet : ctx.ceilingPost;
  return {
    id, name, reqPerSec: load.reqPerSec, p50Ms: load.ok.p50Ms, p99Ms: load.ok.p99Ms,
    ratio: load.reqPerSec / base.reqPerSec, ceiling, target, pass, verdict: verdict + unexpected(load),
    extra: { connections: ctx.connections, durationS: load.durationS, statusCounts: load.statusCounts, errors: load.errors, timeouts: load.timeouts, ...extra },
  };
}

/** A value of the server's GET /metrics, when it offers one. */
export async function metric(ctx: ScenarioContext, name: string): Promise<number | undefined> {
  try {
    const res = await call(ctx, 'GET', '/metrics');
    if (res.status !== 200) return undefined;
    const m = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\d+(?:\\.\\d+)?(?:e[+-]?\\d+)?)`, 'm').exec(res.text);
    return m === null ? undefined : Number(m[1]);
  } catch {
    return undefined;
  }
}

const hashQueuePollMs = 200;

/**
 * When a run ends, the requests still in flight are dropped by the client but not by the server: their
 * argon2 jobs stay queued and run anyway. Waits until the hash queue is empty (by GET /metrics, else for
 * fallbackMs), so the next run does not start behind the last one's leftovers. Returns how long it waited.
 */
export async function waitHashQueueIdle(ctx: ScenarioContext, maxMs: number, fallbackMs: number): Promise<number> {
  const started = performance.now();
  for (;;) {
    const depth = await metric(ctx, 'authd_hash_queue_depth');
    if (depth === undefined) {
      await new Promise((r) => setTimeout(r, fallbackMs));
      break;
    }
    if (depth === 0 || performance.now() - started > maxMs) break;
    await new Promise((r) => setTimeout(r, hashQueuePollMs));
  }
  return performance.now() - started;
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}
