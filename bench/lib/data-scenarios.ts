// The data scenarios of issue 3: reading a user (D), durable writes (E), search (F), a snapshot while serving (H) and listing every user (I).

import { closeSync, fdatasyncSync, openSync, readdirSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { request as httpRequest } from 'node:http';
import type autocannon from 'autocannon';
import { basicAuth, runLoad, startLoad } from './load.js';
import { procStatusBytes, SyscallCounter } from './processes.js';
import { mb, ms, type ScenarioResult } from './report.js';
import { adminHeaders, call, httpRow, measure, metric, type ScenarioContext } from './scenario-kit.js';
import { describePauses, serverWindow } from './server-pauses.js';

// Targets, from the table.
const userReadRatioMin = 0.5;
const durableWritesPerSecMin = 10_000;
const searchP50MsMax = 1;
const searchP99MsMax = 5;
const searchSpeedupMin = 100;
const snapshotLoopDelayMsMax = 20;
const listRssGrowthBytesMax = 100 * 1e6;

// How the scenarios drive the server.
/** Scenario F waits (up to this long) for the server's background search index: a search answering under searchReadyMs. */
const searchReadyWaitMs = 120_000;
const searchReadyMs = 5;
const searchReadyPollMs = 100;
/** Scenario H's background load: light, so the event-loop delay measured is the snapshot's, not ours. */
const snapshotLoadRatePerSec = 200;
const snapshotLoadConnections = 4;
const rssSampleIntervalMs = 50;
const listRequestTimeoutMs = 300_000;
const userKey = Buffer.from('"username":');
const fsyncsMetric = 'authd_wal_fsyncs_total';
const searchLatencyConnections = 1;
/** Appends + fdatasyncs timed on the data directory's disk just before scenario E; one WAL record's size each. */
const fsyncProbeRuns = 200;
const fsyncProbeBytes = 256;

export async function userRead(ctx: ScenarioContext): Promise<ScenarioResult> {
  const f = ctx.fixtures;
  const first = await call(ctx, 'GET', `/users/user/${f.userIds[0]!}`);
  if (first.status !== 200) throw new Error(`D: GET /users/user answered ${first.status}: ${first.text.slice(0, 200)}`);
  const load = await measure(ctx, {
    connections: ctx.connections, headers: { authorization: basicAuth(f.adminEmail, f.password) },
    requests: f.userIds.map((id) => ({ method: 'GET', path: `/users/user/${id}` })),
  });
  const row = httpRow('D', `GET /users/user/{id}, Basic (cached admin) (repeat: ${f.userIds.length.toLocaleString('en-US')} ids rotated)`, load, 'GET', ctx, `>= ${userReadRatioMin} x ceiling`, null, '',
    { distinctUsers: f.userIds.length });
  return { ...row, ratioMin: userReadRatioMin };
}

function walBytes(dataDir: string): number {
  let total = 0;
  for (const name of readdirSync(dataDir)) if (name.startsWith('wal-') && name.endsWith('.log')) total += statSync(join(dataDir, name)).size;
  return total;
}

/**
 * What the disk under the data directory gives: append one record-sized block and fdatasync, repeatedly.
 * With FSYNC=always a group commit cannot finish faster than this, whatever the server does.
 */
function fdatasyncMs(dir: string): { p50: number; p99: number } {
  const path = join(dir, `fsync-probe-${process.pid}.tmp`);
  const fd = openSync(path, 'a');
  const block = Buffer.alloc(fsyncProbeBytes, 1);
  const times: number[] = [];
  try {
    for (let i = 0; i < fsyncProbeRuns; i++) {
      const t = performance.now();
      writeSync(fd, block);
      fdatasyncSync(fd);
      times.push(performance.now() - t);
    }
  } finally {
    closeSync(fd);
    unlinkSync(path);
  }
  times.sort((a, b) => a - b);
  return { p50: times[Math.floor(times.length / 2)]!, p99: times[Math.floor(times.length * 0.99)]! };
}

export async function durableWrites(ctx: ScenarioContext): Promise<ScenarioResult> {
  const f = ctx.fixtures;
  // Next to the data directory, not in it: the server owns that directory's contents.
  const disk = fdatasyncMs(join(ctx.dataDir, '..'));
  let n = 0;
  const tag = `${process.pid.toString(36)}${Date.now().toString(36)}`;
  const request: autocannon.Request = {
    method: 'POST', path: '/groups/group',
    // Group names are unique per Application: every request a new one.
    setupRequest: (req) => ({ ...req, body: JSON.stringify({ name: `bench-${tag}-${n++}`, application: f.writeApplication, description: 'written by scenario E' }) }),
  };
  const opts = { port: ctx.port, connections: ctx.connections, headers: adminHeaders(f), requests: [request] };
  await runLoad({ ...opts, durationS: ctx.warmS });
  const walBefore = walBytes(ctx.dataDir);
  const metricsBefore = await metric(ctx, fsyncsMetric);
  const perf = metricsBefore === undefined ? await SyscallCounter.start(ctx.pid, 'syscalls:sys_enter_fdatasync') : undefined;
  const load = await runLoad({ ...opts, durationS: ctx.measureS });
  const metricsAfter = metricsBefore === undefined ? undefined : await metric(ctx, fsyncsMetric);
  const perfCount = await perf?.stop();
  const fsyncs = metricsBefore !== undefined && metricsAfter !== undefined ? metricsAfter - metricsBefore : perfCount;
  const fsyncSource = metricsBefore !== undefined ? 'GET /metrics authd_wal_fsyncs_total' : perfCount !== undefined ? 'perf stat, syscalls:sys_enter_fdatasync' : 'unavailable';
  const walGrowth = walBytes(ctx.dataDir) - walBefore;
  const fsyncsPerSec = fsyncs === undefined ? undefined : fsyncs / load.durationS;
  const recordsPerFsync = fsyncs === undefined || fsyncs === 0 ? undefined : (load.reqPerSec * load.durationS) / fsyncs;
  const verdict = `${Math.round(load.reqPerSec).toLocaleString('en-US')}/s; ` +
    (fsyncsPerSec === undefined ? 'fsyncs/s not measurable here (no /metrics, no perf)' : `${Math.round(fsyncsPerSec).toLocaleString('en-US')} fsyncs/s, ${recordsPerFsync?.toFixed(1)} records per fsync`) +
    `; disk fdatasync p50 ${ms(disk.p50)} ms, p99 ${ms(disk.p99)} ms`;
  return httpRow('E', 'POST /groups/group, FSYNC=always', load, 'POST', ctx, `>= ${durableWritesPerSecMin.toLocaleString('en-US')}/s`,
    load.reqPerSec >= durableWritesPerSecMin, verdict,
    { fsyncs, fsyncsPerSec, recordsPerFsync, fsyncSource, diskFdatasyncP50Ms: disk.p50, diskFdatasyncP99Ms: disk.p99, walBytesPerSec: walGrowth / load.durationS, walBytesPerRecord: walGrowth / Math.max(1, load.reqPerSec * load.durationS) });
}

function countUsers(text: string): number {
  const parsed = JSON.parse(text) as { service?: { result?: { users?: unknown[] } } };
  return parsed.service?.result?.users?.length ?? -1;
}

/**
 * The server completes its search index in the background after start-up and answers with a scan meanwhile;
 * nothing tells a client when it is done, so wait until a search answers fast. Returns how long that took.
 */
export async function waitSearchReady(ctx: ScenarioContext, term: string): Promise<number> {
  const started = performance.now();
  while (performance.now() - started < searchReadyWaitMs) {
    const t = performance.now();
    await call(ctx, 'GET', `/users/search/${encodeURIComponent(term)}`);
    if (performance.now() - t < searchReadyMs) return performance.now() - started;
    await new Promise((r) => setTimeout(r, searchReadyPollMs));
  }
  return Number.NaN;
}

export async function search(ctx: ScenarioContext): Promise<ScenarioResult[]> {
  const f = ctx.fixtures;
  const terms = f.searchTerms;
  if (terms.length === 0) throw new Error('F: the seed found no search terms matching 1..100 users');
  const readyWaitMs = await waitSearchReady(ctx, terms[0]!.term);
  // Correctness first: a fast index that misses users is not a result.
  const wrong: string[] = [];
  for (const t of terms) {
    const res = await call(ctx, 'GET', `/users/search/${encodeURIComponent(t.term)}`);
    const found = res.status === 200 ? countUsers(res.text) : -1;
    if (found !== t.matches) wrong.push(`"${t.term}": ${found} users, expected ${t.matches} (status ${res.status})`);
  }
  const requests = terms.map((t) => ({ method: 'GET' as const, path: `/users/search/${encodeURIComponent(t.term)}` }));
  const headers = { authorization: basicAuth(f.adminEmail, f.password) };
  const load = await measure(ctx, { connections: ctx.connections, headers, requests });
  const latency = await measure(ctx, { connections: searchLatencyConnections, headers, requests });
  const speedup = ctx.micro.searchSpeedup;
  // The aggregate (all terms, one after another) decides; per term shows whether a few terms drag it down.
  const perTerm = ctx.micro.searchPerTerm.map((t) => ({ ...t, ratio: t.scanUs / t.indexUs })).sort((a, b) => a.ratio - b.ratio);
  const worst = perTerm[0];
  const medianRatio = perTerm.length === 0 ? Number.NaN : perTerm[Math.floor(perTerm.length / 2)]!.ratio;
  const spread = worst === undefined ? '' : ` (per term: median ${medianRatio.toFixed(0)}x, worst ${worst.ratio.toFixed(0)}x for "${worst.term}", ${(worst.indexUs / 1000).toFixed(2)} ms)`;
  const matches = terms.map((t) => t.matches);
  const termsNote = `${terms.length} terms, ${Math.min(...matches)}-${Math.max(...matches)} matches each`;
  const correctness = wrong.length === 0 ? '' : `; WRONG ANSWERS for ${wrong.length} terms`;
  const throughput = httpRow('F', `GET /users/search/{term}, ${ctx.connections} connections`, load, 'GET', ctx, 'info (latency row below)', null,
    `${termsNote}${correctness}`, { terms: terms.map((t) => t.term), wrong, readyWaitMs });
  const pass = wrong.length === 0 && latency.ok.p50Ms <= searchP50MsMax && latency.ok.p99Ms <= searchP99MsMax && speedup >= searchSpeedupMin;
  const latencyRow = httpRow('F', `GET /users/search/{term}, ${searchLatencyConnections} connection`, latency, 'GET', ctx,
    `p50 <= ${searchP50MsMax} ms, p99 <= ${searchP99MsMax} ms, >= ${searchSpeedupMin}x linear scan`, pass,
    `p50 ${ms(latency.ok.p50Ms)} / p99 ${ms(latency.ok.p99Ms)} ms; index ${speedup.toFixed(1)}x a linear scan over all terms${spread} (micro, ${f.users.toLocaleString('en-US')} users)${correctness}`,
    { connections: searchLatencyConnections, searchSpeedup: speedup, searchSpeedupMedianTerm: medianRatio, searchSlowestTerm: worst, wrong });
  return [throughput, latencyRow];
}

export async function snapshotWhileServing(ctx: ScenarioContext): Promise<ScenarioResult> {
  const f = ctx.fixtures;
  // A snapshot is only taken when something changed since the newest one.
  await call(ctx, 'POST', '/groups/group', { name: `bench-h-${Date.now().toString(36)}`, application: f.writeApplication });
  const background = startLoad({
    port: ctx.port, connections: snapshotLoadConnections, durationS: 3600, overallRate: snapshotLoadRatePerSec,
    headers: { authorization: basicAuth(f.adminEmail, f.password) }, requests: f.userIds.map((id) => ({ method: 'GET', path: `/users/user/${id}` })),
  });
  const window = await serverWindow(ctx);
  const started = performance.now();
  const res = await call(ctx, 'POST', '/admin/snapshot');
  const wallMs = performance.now() - started;
  const pauses = await window();
  background.stop();
  const load = await background.result;
  if (res.status !== 200) throw new Error(`H: POST /admin/snapshot answered ${res.status}: ${res.text.slice(0, 300)}`);
  const snap = (JSON.parse(res.text) as { service: { result: { snapshot: Record<string, unknown> } } }).service.result.snapshot;
  const delayMax = typeof snap['event_loop_delay_max_ms'] === 'number' ? snap['event_loop_delay_max_ms'] : Number.NaN;
  const taken = snap['taken'] === true;
  return {
    id: 'H', name: `snapshot of ${f.users.toLocaleString('en-US')} users while serving`, reqPerSec: load.reqPerSec, p50Ms: load.ok.p50Ms, p99Ms: load.ok.p99Ms,
    ratio: null, ceiling: null, target: `event-loop delay max <= ${snapshotLoopDelayMsMax} ms`, pass: taken && delayMax <= snapshotLoopDelayMsMax,
    verdict: taken
      ? `max ${ms(delayMax)} ms (p99 ${ms(snap['event_loop_delay_p99_ms'] as number)} ms) over ${(Number(snap['duration_ms']) / 1000).toFixed(1)} s, ${mb(Number(snap['bytes']))}; load ${snapshotLoadRatePerSec}/s p99 ${ms(load.ok.p99Ms)} ms` +
        (pauses === undefined ? '' : `; server meanwhile: ${describePauses(pauses)}`)
      : `no snapshot taken: ${String(snap['reason'])}`,
    extra: { snapshot: snap, wallMs, backgroundRatePerSec: snapshotLoadRatePerSec, backgroundMaxMs: load.ok.maxMs, statusCounts: load.statusCounts, serverDuringSnapshot: pauses },
  };
}

/** GET /users with a reader that keeps up; RSS sampled throughout. */
export async function listAll(ctx: ScenarioContext): Promise<ScenarioResult> {
  const f = ctx.fixtures;
  const rssBefore = procStatusBytes(ctx.pid, 'VmRSS');
  let rssMax = rssBefore;
  const sampler = setInterval(() => {
    const rss = procStatusBytes(ctx.pid, 'VmRSS');
    if (rss > rssMax) rssMax = rss;
  }, rssSampleIntervalMs);
  const started = performance.now();
  let firstByteMs = Number.NaN;
  let bytes = 0;
  let status = 0;
  let error: string | undefined;
  let usersSeen = 0;
  try {
    await new Promise<void>((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port: ctx.port, path: '/users', headers: { authorization: basicAuth(f.adminEmail, f.password) }, timeout: listRequestTimeoutMs }, (res) => {
        status = res.statusCode ?? 0;
        // Each rendered user carries exactly one "username" key: a cheap count without parsing a gigabyte.
        // The last bytes of each chunk are searched again with the next, one byte short of the key, so a
        // key split across two chunks is counted once and no key is counted twice.
        let carry: Buffer = Buffer.alloc(0);
        res.on('data', (chunk: Buffer) => {
          if (Number.isNaN(firstByteMs)) firstByteMs = performance.now() - started;
          bytes += chunk.length;
          const window = carry.length === 0 ? chunk : Buffer.concat([carry, chunk]);
          for (let at = window.indexOf(userKey); at !== -1; at = window.indexOf(userKey, at + 1)) usersSeen++;
          carry = window.subarray(Math.max(0, window.length - (userKey.length - 1)));
        });
        res.on('end', () => resolve());
        res.on('error', reject);
      });
      req.on('timeout', () => req.destroy(new Error(`no answer within ${listRequestTimeoutMs} ms`)));
      req.on('error', reject);
      req.end();
    });
  } catch (err) {
    error = err instanceof Error ? err.message : String(err);
  }
  const totalMs = performance.now() - started;
  clearInterval(sampler);
  const rssAfter = procStatusBytes(ctx.pid, 'VmRSS');
  rssMax = Math.max(rssMax, rssAfter);
  const growth = rssMax - rssBefore;
  // Streamed: the first byte arrives long before the last, rather than after the whole body was built.
  const streamed = firstByteMs < totalMs / 10;
  const pass = error === undefined && status === 200 && growth < listRssGrowthBytesMax && streamed;
  const verdict = error !== undefined
    ? `failed: ${error}`
    : `status ${status}, ${mb(bytes)}, ${usersSeen.toLocaleString('en-US')} users; RSS +${mb(growth)}; first byte ${ms(firstByteMs)} ms of ${ms(totalMs)} ms (${streamed ? 'streamed' : 'not streamed'})`;
  return {
    id: 'I', name: `GET /users on ${f.users.toLocaleString('en-US')} users`, reqPerSec: null, p50Ms: null, p99Ms: null, ratio: null, ceiling: null,
    target: `streamed, RSS growth < ${mb(listRssGrowthBytesMax)}`, pass, verdict,
    extra: { status, bytes, usersSeen, firstByteMs, totalMs, rssBefore, rssMax, rssAfter, rssGrowth: growth, streamed, error, rssSampleIntervalMs },
  };
}
