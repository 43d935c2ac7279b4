// `npm run bench [-- --cluster (bench/cluster.ts)] [-- --tokens (bench/tokens.ts)] [-- --quick] [--front-end uws|node] [--connections N] [--users N] [--only A,C,...] [--work-dir DIR] [--keep]`: seeds a dataset, runs the micro benchmarks and HTTP scenarios A-I and A', B', D', F', M on one front end, prints one table and a summary of targets, writes bench/results/latest-<front end>.json and .html.
//
// Everything runs in child processes: the seed, the micro suite (it loads the whole dataset), the real
// server (dist/src/main.js) and the ceiling server; this process only generates load and measures.
// On a 2-core machine the load generator takes a core from the server, which is why every HTTP number
// is also given as a ratio to the ceiling, a bare server of the same front end (bench/ceiling-server.ts:
// uWebSockets.js or node:http) measured the same way.

import { mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ApiKeySecrets } from '../src/auth/apikey-secrets.js';
import { defaultPublicUrl } from '../src/config/config.js';
import { loadUws } from '../src/http/uws-loader.js';
import type { Fixtures } from './lib/dataset.js';
import { runLoad, type LoadResult } from './lib/load.js';
import {
  distPath, freePort, procCpuSeconds, procStatusBytes, removeOnExit, runToCompletion, startChild, waitHealthy, type Child,
} from './lib/processes.js';
import {
  besideList, describeCpu, frontEndName, judgeRatios, machine, mb, microTable, ms, scenarioTable, targetSummary, writeReport,
  type BenchReport, type FrontEndKind, type FrontEndUsed, type MicroReport, type ScenarioResult,
} from './lib/report.js';
import { htmlPathBeside, writeHtmlReport } from './lib/html-report.js';
import * as auth from './lib/auth-scenarios.js';
import * as data from './lib/data-scenarios.js';
import * as real from './lib/real-traffic.js';
import { autocannonGenerator, ensureWrk, wrkGenerator } from './lib/wrk.js';
import { adminHeaders, type ScenarioContext } from './lib/scenario-kit.js';
import { describePauses, serverWindow } from './lib/server-pauses.js';

const fullUsers = 1_000_000;
/** --quick: a tenth of the data and short runs, to finish in under two minutes. */
const quickUsers = 100_000;
const connectionsDefault = 50;
const fullTimes = { warmS: 2, measureS: 10, argon2MeasureS: 15 };
const quickTimes = { warmS: 1, measureS: 3, argon2MeasureS: 5 };
/** Scenario G's targets: spawn to /health OK, and RSS once the background indexes are complete (the steady state). */
const startupMsMax = 3000;
const steadyRssBytesMax = 900e6;
/** G polls the server's authd_search_index_building gauge this often until it reads 0. */
const indexPollMs = 100;
/** Past this after /health OK, G gives up waiting for the search index and reports the RSS it has. */
const indexWaitMsMax = 180_000;
/** A /metrics request of G's that takes longer is abandoned, and asked again. */
const metricsRequestTimeoutMs = 2000;
/** A million users take a while to load on a slow machine; far past the target, but a result rather than a hang. */
const startTimeoutMs = 180_000;
/** Above this one-minute load average before we start, something else is using the CPU and the numbers will show it. */
const busyLoadAverage = 0.5;

/** One file per front end, so that a run on one does not replace the other's results. */
const resultsPath = (frontEnd: FrontEndKind): string => fileURLToPath(new URL(`../../bench/results/latest-${frontEnd}.json`, import.meta.url));
/** The page of a partial run (--only), which leaves latest-<front end>.json and its page as they were. */
const partialPagePath = (frontEnd: FrontEndKind): string => fileURLToPath(new URL(`../../bench/results/partial-${frontEnd}.html`, import.meta.url));

const usage = 'npm run bench -- [--quick] [--front-end uws|node] [--connections N] [--users N] [--only A,C,...] [--work-dir DIR] [--keep]' +
  ` (the production-like rows are A', B', D', F' and M: quote them, --only "A',B',D',F',M");` +
  ' npm run bench -- --tokens [--quick] [--users N] [--keep] [--connections N]';

interface RunArgs {
  quick: boolean;
  /** --front-end: undefined for the one the server's FRONT_END=auto would pick on this host. */
  frontEnd: FrontEndKind | undefined;
  connections: number;
  users: number;
  workDir: string;
  keep: boolean;
  /** --only: the scenario ids to run (G included only if listed); empty for all. A partial run does not replace the results file. */
  only: string[];
}

function parseArgs(argv: readonly string[]): RunArgs {
  const args: RunArgs = { quick: false, frontEnd: undefined, connections: connectionsDefault, users: 0, workDir: tmpdir(), keep: false, only: [] };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const eq = arg.indexOf('=');
    const name = eq === -1 ? arg : arg.slice(0, eq);
    if (name === '--quick') { args.quick = true; continue; }
    if (name === '--keep') { args.keep = true; continue; }
    const value = eq === -1 ? argv[++i] : arg.slice(eq + 1);
    if (value === undefined) throw new Error(`${name} needs a value`);
    switch (name) {
      case '--connections': args.connections = Number(value); break;
      case '--users': args.users = Number(value.replace(/_/g, '')); break;
      case '--work-dir': args.workDir = value; break;
      case '--only': args.only = value.split(',').map((id) => id.trim().toUpperCase()).filter((id) => id !== ''); break;
      case '--front-end':
        if (value !== 'uws' && value !== 'node') throw new Error(`--front-end must be uws or node, not ${value}`);
        args.frontEnd = value;
        break;
      default: throw new Error(`unknown argument ${arg}; usage: ${usage}`);
    }
  }
  if (args.users === 0) args.users = args.quick ? quickUsers : fullUsers;
  if (!Number.isSafeInteger(args.connections) || args.connections < 1) throw new Error('--connections must be a positive integer');
  if (!Number.isSafeInteger(args.users) || args.users < 1) throw new Error('--users must be a positive integer');
  return args;
}

const log = (line: string): void => { process.stdout.write(`bench: ${line}\n`); };
const perSec = (n: number): string => `${Math.round(n).toLocaleString('en-US')}/s`;

interface Dirs {
  readonly root: string;
  readonly dataDir: string;
  readonly keyFile: string;
  readonly fixturesFile: string;
  readonly microFile: string;
}

/**
 * The front end as the server would choose it: with FRONT_END=auto, uWS if a traceable build loads; asked by
 * name, any build that loads (as FRONT_END=uws allows), or a stop here rather than after the seed.
 */
function chooseFrontEnd(asked: FrontEndKind | undefined): FrontEndUsed {
  if (asked === 'node') return { kind: 'node', build: undefined, reason: '--front-end node' };
  const load = loadUws({ untraceable: asked === 'uws' });
  if (load.loaded) return { kind: 'uws', build: load.build, reason: asked === 'uws' ? '--front-end uws' : 'a uWebSockets.js build loads on this host' };
  if (asked === 'uws') throw new Error(`--front-end uws, but ${load.reason}`);
  return { kind: 'node', build: undefined, reason: load.reason };
}

/** The settings every authd of the run gets; anything not listed is the service's default. */
function serverEnv(dirs: Dirs, frontEnd: FrontEndKind, port: number, logLevel: string): Record<string, string> {
  return {
    PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dirs.dataDir, KEY_FILE: dirs.keyFile, LOG_LEVEL: logLevel, FSYNC: 'always',
    // Named, never auto: the ceiling runs on the same front end, so the two must not choose apart.
    FRONT_END: frontEnd,
    // Snapshots only when scenario H asks: an automatic one during E (100,000 records by default) would measure the snapshot, not E.
    SNAPSHOT_EVERY_RECORDS: '1000000000',
    // A full run outlasts the cache's hour, and B' warms 10,000 Users over some 13 minutes, past the 10-minute idle time:
    // an expiry mid-scenario would measure argon2 stampedes, not the steady state of a warm cache (docs/performance.md).
    VERIFY_CACHE_TTL_MS: '86400000',
    VERIFY_CACHE_IDLE_MS: '86400000',
  };
}

async function startAuthd(dirs: Dirs, frontEnd: FrontEndKind, logLevel: string): Promise<{ server: Child; port: number; spawnToHealthyMs: number; recovered: Promise<number | undefined> }> {
  const port = await freePort();
  const server = startChild('authd', distPath('src/main.js'), [], serverEnv(dirs, frontEnd, port, logLevel), join(dirs.root, 'authd.log'));
  // Registered before the line can appear; only an info-level start logs it, and only then is the log read.
  const recovered = logLevel !== 'info'
    ? Promise.resolve(undefined)
    : server.logged((l) => l['msg'] === 'state recovered').then((l) => (typeof l['ms'] === 'number' ? l['ms'] : undefined));
  const healthyAt = await waitHealthy(server, port, startTimeoutMs);
  return { server, port, spawnToHealthyMs: healthyAt - server.spawnedAt, recovered };
}

/** How long to wait for the "state recovered" line once /health answers: it was written before listening, but the log file is read every 25 ms. */
const recoveredLineWaitMs = 2000;

/** The server's authd_search_index_building gauge (1 while the search index is built), or undefined if /metrics did not give it. */
async function searchIndexBuilding(port: number, headers: Record<string, string>): Promise<number | undefined> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/metrics`, { headers, signal: AbortSignal.timeout(metricsRequestTimeoutMs) });
    const m = /^authd_search_index_building (\d+)/m.exec(await res.text());
    return res.status === 200 && m !== null ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * G: spawn to /health OK and the server's own recovery time (logged at info, so this start logs at info);
 * RSS when /health answers, and again once the memberships and search postings a load leaves to the
 * background are complete (the gauge reads 0: the membership walk comes first), which is the steady state
 * the memory target is about; peak RSS (VmHWM) over both.
 */
async function startup(dirs: Dirs, frontEnd: FrontEndKind, users: number): Promise<ScenarioResult> {
  const fixtures = JSON.parse(readFileSync(dirs.fixturesFile, 'utf8')) as Fixtures;
  const { server, port, spawnToHealthyMs, recovered } = await startAuthd(dirs, frontEnd, 'info');
  const healthyAt = performance.now();
  const rssAtHealthy = procStatusBytes(server.pid, 'VmRSS');
  let indexedAfterMs: number | undefined;
  while (performance.now() - healthyAt < indexWaitMsMax && server.alive) {
    if (await searchIndexBuilding(port, adminHeaders(fixtures)) === 0) {
      indexedAfterMs = performance.now() - healthyAt;
      break;
    }
    await new Promise((r) => setTimeout(r, indexPollMs));
  }
  const rssIndexed = procStatusBytes(server.pid, 'VmRSS');
  const hwm = procStatusBytes(server.pid, 'VmHWM');
  const recoveredMs = await Promise.race([recovered, new Promise<undefined>((r) => setTimeout(() => r(undefined), recoveredLineWaitMs))]);
  await server.stop();
  const pass = spawnToHealthyMs <= startupMsMax && indexedAfterMs !== undefined && rssIndexed <= steadyRssBytesMax;
  const indexed = indexedAfterMs === undefined ? `search index not complete ${indexWaitMsMax / 1000} s after /health OK` : `search index complete ${(indexedAfterMs / 1000).toFixed(1)} s after /health OK`;
  return {
    id: 'G', name: `start-up of ${users.toLocaleString('en-US')} users`, reqPerSec: null, p50Ms: null, p99Ms: null, ratio: null, ceiling: null,
    target: `<= ${startupMsMax / 1000} s, RSS <= ${mb(steadyRssBytesMax)} once indexed`, pass,
    verdict: `${(spawnToHealthyMs / 1000).toFixed(2)} s spawn to /health OK (state recovered in ${recoveredMs === undefined ? '?' : (recoveredMs / 1000).toFixed(2)} s), ` +
      `RSS ${mb(rssAtHealthy)}; ${indexed}, RSS ${mb(rssIndexed)}; peak ${mb(hwm)}`,
    extra: { spawnToHealthyMs, stateRecoveredMs: recoveredMs, rssAtHealthyBytes: rssAtHealthy, indexedAfterHealthyMs: indexedAfterMs, rssIndexedBytes: rssIndexed, peakRssBytes: hwm },
  };
}

type Method = 'GET' | 'POST';

interface CeilingServer {
  /** Warm-up, then one measured run of GET /health or of POST /authenticate with scenario A's body. */
  measure(method: Method): Promise<LoadResult>;
  stop(): Promise<void>;
}

/** The bare server of the run's front end, up for the whole run: measured at its start and end, and beside each scenario whose target is a ratio. */
async function startCeiling(frontEnd: FrontEndUsed, connections: number, times: typeof fullTimes, postBody: string): Promise<CeilingServer> {
  const port = await freePort();
  const ceiling = startChild('ceiling', distPath('bench/ceiling-server.js'), [], { PORT: String(port), HOST: '127.0.0.1', CEILING_FRONT_END: frontEnd.kind });
  const listening = ceiling.logged((l) => l['msg'] === 'listening');
  await waitHealthy(ceiling, port, startTimeoutMs);
  // The ceiling loads its uWS build as authd does; were they ever to differ, the ratios would compare two builds.
  const build = (await listening)['build'];
  if (build !== frontEnd.build) throw new Error(`the ceiling runs ${String(build)}, authd ${String(frontEnd.build)}`);
  const requests: Record<Method, Parameters<typeof runLoad>[0]['requests']> = {
    GET: [{ method: 'GET', path: '/health' }],
    POST: [{ method: 'POST', path: '/authenticate', body: postBody, headers: { 'content-type': 'application/json' } }],
  };
  return {
    async measure(method) {
      await runLoad({ port, connections, durationS: times.warmS, requests: requests[method] });
      return runLoad({ port, connections, durationS: times.measureS, requests: requests[method] });
    },
    async stop() {
      await ceiling.stop();
    },
  };
}

/** The production-like rows (real-traffic.ts): driven by wrk from request files, each beside this ceiling fed the same file. */
const realTrafficIds = ["A'", "B'", "D'", "F'", 'M'];

/** A second bare server of the run's front end that parses every body as JSON and answers what it is told (the rows above). */
async function startJsonCeiling(frontEnd: FrontEndUsed): Promise<{ child: Child; port: number }> {
  const port = await freePort();
  const child = startChild('ceiling-json', distPath('bench/ceiling-server.js'), [], { PORT: String(port), HOST: '127.0.0.1', CEILING_FRONT_END: frontEnd.kind, CEILING_READ_JSON: '1' });
  const listening = child.logged((l) => l['msg'] === 'listening');
  await waitHealthy(child, port, startTimeoutMs);
  const build = (await listening)['build'];
  if (build !== frontEnd.build) throw new Error(`the JSON ceiling runs ${String(build)}, authd ${String(frontEnd.build)}`);
  return { child, port };
}

/**
 * The floor beside A', B' and D' (bench/floor-server.ts): on uWS only, like the sketch; otherwise, or when it does not
 * start, why there is none (the rows then say so).
 */
async function startFloor(dirs: Dirs, fixtures: Fixtures, authdPort: number, frontEnd: FrontEndUsed): Promise<{ child: Child; port: number } | string> {
  if (frontEnd.kind !== 'uws') return 'the floor is a uWS sketch';
  const port = await freePort();
  const child = startChild('floor', distPath('bench/floor-server.js'), [], {
    PORT: String(port), DATA_DIR: dirs.dataDir, KEY_FILE: dirs.keyFile,
    FLOOR_AUTHORIZATION: adminHeaders(fixtures).authorization!, PUBLIC_URL: defaultPublicUrl('127.0.0.1', authdPort),
  });
  try {
    await waitHealthy(child, port, startTimeoutMs);
  } catch (err) {
    await child.stop();
    return err instanceof Error ? err.message.split('\n')[0]! : String(err);
  }
  return { child, port };
}

/** The header's word on which ratios use which ceiling. */
function besideNote(meanUsed: boolean, beside: string): string {
  if (beside === '') return meanUsed ? ')' : '';
  return meanUsed ? `, but ${beside} each against a ceiling measured just before it)` : ` (${beside} each against a ceiling measured just before it)`;
}

async function measureCeilings(ceiling: CeilingServer): Promise<{ get: LoadResult; post: LoadResult }> {
  const get = await ceiling.measure('GET');
  return { get, post: await ceiling.measure('POST') };
}

function errorRow(id: string, name: string, err: unknown): ScenarioResult {
  const message = err instanceof Error ? err.message : String(err);
  return { id, name, reqPerSec: null, p50Ms: null, p99Ms: null, ratio: null, ceiling: null, target: '-', pass: false, verdict: `ERROR: ${message.split('\n')[0]}`, extra: { error: message } };
}

async function main(): Promise<void> {
  // --cluster: cluster mode against the embedded log, a bench of its own (bench/cluster.ts runs on import).
  if (process.argv.includes('--cluster')) {
    await import('./cluster.js');
    return;
  }
  // --tokens: what issue 26's access tokens cost to issue and to verify, a bench of its own (bench/tokens.ts runs on import).
  if (process.argv.includes('--tokens')) {
    await import('./tokens.js');
    return;
  }
  const args = parseArgs(process.argv.slice(2));
  const frontEnd = chooseFrontEnd(args.frontEnd);
  const times = args.quick ? quickTimes : fullTimes;
  const started = performance.now();
  const mode = args.quick ? 'quick' : 'full';
  const load1 = loadavg()[0]!;
  log(`${mode} run: ${args.users.toLocaleString('en-US')} users, ${args.connections} connections, ${times.measureS} s per scenario (C: ${times.argon2MeasureS} s) after ${times.warmS} s of warm-up`);
  log(`front end: ${frontEndName(frontEnd)} on Node ${process.versions.node} (${frontEnd.reason})`);
  if (load1 > busyLoadAverage) log(`warning: load average ${load1.toFixed(2)} before starting; something else is using the CPU and will lower the numbers`);

  const root = mkdtempSync(join(args.workDir, 'authd-bench-'));
  if (args.keep) log(`keeping ${root}`);
  else removeOnExit(root);
  const dirs: Dirs = {
    root, dataDir: join(root, 'data'), keyFile: join(root, 'secrets', 'server.key'),
    fixturesFile: join(root, 'fixtures.json'), microFile: join(root, 'micro.json'),
  };

  await runToCompletion('seed', distPath('bench/seed.js'), [
    '--users', String(args.users), '--data-dir', dirs.dataDir, '--key-file', dirs.keyFile, '--fixtures', dirs.fixturesFile,
  ], (line) => log(line));
  const fixtures = JSON.parse(readFileSync(dirs.fixturesFile, 'utf8')) as Fixtures;

  await runToCompletion('micro', distPath('bench/micro.js'), [
    '--data-dir', dirs.dataDir, '--fixtures', dirs.fixturesFile, '--key-file', dirs.keyFile, '--out', dirs.microFile, ...(args.quick ? ['--quick'] : []),
  ], (line) => { if (line.startsWith('micro:')) log(line); });
  const micro = JSON.parse(readFileSync(dirs.microFile, 'utf8')) as MicroReport;

  const rows: ScenarioResult[] = [];
  const wanted = (id: string): boolean => args.only.length === 0 || args.only.includes(id);
  if (wanted('G')) {
    log('G: start-up');
    try {
      rows.push(await startup(dirs, frontEnd.kind, fixtures.users));
    } catch (err) {
      rows.push(errorRow('G', 'start-up', err));
    }
    log(`G: ${rows[rows.length - 1]!.verdict}`);
  }

  log(`ceiling: a bare server on ${frontEndName(frontEnd)}, GET then POST`);
  const postBody = auth.apikeyBodies(fixtures, ApiKeySecrets.load({ keyFile: dirs.keyFile }))[0]!;
  const ceiling = await startCeiling(frontEnd, args.connections, times, postBody);
  const ceilings = await measureCeilings(ceiling);
  log(`ceiling: GET ${perSec(ceilings.get.reqPerSec)} (p99 ${ms(ceilings.get.ok.p99Ms)} ms), POST ${perSec(ceilings.post.reqPerSec)} (p99 ${ms(ceilings.post.ok.p99Ms)} ms)`);

  const { server, port, spawnToHealthyMs } = await startAuthd(dirs, frontEnd.kind, 'warn');
  log(`authd up in ${(spawnToHealthyMs / 1000).toFixed(2)} s (pid ${server.pid}, port ${port})`);
  const ctx: ScenarioContext = {
    port, pid: server.pid, dataDir: dirs.dataDir, keyFile: dirs.keyFile, fixtures, micro, connections: args.connections,
    warmS: times.warmS, measureS: times.measureS, argon2MeasureS: times.argon2MeasureS, ceilingGet: ceilings.get, ceilingPost: ceilings.post,
  };
  let jsonCeiling: { child: Child; port: number } | undefined;
  let floor: { child: Child; port: number } | undefined;
  let rt: real.RealTraffic | undefined;
  if (realTrafficIds.some(wanted)) {
    const genDir = join(root, 'generator');
    mkdirSync(genDir, { recursive: true });
    const generator = ensureWrk(log) ? wrkGenerator(genDir) : autocannonGenerator();
    jsonCeiling = await startJsonCeiling(frontEnd);
    const started = ["A'", "B'", "D'"].some(wanted) ? await startFloor(dirs, fixtures, port, frontEnd) : 'no row it stands beside runs';
    floor = typeof started === 'string' ? undefined : started;
    rt = { generator, ceilingPort: jsonCeiling.port, ceilingPid: jsonCeiling.child.pid, quick: args.quick, floor: typeof started === 'string' ? started : { port: started.port, pid: started.child.pid } };
    log(`${realTrafficIds.join(', ')}: generator ${generator.kind}; beside a ceiling that parses each body as JSON (pid ${jsonCeiling.child.pid}, port ${jsonCeiling.port})`);
    log(floor === undefined ? `A', B', D': no floor (${started})` : `A', B', D': and beside the floor, a sketch of their unskippable steps (pid ${floor.child.pid}, port ${floor.port})`);
  }
  const realRun = (run: (r: real.RealTraffic) => Promise<ScenarioResult>) => async (): Promise<ScenarioResult> => {
    if (rt === undefined) throw new Error('no generator');
    return run(rt);
  };
  // Measure the steady state: the server completes its search index in the background after start-up.
  const searchReadyMs = fixtures.searchTerms.length === 0 ? Number.NaN : await data.waitSearchReady(ctx, fixtures.searchTerms[0]!.term);
  log(`search index answering fast ${(searchReadyMs / 1000).toFixed(1)} s after /health OK (${((spawnToHealthyMs + searchReadyMs) / 1000).toFixed(1)} s after spawn)`);
  // Order matters: E's writes give H something to snapshot; C last, because the argon2 jobs of its overflow
  // run keep the workers busy for seconds after it ends, which would take the CPU from whatever came next.
  // A, B and D are judged by their ratio: each against a ceiling of its method measured just before it,
  // so that on a machine whose neighbours come and go both meet the same weather, as nearly as can be.
  const plan: Array<[string, string, () => Promise<ScenarioResult | ScenarioResult[]>, Method?]> = [
    ['0', 'GET /health', () => auth.health(ctx)],
    ['A', 'POST /authenticate, apikey (repeat)', () => auth.apikeyAuthenticate(ctx), 'POST'],
    ['B', 'POST /authenticate, username (repeat)', () => auth.repeatedUsername(ctx), 'POST'],
    ['D', 'GET /users/user/{id} (repeat)', () => data.userRead(ctx), 'GET'],
    ["A'", 'POST /authenticate, apikey, distinct keys and addresses', realRun((r) => real.apikeyDistinct(ctx, r))],
    ["B'", 'POST /authenticate, username, distinct cached users and addresses', realRun((r) => real.usernameDistinct(ctx, r, log))],
    ["D'", 'GET /users/user/{id}, random ids', realRun((r) => real.userReadRandom(ctx, r))],
    ['F', 'GET /users/search/{term}', () => data.search(ctx)],
    ["F'", 'GET /users/search/{term}, random terms', realRun((r) => real.searchRandom(ctx, r))],
    ['M', 'mix of authenticate, reads and durable writes', realRun((r) => real.mix(ctx, r, log))],
    ['E', 'POST /groups/group, FSYNC=always', () => data.durableWrites(ctx)],
    ['H', 'snapshot while serving', () => data.snapshotWhileServing(ctx)],
    ['I', 'GET /users', () => data.listAll(ctx)],
    ['C', 'POST /authenticate, username, distinct', () => auth.distinctUsername(ctx)],
  ];
  for (const [id, name, run, besideMethod] of plan.filter(([id]) => wanted(id))) {
    if (!server.alive) {
      rows.push(errorRow(id, name, new Error(`authd exited earlier (${JSON.stringify(server.exit)}): ${server.output().split('\n').slice(-3).join(' / ')}`)));
      continue;
    }
    log(`${id}: ${name}`);
    // Another busy process on a 2-core machine shows up in the numbers; the load average says when.
    const loadBefore = loadavg()[0]!;
    try {
      const beside = besideMethod === undefined ? undefined : await ceiling.measure(besideMethod);
      if (beside !== undefined) log(`${id}: ceiling beside it: ${besideMethod} ${perSec(beside.reqPerSec)} (p99 ${ms(beside.ok.p99Ms)} ms)`);
      const window = await serverWindow(ctx);
      const selfCpuBefore = process.cpuUsage();
      const serverCpuBefore = procCpuSeconds(server.pid);
      const scenarioStarted = performance.now();
      const out = await run();
      const scenarioS = (performance.now() - scenarioStarted) / 1000;
      const selfCpu = process.cpuUsage(selfCpuBefore);
      // autocannon runs in this process: its CPU over the whole scenario, when no tighter figure came with the row.
      // Not for C and C+: this process also times argon2 there, on threads of its own.
      const wholeCpu = {
        generator: 'autocannon', generatorShare: (selfCpu.user + selfCpu.system) / 1e6 / scenarioS,
        serverShare: (procCpuSeconds(server.pid) - serverCpuBefore) / scenarioS, wholeScenario: true,
      };
      const pauses = await window();
      if (pauses !== undefined) log(`${id}: server meanwhile (warm-up included): ${describePauses(pauses)}`);
      for (const result of Array.isArray(out) ? out : [out]) {
        const measured = result.cpu === undefined && result.reqPerSec !== null && !result.id.startsWith('C') ? { ...result, cpu: wholeCpu } : result;
        const row = beside !== undefined && measured.ceiling === besideMethod && measured.reqPerSec !== null
          ? { ...measured, ceilingBesidePerSec: beside.reqPerSec, ratio: measured.reqPerSec / beside.reqPerSec }
          : measured;
        row.extra['loadAverageBefore'] = loadBefore;
        row.extra['serverDuringScenario'] = pauses;
        rows.push(row);
        const rate = row.reqPerSec === null ? '' : `${perSec(row.reqPerSec)}, p50 ${ms(row.p50Ms)} ms, p99 ${ms(row.p99Ms)} ms; `;
        const against = row.ceilingBesidePerSec === undefined ? 'the first ceiling' : 'the ceiling beside it';
        const parts = [row.ratio === null ? '' : `${row.ratio.toFixed(2)} x ${against}`, row.verdict.replace(/^; /, '')].filter((p) => p !== '');
        log(`${row.id}: ${rate}${parts.join('; ')}${row.cpu === undefined ? '' : `; CPU ${describeCpu(row.cpu)}`}`);
      }
    } catch (err) {
      rows.push(errorRow(id, name, err));
      log(`${id}: ERROR ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  // Its data directory is deleted next; a graceful stop would spend seconds writing a final snapshot of it.
  await server.kill();
  const gAt = rows.findIndex((r) => r.id === 'G');
  const g = rows[gAt];
  // G's verdict says when its own index was complete; the second start's figures go with the row's details.
  if (g !== undefined && g.extra['error'] === undefined) {
    rows[gAt] = { ...g, extra: { ...g.extra, searchReadyAfterHealthyMs: searchReadyMs, secondStartSpawnToHealthyMs: spawnToHealthyMs } };
  }

  // A second ceiling after the scenarios (full runs): the mean of both is what the other ratios use.
  const ceilingRuns = [ceilings];
  if (!args.quick) {
    log('ceiling again, after the scenarios');
    ceilingRuns.push(await measureCeilings(ceiling));
  }
  await ceiling.stop();
  await jsonCeiling?.child.stop();
  await floor?.child.stop();
  const mean = (pick: (c: typeof ceilings) => LoadResult): number => ceilingRuns.reduce((sum, c) => sum + pick(c).reqPerSec, 0) / ceilingRuns.length;
  const ceilingPerSec = { GET: mean((c) => c.get), POST: mean((c) => c.post) };
  const judged = judgeRatios(rows, ceilingPerSec);

  const order = ['0', 'A', "A'", 'B', "B'", 'C', 'C+', 'D', "D'", 'E', 'F', "F'", 'M', 'G', 'H', 'I'];
  judged.sort((a, b) => order.indexOf(a.id) - order.indexOf(b.id));
  const totalS = (performance.now() - started) / 1000;
  const m = machine();
  const report: BenchReport = {
    mode, users: fixtures.users, connections: args.connections, durationS: times.measureS, totalS,
    machine: m, frontEnd, server: serverEnv(dirs, frontEnd.kind, 0, 'warn'),
    ceilings: {
      meanPerSec: ceilingPerSec, runs: ceilingRuns, postBodyBytes: Buffer.byteLength(postBody),
      beside: Object.fromEntries(judged.filter((r) => r.ceilingBesidePerSec !== undefined).map((r) => [r.id, r.ceilingBesidePerSec])),
    },
    scenarios: judged, micro,
  };
  const resultsFile = resultsPath(frontEnd.kind);
  const fullRun = args.only.length === 0;
  // A partial run leaves latest-*.json as it was and draws its page apart, so latest-*.html always shows latest-*.json.
  const pageFile = fullRun ? htmlPathBeside(resultsFile) : partialPagePath(frontEnd.kind);
  if (fullRun) writeReport(resultsFile, report);
  writeHtmlReport(pageFile, report);

  const out = [
    '',
    `## authd benchmark on ${frontEndName(frontEnd)}, Node ${m.node} (${mode}${args.quick ? `: ${fixtures.users.toLocaleString('en-US')} users, ${times.measureS} s runs` : ''})`,
    `${m.cpus} x ${m.model}, ${m.memoryGiB} GiB, Node ${m.node}, Linux ${m.kernel}; ${m.date}; load average before the run ${load1.toFixed(2)}`,
    `${fixtures.users.toLocaleString('en-US')} users; ${args.connections} connections; ${times.measureS} s per scenario (C: ${times.argon2MeasureS} s) after ${times.warmS} s of warm-up; ` +
      `ceiling (a bare server on the same front end) GET ${ceilingRuns.map((c) => perSec(c.get.reqPerSec)).join(' then ')}, POST ${ceilingRuns.map((c) => perSec(c.post.reqPerSec)).join(' then ')}` +
      `${ceilingRuns.length > 1 ? ' (ratios use the mean' : ''}${besideNote(ceilingRuns.length > 1, besideList(judged))}`,
    '',
    scenarioTable(judged),
    '',
    microTable(micro),
    '',
    ...targetSummary(judged),
    fullRun ? `took ${totalS.toFixed(0)} s; results in ${resultsFile}, page ${pageFile}`
      : `took ${totalS.toFixed(0)} s; a partial run (--only), ${resultsFile} left as it was; this run's page ${pageFile}`,
  ];
  process.stdout.write(`${out.join('\n')}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`bench: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
  process.exit(1);
});
