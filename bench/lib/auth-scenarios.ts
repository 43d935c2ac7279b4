// The authentication scenarios of issue 3: the bare pipeline (0), API keys (A), repeated (B) and distinct (C) usernames, and shedding past the hash queue (C+).

import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { randomBytes } from 'node:crypto';
import { argon2id, argon2Verify } from 'hash-wasm';
import type autocannon from 'autocannon';
import { ApiKeySecrets } from '../../src/auth/apikey-secrets.js';
import {
  argon2HashBytes, argon2IterationsDefault, argon2MemoryKiBDefault, argon2ParallelismDefault, argon2SaltBytes, hashQueueMax, hashRetryAfterS,
} from '../../src/config/limits.js';
import { passwordHashesDistinct, type Fixtures } from './dataset.js';
import { runLoad, startLoad } from './load.js';
import { ms, type ScenarioResult } from './report.js';
import {
  adminHeaders, call, endUserAddress, httpRow, measure, median, metric, unexpected, waitHashQueueIdle, type ScenarioContext,
} from './scenario-kit.js';
import { describePauses, serverWindow } from './server-pauses.js';

// Targets, from the issue's table.
const apikeyRatioMin = 0.6;
const repeatedUsernameRatioMin = 0.5;
const argon2CapacityRatioMin = 0.9;
const healthP99MsMax = 5;

// How the scenarios drive the server.
/** GET /health while argon2 runs: a gentle probe, so it measures the event loop rather than competing with the workers. */
const healthProbeRatePerSec = 100;
const healthProbeConnections = 1;
/** Past the queue: enough connections that hashQueueMax waiting jobs plus one per worker cannot hold them all. */
const overflowConnectionsExtra = 150;
/**
 * Each overflow connection sends at most one request per Retry-After period, as a client honouring it
 * would. Without that, every shed connection re-sends at once and the run measures a 503 storm
 * saturating the event loop (thousands a second), not whether shedding itself is immediate.
 */
const overflowConnectionRatePerSec = 1 / hashRetryAfterS;
/**
 * C+'s first second is not timed: autocannon opens its 406 connections and sends their first requests
 * all at once, and on 2 cores (one hashing) that burst of the generator's own making, not any queue in
 * the server, is what the slowest answers then wait for. Counts (shed, Retry-After) include it.
 */
const overflowSettleS = 1;
/** argon2id verifies timed just before scenario C (the median is used), after one untimed run that compiles the wasm. */
const argon2ProbeRuns = 5;
/** argon2id runs per thread when timing what the hash workers can do together. */
const argon2ParallelRunsEach = 6;
/** The longest wait for the hash queue to empty between runs: hashQueueMax jobs at a few dozen a second. */
const queueDrainWaitMs = 60_000;

export async function health(ctx: ScenarioContext): Promise<ScenarioResult> {
  const load = await measure(ctx, { connections: ctx.connections, requests: [{ method: 'GET', path: '/health' }] });
  return httpRow('0', 'GET /health (no credentials)', load, 'GET', ctx, '-', null, 'the pipeline without auth or data');
}

export function apikeyBodies(f: Fixtures, secrets: ApiKeySecrets): string[] {
  return f.apikeys.map((k, i) => JSON.stringify({
    type: 'apikey', application: k.application, credential: { username: k.keyId, password: secrets.secretFor(k.keyId, k.nonce) },
    ip_address: endUserAddress(i),
  }));
}

async function expectAuthenticated(ctx: ScenarioContext, body: string, what: string): Promise<void> {
  const res = await call(ctx, 'POST', '/authenticate', JSON.parse(body));
  if (res.status !== 200 || !res.text.includes('"authenticated":true')) {
    throw new Error(`${what}: the sanity request was not authenticated (${res.status} ${res.text.slice(0, 200)})`);
  }
}

export async function apikeyAuthenticate(ctx: ScenarioContext): Promise<ScenarioResult> {
  const secrets = ApiKeySecrets.load({ keyFile: ctx.keyFile });
  const bodies = apikeyBodies(ctx.fixtures, secrets);
  await expectAuthenticated(ctx, bodies[0]!, 'A');
  const load = await measure(ctx, {
    connections: ctx.connections, headers: adminHeaders(ctx.fixtures),
    requests: bodies.map((body) => ({ method: 'POST', path: '/authenticate', body })),
  });
  const row = httpRow('A', `POST /authenticate, apikey (repeat: ${bodies.length.toLocaleString('en-US')} bodies rotated)`, load, 'POST', ctx, `>= ${apikeyRatioMin} x ceiling`, null, '', { apikeys: bodies.length });
  return { ...row, ratioMin: apikeyRatioMin };
}

export async function repeatedUsername(ctx: ScenarioContext): Promise<ScenarioResult> {
  const f = ctx.fixtures;
  const bodies = f.repeatedCredentials.map((c, i) => JSON.stringify({
    type: 'username', application: c.application, credential: { username: c.email, password: f.password }, ip_address: endUserAddress(i),
  }));
  // Each credential's first check runs argon2 and fills the verify cache; the scenario is about the repeats.
  for (const body of bodies) await expectAuthenticated(ctx, body, 'B');
  const load = await measure(ctx, {
    connections: ctx.connections, headers: adminHeaders(f),
    requests: bodies.map((body) => ({ method: 'POST', path: '/authenticate', body })),
  });
  const row = httpRow('B', `POST /authenticate, username (repeat: ${bodies.length} bodies rotated)`, load, 'POST', ctx, `>= ${repeatedUsernameRatioMin} x ceiling`, null, '',
    { credentials: bodies.length });
  return { ...row, ratioMin: repeatedUsernameRatioMin };
}

/**
 * Hands out a different User per request across all connections. Once the seeded Users run out it
 * continues with unknown usernames, which cost the server the same argon2 work (a dummy verify) and are never cached.
 */
function distinctUsernames(f: Fixtures, start: number): { request: autocannon.Request; used: () => { known: number; unknown: number } } {
  let next = start;
  let unknown = 0;
  const request: autocannon.Request = {
    method: 'POST', path: '/authenticate',
    setupRequest: (req) => {
      const n = next++;
      const c = f.distinctCredentials[n];
      const body = c === undefined
        ? { type: 'username', application: f.baseApplication, credential: { username: `nobody-${unknown}@bench.example`, password: `${f.password}-${unknown++}` }, ip_address: endUserAddress(n) }
        : { type: 'username', application: c.application, credential: { username: c.email, password: f.password }, ip_address: endUserAddress(n) };
      return { ...req, body: JSON.stringify(body) };
    },
  };
  return { request, used: () => ({ known: Math.min(next, f.distinctCredentials.length) - start, unknown }) };
}

/**
 * One argon2id verify at the service's default parameters, timed here while the server idles: the same
 * hash-wasm code its workers run. Timed now rather than taken from the micro suite minutes earlier, so
 * that C's capacity estimate and C itself see the same machine.
 */
async function argon2VerifyMs(password: string): Promise<number> {
  const phc = await argon2id({
    password, salt: randomBytes(argon2SaltBytes), memorySize: argon2MemoryKiBDefault, iterations: argon2IterationsDefault,
    parallelism: argon2ParallelismDefault, hashLength: argon2HashBytes, outputType: 'encoded',
  });
  const times: number[] = [];
  for (let i = 0; i < argon2ProbeRuns; i++) {
    const t = performance.now();
    await argon2Verify({ password, hash: phc });
    times.push(performance.now() - t);
  }
  return median(times);
}

/** The worker threads' code: argon2id at the service's defaults, runsEach times, then the elapsed time. CommonJS, for eval. */
const parallelArgon2Source = `
const { parentPort, workerData } = require('node:worker_threads');
const { argon2id } = require(workerData.hashWasm);
(async () => {
  const started = performance.now();
  for (let i = 0; i < workerData.runsEach; i++) {
    await argon2id({ password: 'probe-' + i, salt: new Uint8Array(workerData.saltBytes).fill(i), memorySize: workerData.memoryKiB,
      iterations: workerData.iterations, parallelism: workerData.parallelism, hashLength: workerData.hashBytes, outputType: 'binary' });
  }
  parentPort.postMessage(performance.now() - started);
})();`;

/**
 * argon2id runs per second with `workers` threads hashing at once, as the server's pool does. The target's
 * "workers / one verify" assumes they scale linearly; argon2 is memory-bound, and on some machines (two
 * vCPUs sharing a core or its memory bandwidth) two at once are each twice as slow. This shows which.
 */
async function argon2ParallelPerSec(workers: number): Promise<number> {
  const hashWasm = createRequire(import.meta.url).resolve('hash-wasm');
  const workerData = {
    hashWasm, runsEach: argon2ParallelRunsEach, saltBytes: argon2SaltBytes, memoryKiB: argon2MemoryKiBDefault,
    iterations: argon2IterationsDefault, parallelism: argon2ParallelismDefault, hashBytes: argon2HashBytes,
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: workers }, () => new Promise<void>((resolve, reject) => {
    const worker = new Worker(parallelArgon2Source, { eval: true, workerData });
    worker.once('message', () => { void worker.terminate(); resolve(); });
    worker.once('error', reject);
  })));
  return (workers * argon2ParallelRunsEach) / ((performance.now() - started) / 1000);
}

export async function distinctUsername(ctx: ScenarioContext): Promise<ScenarioResult[]> {
  const f = ctx.fixtures;
  // The server's own pool size (HASH_WORKERS, by default one thread fewer than the CPUs), not this machine's CPU count.
  const workers = (await metric(ctx, 'authd_hash_workers')) ?? availableParallelism();
  const verifyMs = await argon2VerifyMs(f.password);
  const capacity = workers / (verifyMs / 1000);
  const parallelPerSec = await argon2ParallelPerSec(workers);
  const stream = distinctUsernames(f, 0);
  const headers = adminHeaders(f);
  await runLoad({ port: ctx.port, connections: ctx.connections, durationS: ctx.warmS, headers, requests: [stream.request] });
  const drainedAfterWarmMs = await waitHashQueueIdle(ctx, queueDrainWaitMs, (ctx.connections / capacity) * 1000);
  const probe = startLoad({ port: ctx.port, connections: healthProbeConnections, durationS: ctx.argon2MeasureS, overallRate: healthProbeRatePerSec, requests: [{ method: 'GET', path: '/health' }] });
  const load = await runLoad({ port: ctx.port, connections: ctx.connections, durationS: ctx.argon2MeasureS, headers, requests: [stream.request] });
  const healthLoad = await probe.result;
  const capacityRatio = load.reqPerSec / capacity;
  const pass = capacityRatio >= argon2CapacityRatioMin && healthLoad.ok.p99Ms < healthP99MsMax;
  // Beyond this many in flight, two concurrent requests can share a hash and the server's single-flight merges them.
  const shared = ctx.connections >= passwordHashesDistinct ? `; WARNING: ${ctx.connections} connections >= ${passwordHashesDistinct} distinct hashes, some argon2 runs may be shared` : '';
  const rowC = httpRow('C', 'POST /authenticate, username, a different user each time', load, 'POST', ctx,
    `>= ${argon2CapacityRatioMin} x workers/verify; /health p99 < ${healthP99MsMax} ms`, pass,
    `${capacityRatio.toFixed(2)} x (${workers} workers / ${verifyMs.toFixed(1)} ms = ${capacity.toFixed(1)}/s; ` +
      `${workers} threads hashing at once measured ${parallelPerSec.toFixed(1)}/s, ${(load.reqPerSec / parallelPerSec).toFixed(2)} x that); /health p99 ${ms(healthLoad.ok.p99Ms)} ms${shared}`,
    { hashWorkers: workers, argon2VerifyMs: verifyMs, argon2VerifyMsMicro: ctx.micro.argon2VerifyMs, capacityPerSec: capacity, argon2ParallelPerSec: parallelPerSec, capacityRatio, healthP50Ms: healthLoad.ok.p50Ms, healthP99Ms: healthLoad.ok.p99Ms, healthMaxMs: healthLoad.ok.maxMs, usersUsed: stream.used(), drainedAfterWarmMs });
  await waitHashQueueIdle(ctx, queueDrainWaitMs, (ctx.connections / capacity) * 1000);
  const rowOverflow = await overflow(ctx, verifyMs);
  // The client has gone, its requests with it, yet their queued argon2 jobs still run: evidence for cancelling
  // the jobs of aborted requests. (C runs last, so nothing waits for them here.)
  rowOverflow.extra['hashQueueDepthAfterClientsLeft'] = await metric(ctx, 'authd_hash_queue_depth');
  return [rowC, rowOverflow];
}

/** Past hashQueueMax, the server must shed at once: 503 with Retry-After, answered faster than one argon2 verify. */
async function overflow(ctx: ScenarioContext, verifyMs: number): Promise<ScenarioResult> {
  const f = ctx.fixtures;
  const connections = hashQueueMax + overflowConnectionsExtra;
  let shed = 0;
  let withRetryAfter = 0;
  let unknown = 0;
  const request: autocannon.Request = {
    method: 'POST', path: '/authenticate',
    // Unknown usernames with distinct passwords: the same argon2 work, never cached or shared, however many requests get through.
    setupRequest: (req) => {
      const n = unknown++;
      const body = { type: 'username', application: f.baseApplication, credential: { username: `overflow-${n}@bench.example`, password: `${f.password}-${n}` }, ip_address: endUserAddress(n) };
      return { ...req, body: JSON.stringify(body) };
    },
    onResponse: (status, _body, _context, headers) => {
      if (status !== 503) return;
      shed++;
      if (Object.keys(headers ?? {}).some((k) => k.toLowerCase() === 'retry-after')) withRetryAfter++;
    },
  };
  const probe = startLoad({ port: ctx.port, connections: healthProbeConnections, durationS: ctx.argon2MeasureS, overallRate: healthProbeRatePerSec, requests: [{ method: 'GET', path: '/health' }] });
  const window = await serverWindow(ctx);
  const load = await runLoad({
    port: ctx.port, connections, durationS: ctx.argon2MeasureS, connectionRate: overflowConnectionRatePerSec, headers: adminHeaders(f), requests: [request],
    settleS: overflowSettleS,
  });
  const pauses = await window();
  const healthLoad = await probe.result;
  // `shed` counts the whole run, the untimed first second too; load.durationS is the timed part only.
  const shedPerSec = shed / (load.durationS + overflowSettleS);
  const onlyShed = Object.keys(load.statusCounts).every((code) => code === '503' || code.startsWith('2'));
  const pass = shed > 0 && withRetryAfter === shed && load.failed.p99Ms < verifyMs && onlyShed;
  const verdict = shed === 0
    ? `no 503 at ${connections} connections (hashQueueMax ${hashQueueMax})`
    : `${shed.toLocaleString('en-US')} shed (${Math.round(shedPerSec).toLocaleString('en-US')}/s), ${withRetryAfter === shed ? 'all' : `${withRetryAfter} of them`} with Retry-After, ` +
      `503 p99 ${ms(load.failed.p99Ms)} ms (timed after the first ${overflowSettleS} s, while ${connections} connections open at once); ` +
      `accepted p99 ${ms(load.ok.p99Ms)} ms; /health p99 ${ms(healthLoad.ok.p99Ms)} ms` +
      (pauses === undefined ? '' : `; server meanwhile: ${describePauses(pauses)}`);
  // Anything but 200 and 503 is a fault of its own, and would also blur the 503 latencies above.
  const others = unexpected({ ...load, statusCounts: Object.fromEntries(Object.entries(load.statusCounts).filter(([code]) => code !== '503')) });
  return {
    id: 'C+', name: `C past the queue (${connections} connections, ${overflowConnectionRatePerSec}/s each)`, reqPerSec: load.reqPerSec, p50Ms: load.ok.p50Ms, p99Ms: load.ok.p99Ms,
    ratio: null, ceiling: null, target: `503 + Retry-After at once (faster than one verify, ${verifyMs.toFixed(0)} ms)`, pass, verdict: verdict + others,
    extra: {
      connections, hashQueueMax, shed, withRetryAfter, shedP50Ms: load.failed.p50Ms, shedP99Ms: load.failed.p99Ms, shedMaxMs: load.failed.maxMs,
      acceptedMaxMs: load.ok.maxMs, statusCounts: load.statusCounts, healthP99Ms: healthLoad.ok.p99Ms, healthMaxMs: healthLoad.ok.maxMs, serverDuringRun: pauses,
    },
  };
}
