// `npm run bench -- --tokens [--quick] [--users N] [--keep] [--connections N]`: what issue 26's access tokens cost: POST /authenticate with a token (EdDSA; ES256 and HS256 beside it) against the same traffic without one, and a client's local verification rate.
//
// The real server (dist/src/main.js) on the main bench's dataset, driven by A''s traffic (bench/lib/real-traffic.ts:
// distinct API Keys at random, an `ip_address` per request, the admin as caller) with wrk where it can be had. The
// cost of a token is the server's CPU per success (process-wide, so the libuv threads WebCrypto signs on count)
// with tokens minus without. The floor of Ed25519 and the client's verification run in a child process pinned
// to one core (bench/lib/token-costs.ts) while the server idles.

import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify, type JSONWebKeySet } from 'jose';
import { ApiKeySecrets } from '../src/auth/apikey-secrets.js';
import { loadUws } from '../src/http/uws-loader.js';
import type { Fixtures } from './lib/dataset.js';
import { Child, distPath, freePort, procCpuSeconds, removeOnExit, runToCompletion, startChild, waitHealthy } from './lib/processes.js';
import { apikeyDistinctRequests } from './lib/real-traffic.js';
import { describeCpu, machine, ms, type CpuShare, type Machine } from './lib/report.js';
import { adminHeaders, endUserAddress } from './lib/scenario-kit.js';
import type { SignCosts, TokenToVerify, VerifyCosts } from './lib/token-costs.js';
import { parseSideBenchArgs, type SideBenchArgs } from './lib/side-args.js';
import { autocannonGenerator, ensureWrk, wrkGenerator, type GenLoadResult, type Generator } from './lib/wrk.js';

/** Targets from issue 26. */
const issueCpuUsMax = 30;
const verifyPerSecMin = 20_000;

const usersDefault = 100_000;
const quickUsers = 20_000;
const connectionsDefault = 50;
const fullTimes = { warmS: 2, measureS: 10, cryptoS: 5 };
const quickTimes = { warmS: 1, measureS: 3, cryptoS: 2 };
/** Distinct tokens the client verifies, each from a real authentication with its own API Key (fewer if the dataset has fewer keys). */
const verifyTokensWanted = 4000;
/** Concurrent authentications while collecting them. */
const collectConcurrency = 16;
/** verifyAccessToken calls at once: as a client application's server checks the tokens of concurrent requests. */
const verifyInFlight = 16;
/** The core the crypto child is pinned to (taskset), when taskset is there. */
const cryptoCore = 0;
/** A large dataset takes a while to load on a slow machine; far past any target, but a result rather than a hang. */
const startTimeoutMs = 180_000;
const indexWaitMsMax = 180_000;
/** Above this one-minute load average before we start, something else is using the CPU and the numbers will show it. */
const busyLoadAverage = 0.5;
/** Each row's `ip_address`es start here (10.96.0.0 up), apart from every other bench's, so no row repeats a body another sent. */
const addressBase = 6 << 20;
const addressesPerRow = 1 << 20;

const usage = 'npm run bench -- --tokens [--quick] [--users N] [--keep] [--connections N]';

function parseArgs(argv: readonly string[]): SideBenchArgs {
  return parseSideBenchArgs(argv, { flag: '--tokens', users: usersDefault, quickUsers, connections: connectionsDefault, usage });
}

const log = (line: string): void => { process.stdout.write(`tokens-bench: ${line}\n`); };
const verdict = (met: boolean): string => (met ? 'MET' : 'MISSED');
const n = (x: number): string => Math.round(x).toLocaleString('en-US');

type TokenAlg = 'EdDSA' | 'ES256' | 'HS256';

interface RowPlan {
  readonly name: string;
  /** undefined: tokens disabled on every Application. */
  readonly alg: TokenAlg | undefined;
}

/** "no token" twice, before and after the token rows: the baseline is their mean, and their difference the run's noise. */
const plan: readonly RowPlan[] = [
  { name: 'no token', alg: undefined },
  { name: 'EdDSA token', alg: 'EdDSA' },
  { name: 'ES256 token', alg: 'ES256' },
  { name: 'HS256 token', alg: 'HS256' },
  { name: 'no token (again)', alg: undefined },
];

interface Row {
  readonly name: string;
  readonly alg: TokenAlg | null;
  readonly successesPerSec: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly successes: number;
  readonly serverCpuS: number;
  readonly cpuUsPerSuccess: number;
  /** Of cpuUsPerSuccess, the main thread's (JavaScript, the front end); the rest is the libuv pool's (WebCrypto) and V8's helpers. */
  readonly mainThreadUsPerSuccess: number;
  readonly cpu: CpuShare;
  readonly statusCounts: Record<string, number>;
  readonly errors: number;
  readonly timeouts: number;
}

interface Server { readonly child: Child; readonly port: number; readonly baseUrl: string }

/** An admin call's result, unwrapped from the envelope; anything but 200 is an error. */
async function call(f: Fixtures, port: number, method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, { method, headers: adminHeaders(f), body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  const parsed = JSON.parse(text) as { service?: { result?: Record<string, unknown> } };
  if (res.status !== 200 || parsed.service?.result === undefined) throw new Error(`${method} ${path} answered ${res.status}: ${text.slice(0, 200)}`);
  return parsed.service.result;
}

/** The settings of the main bench's authd (bench/run.ts), the front end left to the server's own choice. */
async function startAuthd(root: string, dataDir: string, keyFile: string): Promise<Server> {
  const port = await freePort();
  const child = startChild('authd', distPath('src/main.js'), [], {
    PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dataDir, KEY_FILE: keyFile, LOG_LEVEL: 'warn', FSYNC: 'always', FRONT_END: 'auto',
    SNAPSHOT_EVERY_RECORDS: '1000000000', VERIFY_CACHE_TTL_MS: '86400000', VERIFY_CACHE_IDLE_MS: '86400000',
  }, join(root, 'authd.log'));
  await waitHealthy(child, port, startTimeoutMs);
  return { child, port, baseUrl: `http://127.0.0.1:${port}` };
}

/** Resolves once the server's search index is built: until then the build takes CPU from whatever is measured. */
async function indexBuilt(f: Fixtures, port: number): Promise<void> {
  const deadline = performance.now() + indexWaitMsMax;
  for (;;) {
    const res = await fetch(`http://127.0.0.1:${port}/metrics`, { headers: adminHeaders(f) });
    if (/^authd_search_index_building 0$/m.test(await res.text())) return;
    if (performance.now() > deadline) throw new Error('the search index was not built in time');
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** Sets the token settings of every Application; answers the HS256 secret each was given, by id. */
async function setTokens(f: Fixtures, port: number, alg: TokenAlg | undefined): Promise<Map<string, string>> {
  const apps = (await call(f, port, 'GET', '/applications'))['applications'] as Array<{ id: string }>;
  const secrets = new Map<string, string>();
  for (const app of apps) {
    const tokens = alg === undefined ? { enabled: false } : { enabled: true, alg };
    const answer = (await call(f, port, 'PUT', `/applications/application/${app.id}`, { tokens }))['application'] as { jwt_secret?: string };
    if (answer.jwt_secret !== undefined) secrets.set(app.id, answer.jwt_secret);
  }
  return secrets;
}

/** Every Application's token settings are the default (disabled): the "no token" row measures authenticate as it was. */
async function checkTokensOff(f: Fixtures, port: number): Promise<number> {
  const apps = (await call(f, port, 'GET', '/applications'))['applications'] as Array<{ id: string; tokens?: { enabled: boolean } }>;
  const on = apps.filter((a) => a.tokens?.enabled !== false);
  if (on.length > 0) throw new Error(`${on.length} Applications issue tokens before the "no token" row`);
  return apps.length;
}

/** One authentication of the row's traffic, its token (if any) verified as a client would: the answer is what we think it is. */
async function checkAnswer(f: Fixtures, server: Server, body: string, alg: TokenAlg | undefined, hsSecrets: Map<string, string>): Promise<void> {
  const res = await fetch(`${server.baseUrl}/authenticate`, { method: 'POST', headers: adminHeaders(f), body });
  const text = await res.text();
  const result = (JSON.parse(text) as { service?: { result?: { authenticated?: boolean; access_token?: string } } }).service?.result;
  if (res.status !== 200 || result?.authenticated !== true) throw new Error(`the sample authentication failed: ${res.status} ${text.slice(0, 200)}`);
  const token = result.access_token;
  if (alg === undefined) {
    if (token !== undefined) throw new Error('an access token with tokens disabled');
    return;
  }
  if (token === undefined) throw new Error(`no access token with ${alg} tokens enabled`);
  const audience = (JSON.parse(body) as { application: string }).application;
  if (decodeProtectedHeader(token).alg !== alg) throw new Error(`a ${String(decodeProtectedHeader(token).alg)} token where ${alg} was asked`);
  const issuer = ((await (await fetch(`${server.baseUrl}/.well-known/openid-configuration`)).json()) as { issuer: string }).issuer;
  if (alg === 'HS256') {
    const secret = hsSecrets.get(audience);
    if (secret === undefined) throw new Error(`no HS256 secret for Application ${audience}`);
    await jwtVerify(token, new TextEncoder().encode(secret), { issuer, audience, algorithms: [alg] });
  } else {
    const jwks = (await (await fetch(`${server.baseUrl}/.well-known/jwks.json`)).json()) as JSONWebKeySet;
    await jwtVerify(token, createLocalJWKSet(jwks), { issuer, audience, algorithms: [alg] });
  }
}

function unexpectedStatuses(load: GenLoadResult): string | undefined {
  const bad = Object.entries(load.statusCounts).filter(([code]) => !code.startsWith('2'));
  if (bad.length === 0 && load.errors === 0 && load.timeouts === 0) return undefined;
  return `${JSON.stringify(load.statusCounts)}, ${load.errors} errors, ${load.timeouts} timeouts`;
}

/** Distinct tokens from real authentications, one per API Key, from addresses no measured request carries. */
async function collectTokens(f: Fixtures, server: Server, keyFile: string, wanted: number, addressStart: number): Promise<TokenToVerify[]> {
  const secrets = ApiKeySecrets.load({ keyFile });
  const bodies = f.distinctApikeys.slice(0, wanted).map((k, i) => ({
    application: k.application,
    body: JSON.stringify({
      type: 'apikey', application: k.application, credential: { username: k.keyId, password: secrets.secretFor(k.keyId, k.nonce) }, ip_address: endUserAddress(addressStart + i),
    }),
  }));
  const out: TokenToVerify[] = [];
  let next = 0;
  await Promise.all(Array.from({ length: collectConcurrency }, async () => {
    for (let i = next++; i < bodies.length; i = next++) {
      const res = await fetch(`${server.baseUrl}/authenticate`, { method: 'POST', headers: adminHeaders(f), body: bodies[i]!.body });
      const token = ((await res.json()) as { service?: { result?: { access_token?: string } } }).service?.result?.access_token;
      if (token === undefined) throw new Error(`authentication ${i} answered no token (${res.status})`);
      out.push({ token, audience: bodies[i]!.application });
    }
  }));
  const jtis = new Set(out.map((t) => decodeJwt(t.token).jti));
  if (jtis.size !== out.length) throw new Error(`${out.length - jtis.size} repeated tokens among ${out.length}`);
  return out;
}

/** Runs the crypto child to completion, pinned to one core if taskset is there; answers its result and whether it was pinned. */
async function runCostsChild<T>(root: string, mode: string, args: readonly string[]): Promise<{ result: T; pinned: boolean }> {
  const out = join(root, `token-costs-${mode}.json`);
  const pinned = spawnSync('taskset', ['-c', String(cryptoCore), 'true']).status === 0;
  const command = [process.execPath, distPath('bench/lib/token-costs.js'), mode, ...args, '--out', out];
  const spawned = pinned ? spawn('taskset', ['-c', String(cryptoCore), ...command], { stdio: ['ignore', 'pipe', 'pipe'] })
    : spawn(command[0]!, command.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
  const child = new Child(`token-costs ${mode}`, spawned);
  const exit = await child.exited;
  if (exit.code !== 0) throw new Error(`token-costs ${mode} exited ${JSON.stringify(exit)}: ${child.output()}`);
  return { result: JSON.parse(readFileSync(out, 'utf8')) as T, pinned };
}

function table(rows: readonly Row[], baselineUs: number): string {
  const header = ['row', 'successes/s', 'p50 ms', 'p99 ms', 'server CPU s', 'CPU µs / success', 'of which main thread', 'vs no token', 'generator / server CPU'];
  const lines = rows.map((r) => [
    r.name, n(r.successesPerSec), ms(r.p50Ms), ms(r.p99Ms), r.serverCpuS.toFixed(2), r.cpuUsPerSuccess.toFixed(1), r.mainThreadUsPerSuccess.toFixed(1),
    r.alg === null ? '-' : `${r.cpuUsPerSuccess - baselineUs >= 0 ? '+' : ''}${(r.cpuUsPerSuccess - baselineUs).toFixed(1)} µs`, describeCpu(r.cpu),
  ]);
  return [header, header.map(() => '---'), ...lines].map((l) => `| ${l.join(' | ')} |`).join('\n');
}

interface Run {
  readonly args: SideBenchArgs;
  readonly times: typeof fullTimes;
  readonly root: string;
  readonly keyFile: string;
  readonly f: Fixtures;
  readonly server: Server;
  readonly generator: Generator;
}

/** One row: its token settings on every Application, a checked sample answer, warm-up, then the measured run with the server's CPU around it. */
async function measureRow(run: Run, p: RowPlan, index: number): Promise<Row> {
  const { f, server, generator, args, times } = run;
  // The same keys in the same order as every row's, from addresses of this row's own: no body comes again from an earlier row.
  const { requests, apikeys } = apikeyDistinctRequests(f, run.keyFile, addressBase + index * addressesPerRow);
  // The first row measures the settings as seeded, every Application's tokens off (checkTokensOff); the others set theirs.
  const hsSecrets = index === 0 ? new Map<string, string>() : await setTokens(f, server.port, p.alg);
  await checkAnswer(f, server, requests[0]!.body!, p.alg, hsSecrets);
  const file = generator.prepare(`row-${index}`, requests);
  const pid = server.child.pid;
  await generator.run(file, server.port, pid, args.connections, times.warmS, 0.5);
  const cpuBefore = procCpuSeconds(pid);
  const mainBefore = procCpuSeconds(pid, pid);
  const load = await generator.run(file, server.port, pid, args.connections, times.measureS, 0);
  const serverCpuS = procCpuSeconds(pid) - cpuBefore;
  const mainCpuS = procCpuSeconds(pid, pid) - mainBefore;
  const bad = unexpectedStatuses(load);
  if (bad !== undefined) throw new Error(`${p.name}: unexpected answers: ${bad}`);
  const row: Row = {
    name: p.name, alg: p.alg ?? null, successesPerSec: load.reqPerSec, p50Ms: load.ok.p50Ms, p99Ms: load.ok.p99Ms, successes: load.ok.count,
    serverCpuS, cpuUsPerSuccess: (serverCpuS * 1e6) / load.ok.count, mainThreadUsPerSuccess: (mainCpuS * 1e6) / load.ok.count,
    cpu: load.cpu, statusCounts: load.statusCounts, errors: load.errors, timeouts: load.timeouts,
  };
  log(`${p.name}: ${n(row.successesPerSec)}/s, p50 ${ms(row.p50Ms)} ms, p99 ${ms(row.p99Ms)} ms; server ${serverCpuS.toFixed(2)} CPU s = ${row.cpuUsPerSuccess.toFixed(1)} µs per success; ${describeCpu(load.cpu)} (${n(apikeys)} keys)`);
  return row;
}

/** While EdDSA tokens are on: distinct tokens from real authentications, then the client's verification rate with the server idle. */
async function verifyLocally(run: Run): Promise<{ verify: { result: VerifyCosts; pinned: boolean }; sampleToken: string }> {
  const wanted = Math.min(verifyTokensWanted, run.f.distinctApikeys.length);
  const tokens = await collectTokens(run.f, run.server, run.keyFile, wanted, addressBase + plan.length * addressesPerRow);
  const tokensFile = join(run.root, 'tokens.json');
  writeFileSync(tokensFile, JSON.stringify(tokens));
  log(`collected ${n(tokens.length)} distinct EdDSA tokens (one per API Key); verifying them locally for ${run.times.cryptoS} s`);
  const verify = await runCostsChild<VerifyCosts>(run.root, 'verify', [
    '--base-url', run.server.baseUrl, '--tokens', tokensFile, '--seconds', String(run.times.cryptoS), '--in-flight', String(verifyInFlight),
  ]);
  return { verify, sampleToken: tokens[0]!.token };
}

interface Outcome {
  readonly rows: readonly Row[];
  readonly baselineUs: number;
  readonly tokenCostUs: number;
  readonly verify: { result: VerifyCosts; pinned: boolean };
  readonly sign: { result: SignCosts; pinned: boolean };
}

function summary(run: Run, o: Outcome, frontEnd: string, applications: number, load1: number, m: Machine): string[] {
  const v = o.verify.result;
  const s = o.sign.result;
  const baselines = o.rows.filter((r) => r.alg === null);
  const spread = Math.abs(baselines[0]!.cpuUsPerSuccess - baselines[baselines.length - 1]!.cpuUsPerSuccess);
  const core = o.verify.pinned ? `pinned to core ${cryptoCore} (taskset)` : 'not pinned (no taskset here)';
  return [
    '',
    `## Access tokens on ${frontEnd}, Node ${m.node} (${run.args.quick ? 'quick' : 'full'}: ${n(run.f.users)} users, ${run.times.measureS} s runs)`,
    `${m.cpus} x ${m.model}, ${m.memoryGiB} GiB, Linux ${m.kernel}; ${m.date}; load average before the run ${load1.toFixed(2)}`,
    `A''s traffic (distinct API Keys at random, an ip_address per request, the admin as caller), ${run.args.connections} connections, ${run.generator.kind}; ` +
      `tokens set on all ${applications} Applications; CPU is the server process's (all threads) over the measured run`,
    '',
    table(o.rows, o.baselineUs),
    '',
    `baseline: the mean of the two "no token" rows, ${o.baselineUs.toFixed(1)} µs per success (they differ by ${spread.toFixed(1)} µs: the run's noise)`,
    `floor: node:crypto Ed25519 sign ${s.nodeSignCpuUs.toFixed(1)} µs of CPU each (${s.signingInputBytes}-byte signing input); ` +
      `jose SignJWT EdDSA (the server's path, ${s.joseSignInFlight} at once) ${s.joseSignCpuUs.toFixed(1)} µs of CPU each; ${core}`,
    `issuing an EdDSA token: ${o.tokenCostUs.toFixed(1)} µs of server CPU per success (target <= ${issueCpuUsMax} µs): ${verdict(o.tokenCostUs <= issueCpuUsMax)}`,
    `local verification: ${n(v.tokens)} distinct tokens, verifyAccessToken ${n(v.clientVerifyPerCpuS)}/s on one core ` +
      `(target >= ${n(verifyPerSecMin)}/s): ${verdict(v.clientVerifyPerCpuS >= verifyPerSecMin)}`,
    `  per second of the core's CPU, ${v.inFlight} calls at once; wall clock ${n(v.clientVerifyPerWallS)}/s with ${Math.round(v.clientCoreShare * 100)}% of the core; ` +
      `each token's first verification ${n(v.firstPassPerCpuS)}/s; ${v.clientRequestsDuringLoop} requests to the service during the loop; ${core}`,
    `floor: node:crypto Ed25519 verify ${n(v.nodeVerifyPerCpuS)}/s on the same core and tokens`,
  ];
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const times = args.quick ? quickTimes : fullTimes;
  const started = performance.now();
  const load1 = loadavg()[0]!;
  const uws = loadUws({ untraceable: false });
  const frontEnd = uws.loaded ? `uWebSockets.js (${uws.build})` : `node:http (${uws.reason})`;
  log(`${args.quick ? 'quick' : 'full'} run: ${n(args.users)} users, ${args.connections} connections, ${times.measureS} s per row after ${times.warmS} s of warm-up; front end ${frontEnd}, Node ${process.versions.node}`);
  if (load1 > busyLoadAverage) log(`warning: load average ${load1.toFixed(2)} before starting; something else is using the CPU and will lower the numbers`);

  const root = mkdtempSync(join(tmpdir(), 'authd-tokens-bench-'));
  if (args.keep) log(`keeping ${root}`);
  else removeOnExit(root);
  const dataDir = join(root, 'data');
  const keyFile = join(root, 'secrets', 'server.key');
  const fixturesFile = join(root, 'fixtures.json');
  await runToCompletion('seed', distPath('bench/seed.js'), ['--users', String(args.users), '--data-dir', dataDir, '--key-file', keyFile, '--fixtures', fixturesFile], log);
  const f = JSON.parse(readFileSync(fixturesFile, 'utf8')) as Fixtures;

  const server = await startAuthd(root, dataDir, keyFile);
  await indexBuilt(f, server.port);
  const applications = await checkTokensOff(f, server.port);
  log(`authd up (pid ${server.child.pid}, port ${server.port}), search index built; ${applications} Applications, tokens off on all`);
  const genDir = join(root, 'generator');
  mkdirSync(genDir, { recursive: true });
  const run: Run = { args, times, root, keyFile, f, server, generator: ensureWrk(log) ? wrkGenerator(genDir) : autocannonGenerator() };

  const rows: Row[] = [];
  let local: Awaited<ReturnType<typeof verifyLocally>> | undefined;
  for (const [i, p] of plan.entries()) {
    rows.push(await measureRow(run, p, i));
    if (p.alg === 'EdDSA') local = await verifyLocally(run);
  }
  // Its data directory is deleted next; a graceful stop would spend seconds writing a final snapshot of it.
  await server.child.kill();
  if (local === undefined) throw new Error('no EdDSA row ran');
  log(`the floor: node:crypto Ed25519 for ${times.cryptoS} s, with the server stopped`);
  const sign = await runCostsChild<SignCosts>(root, 'sign', ['--sample', local.sampleToken, '--seconds', String(times.cryptoS)]);

  const baselines = rows.filter((r) => r.alg === null);
  const baselineUs = baselines.reduce((sum, r) => sum + r.cpuUsPerSuccess, 0) / baselines.length;
  const tokenCostUs = rows.find((r) => r.alg === 'EdDSA')!.cpuUsPerSuccess - baselineUs;
  const outcome: Outcome = { rows, baselineUs, tokenCostUs, verify: local.verify, sign };
  const m = machine();
  const totalS = (performance.now() - started) / 1000;
  const resultsFile = join(distPath('../bench/results'), 'tokens-latest.json');
  mkdirSync(join(resultsFile, '..'), { recursive: true });
  const v = local.verify.result;
  writeFileSync(resultsFile, `${JSON.stringify({
    at: new Date().toISOString(), mode: args.quick ? 'quick' : 'full', users: f.users, connections: args.connections, warmS: times.warmS, measureS: times.measureS,
    machine: m, frontEnd, generator: run.generator.kind, applications, loadAverageBefore: load1, totalS,
    targets: { issueCpuUsMax, verifyPerSecMin },
    rows, baselineCpuUsPerSuccess: baselineUs, eddsaTokenCpuUs: tokenCostUs, issueMet: tokenCostUs <= issueCpuUsMax,
    verify: { ...v, pinnedCore: local.verify.pinned ? cryptoCore : null, met: v.clientVerifyPerCpuS >= verifyPerSecMin },
    floor: { ...sign.result, pinnedCore: sign.pinned ? cryptoCore : null },
  }, null, 2)}\n`);
  process.stdout.write(`${summary(run, outcome, frontEnd, applications, load1, m).join('\n')}\n\ntook ${totalS.toFixed(0)} s; results in ${resultsFile}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`tokens-bench: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
  process.exit(1);
});
