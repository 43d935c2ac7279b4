// The production-like rows of issue 24: A' (10,000 API keys), B' (10,000 cached users), D' (random User ids), each request with its own end-user address, beside a ceiling fed the very same requests.
//
// Today's rows A and B rotate a few bodies, which the server can recognise and answer without running
// the real path. Here every request carries an end-user credential drawn at random and an `ip_address`
// no other request of the file carries; the caller (the admin's Basic credentials) is the same for all,
// as one client application's would be.

import { ApiKeySecrets } from '../../src/auth/apikey-secrets.js';
import { Prng } from './prng.js';
import { describeCpu, type ScenarioResult } from './report.js';
import { adminHeaders, endUserAddress, unexpected, type ScenarioContext } from './scenario-kit.js';
import { type GenLoadResult, type GenRequest, type Generator } from './wrk.js';

// Targets, from issue 24: ratios against the ceiling fed the same requests.
const apikeyDistinctRatioMin = 0.5;
const usernameDistinctRatioMin = 0.4;
const userReadRandomRatioMin = 0.6;

/** Requests per file: more than the credentials, so a body never repeats within the file (each has its own address). */
const requestsPerFile = 50_000;
/** B' warms one verify per User before measuring: argon2 on the hash workers, so a quick run takes fewer Users. */
const usernameDistinctUsers = 10_000;
const usernameDistinctUsersQuick = 1_000;
/** Concurrent warm-up logins: enough to keep the hash workers busy, far below hashQueueMax. */
const warmConcurrency = 8;
/** Each row's addresses start here (10.16.0.0 up), apart from the ones today's rows use (10.0.x.x). */
const addressBase: Readonly<Record<string, number>> = { "A'": 1 << 20, "B'": 2 << 20 };
const prngSeed = 24;

/** What the production-like rows share: the generator and the JSON-reading ceiling beside authd. */
export interface RealTraffic {
  readonly generator: Generator;
  readonly ceilingPort: number;
  readonly ceilingPid: number;
  readonly quick: boolean;
}

async function post(port: number, path: string, headers: Record<string, string>, body: string, method = 'POST'): Promise<{ status: number; text: string }> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, { method, headers, body });
  return { status: res.status, text: await res.text() };
}

/** Sends one request to authd and returns its answer: the sanity check, and the body the ceiling will answer with. */
async function realAnswer(ctx: ScenarioContext, r: GenRequest, what: string, expect: string): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${ctx.port}${r.path}`, { method: r.method, headers: { ...r.headers }, body: r.body });
  const text = await res.text();
  if (res.status !== 200 || !text.includes(expect)) throw new Error(`${what}: the sanity request failed (${res.status} ${text.slice(0, 200)})`);
  return text;
}

/** Warm-up then measured run, on the ceiling (answering `reply`) and then on authd, with the same request file. */
async function measurePair(ctx: ScenarioContext, rt: RealTraffic, file: string, reply: string): Promise<{ load: GenLoadResult; ceiling: GenLoadResult }> {
  const set = await post(rt.ceilingPort, '/.ceiling/reply', { 'content-type': 'application/json' }, reply, 'PUT');
  if (set.status !== 200) throw new Error(`the ceiling did not take its reply (${set.status})`);
  const run = (port: number, pid: number, durationS: number): Promise<GenLoadResult> => rt.generator.run(file, port, pid, ctx.connections, durationS);
  await run(rt.ceilingPort, rt.ceilingPid, ctx.warmS);
  const ceiling = await run(rt.ceilingPort, rt.ceilingPid, ctx.measureS);
  await run(ctx.port, ctx.pid, ctx.warmS);
  const load = await run(ctx.port, ctx.pid, ctx.measureS);
  return { load, ceiling };
}

function row(
  id: string, name: string, method: 'GET' | 'POST', ratioMin: number, m: { load: GenLoadResult; ceiling: GenLoadResult }, extra: Record<string, unknown>,
): ScenarioResult {
  const { load, ceiling } = m;
  return {
    id, name, reqPerSec: load.reqPerSec, p50Ms: load.ok.p50Ms, p99Ms: load.ok.p99Ms,
    ratio: load.reqPerSec / ceiling.reqPerSec, ceiling: method, ceilingBesidePerSec: ceiling.reqPerSec, ratioMin,
    target: `>= ${ratioMin} x ceiling fed the same requests`, pass: null, cpu: load.cpu,
    verdict: `; ceiling ${Math.round(ceiling.reqPerSec).toLocaleString('en-US')}/s (${describeCpu(ceiling.cpu)})${unexpected(load)}${unexpected(ceiling).replace('unexpected', 'ceiling unexpected')}`,
    extra: {
      generator: load.cpu.generator, durationS: load.durationS, statusCounts: load.statusCounts, errors: load.errors, timeouts: load.timeouts,
      cpu: load.cpu, ceilingCpu: ceiling.cpu, ceilingP50Ms: ceiling.ok.p50Ms, ceilingP99Ms: ceiling.ok.p99Ms, ...extra,
    },
  };
}

function authenticateRequest(ctx: ScenarioContext, body: unknown): GenRequest {
  return { method: 'POST', path: '/authenticate', headers: adminHeaders(ctx.fixtures), body: JSON.stringify(body) };
}

/** A': POST /authenticate type apikey, a key drawn at random from 10,000 for each request, each from its own address. */
export async function apikeyDistinct(ctx: ScenarioContext, rt: RealTraffic): Promise<ScenarioResult> {
  const f = ctx.fixtures;
  const secrets = ApiKeySecrets.load({ keyFile: ctx.keyFile });
  const keys = f.distinctApikeys.map((k) => ({ application: k.application, username: k.keyId, password: secrets.secretFor(k.keyId, k.nonce) }));
  const prng = new Prng(prngSeed);
  const requests = Array.from({ length: requestsPerFile }, (_, n) => {
    const k = prng.pick(keys);
    return authenticateRequest(ctx, {
      type: 'apikey', application: k.application, credential: { username: k.username, password: k.password }, ip_address: endUserAddress(addressBase["A'"]! + n),
    });
  });
  const reply = await realAnswer(ctx, requests[0]!, "A'", '"authenticated":true');
  const m = await measurePair(ctx, rt, rt.generator.prepare('apikey-distinct', requests), reply);
  return row("A'", `POST /authenticate, apikey, ${keys.length.toLocaleString('en-US')} keys, an address per request`, 'POST', apikeyDistinctRatioMin, m,
    { apikeys: keys.length, requestsInFile: requests.length });
}

/**
 * B': POST /authenticate type username over many Users whose verification is cached: each User
 * authenticates once (argon2) before the measured runs. The Users are the last of the fixture's distinct
 * credentials, so scenario C, which starts from the first, still finds its Users uncached.
 */
export async function usernameDistinct(ctx: ScenarioContext, rt: RealTraffic, log: (line: string) => void): Promise<ScenarioResult> {
  const f = ctx.fixtures;
  const count = Math.min(rt.quick ? usernameDistinctUsersQuick : usernameDistinctUsers, f.distinctCredentials.length);
  const users = f.distinctCredentials.slice(-count);
  const base = addressBase["B'"]!;
  const warmStarted = performance.now();
  let next = 0;
  const failures: string[] = [];
  const warmOne = async (): Promise<void> => {
    for (let i = next++; i < users.length; i = next++) {
      const c = users[i]!;
      // Addresses past the measured file's, so that no measured request repeats a warm-up body.
      const r = authenticateRequest(ctx, { type: 'username', application: c.application, credential: { username: c.email, password: f.password }, ip_address: endUserAddress(base + requestsPerFile + i) });
      const res = await post(ctx.port, r.path, { ...r.headers }, r.body!);
      if (res.status !== 200 || !res.text.includes('"authenticated":true')) failures.push(`${c.email}: ${res.status} ${res.text.slice(0, 120)}`);
      if ((i + 1) % 1000 === 0) log(`B': ${(i + 1).toLocaleString('en-US')} of ${users.length.toLocaleString('en-US')} Users verified once`);
    }
  };
  await Promise.all(Array.from({ length: warmConcurrency }, warmOne));
  const warmMs = performance.now() - warmStarted;
  if (failures.length > 0) throw new Error(`B': ${failures.length} warm-up logins failed, first: ${failures[0]}`);
  log(`B': verify cache warmed with ${users.length.toLocaleString('en-US')} Users in ${(warmMs / 1000).toFixed(1)} s`);
  const prng = new Prng(prngSeed + 1);
  const requests = Array.from({ length: requestsPerFile }, (_, n) => {
    const c = prng.pick(users);
    return authenticateRequest(ctx, { type: 'username', application: c.application, credential: { username: c.email, password: f.password }, ip_address: endUserAddress(base + n) });
  });
  const reply = await realAnswer(ctx, requests[0]!, "B'", '"authenticated":true');
  const m = await measurePair(ctx, rt, rt.generator.prepare('username-distinct', requests), reply);
  return row("B'", `POST /authenticate, username, ${users.length.toLocaleString('en-US')} cached users, an address per request`, 'POST', usernameDistinctRatioMin, m,
    { users: users.length, warmMs, requestsInFile: requests.length });
}

/** D': GET /users/user/{id} over ids drawn at random from every seeded User, as the admin. */
export async function userReadRandom(ctx: ScenarioContext, rt: RealTraffic): Promise<ScenarioResult> {
  const f = ctx.fixtures;
  const { authorization } = adminHeaders(f);
  const requests: GenRequest[] = f.randomUserIds.map((id) => ({ method: 'GET', path: `/users/user/${id}`, headers: { authorization: authorization! } }));
  const reply = await realAnswer(ctx, requests[0]!, "D'", '"id"');
  const m = await measurePair(ctx, rt, rt.generator.prepare('user-read-random', requests), reply);
  return row("D'", `GET /users/user/{id}, ${new Set(f.randomUserIds).size.toLocaleString('en-US')} random ids of ${f.users.toLocaleString('en-US')} users`, 'GET', userReadRandomRatioMin, m,
    { requestsInFile: requests.length, replyBytes: Buffer.byteLength(reply) });
}
