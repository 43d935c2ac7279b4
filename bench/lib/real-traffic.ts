// The production-like rows of issue 24: A' (10,000 API keys), B' (10,000 cached users), D' (random User ids), F' (random search terms), M (a mix), beside a ceiling fed the very same requests.
//
// Today's rows A and B rotate a few bodies, which the server can recognise and answer without running
// the real path. Here every request carries an end-user credential drawn at random and an `ip_address`
// no other request of the file carries; the caller (the admin's Basic credentials) is the same for all,
// as one client application's would be.

import { ApiKeySecrets } from '../../src/auth/apikey-secrets.js';
import { randomSearchTerm, type Credential, type Fixtures } from './dataset.js';
import { Prng } from './prng.js';
import { describeCpu, type ScenarioResult } from './report.js';
import { adminHeaders, endUserAddress, unexpected, type ScenarioContext } from './scenario-kit.js';
import { over, pausesBetween, routeTimesBetween, scrapeMetrics } from './server-pauses.js';
import { type GenLoadResult, type GenRequest, type Generator } from './wrk.js';

// Targets, from issue 24: ratios against the ceiling fed the same requests.
const apikeyDistinctRatioMin = 0.5;
const usernameDistinctRatioMin = 0.4;
const userReadRandomRatioMin = 0.6;
const searchRandomP50MsMax = 0.3;
const searchRandomP99MsMax = 2;
const mixRatioMin = 0.4;

/** F': one connection, so the percentiles are the server's time per search rather than queueing behind 49 others. */
const searchConnections = 1;
/** F' asks for a first page of this many Users; the cursor would fetch the rest. */
const searchPageLimit = 20;
/** M's shares of its requests: the rest (2%) are User updates, each fsynced (FSYNC=always). */
const mixApikeyShare = 0.45;
const mixUsernameShare = 0.45;
const mixReadShare = 0.08;

/**
 * Authentication requests per file, each with its own address, so that no measured body is taken for a repeat,
 * as in production, where end users' bodies do not come again. The measured run sends from the start of the
 * file and the warm-up from warmStartAt on: each has room for 480,000 and 120,000 requests (48,000/s for 10 s,
 * 60,000/s for 2 s), far more than the server's table of bodies seen once holds (knownSightingsMax). A row
 * whose runs sent more says so (cameRound).
 */
const requestsPerFile = 600_000;
/** Search terms per file. */
const termsPerFile = 10_000;
/** The warm-up begins this far into a file, the measured run at its start: the two send different requests. */
const warmStartAt = 0.8;
/** B' warms one verify per User before measuring: argon2 on the hash workers, so a quick run takes fewer Users. */
const usernameDistinctUsers = 10_000;
const usernameDistinctUsersQuick = 1_000;
/** Concurrent warm-up logins: enough to keep the hash workers busy, far below hashQueueMax. */
const warmConcurrency = 8;
/** Each row's addresses start here (10.16.0.0 up), apart from the ones today's rows use (10.0.x.x). */
const addressBase: Readonly<Record<string, number>> = { "A'": 1 << 20, "B'": 2 << 20, M: 3 << 20 };
const prngSeed = 24;

/** What the production-like rows share: the generator and the JSON-reading ceiling beside authd. */
export interface RealTraffic {
  readonly generator: Generator;
  readonly ceilingPort: number;
  readonly ceilingPid: number;
  readonly quick: boolean;
  /** The floor beside A', B' and D' (bench/floor-server.ts), or why there is none. */
  readonly floor: { readonly port: number; readonly pid: number } | string;
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

interface Pair {
  readonly load: GenLoadResult;
  readonly ceiling: GenLoadResult;
  /** The floor fed the same requests (withFloor), or why it was not. */
  readonly floor?: GenLoadResult | string;
  /** A file of distinct requests, and authd's warm-up or measured run sent more than its part of it: some requests came again. */
  readonly cameRound: boolean;
}

function sent(r: GenLoadResult): number {
  return r.ok.count + r.failed.count;
}

/** The measured run on authd, given to a caller that wants to look at the server just before and after it. */
type AroundLoad = (measure: () => Promise<GenLoadResult>) => Promise<GenLoadResult>;

/**
 * Warm-up then measured run, on the ceiling (answering `reply`), then on the floor (withFloor) and then on authd, with
 * the same request file; `distinct`: the file's requests, when none may come again within a run on authd.
 */
async function measurePair(
  ctx: ScenarioContext, rt: RealTraffic, file: string, reply: string, distinct?: number, around: AroundLoad = (measure) => measure(), withFloor = false,
): Promise<Pair> {
  const set = await post(rt.ceilingPort, '/.ceiling/reply', { 'content-type': 'application/json' }, reply, 'PUT');
  if (set.status !== 200) throw new Error(`the ceiling did not take its reply (${set.status})`);
  const run = (port: number, pid: number, durationS: number, startAt: number): Promise<GenLoadResult> =>
    rt.generator.run(file, port, pid, ctx.connections, durationS, startAt);
  await run(rt.ceilingPort, rt.ceilingPid, ctx.warmS, warmStartAt);
  const ceiling = await run(rt.ceilingPort, rt.ceilingPid, ctx.measureS, 0);
  let floor: GenLoadResult | string | undefined;
  if (withFloor && typeof rt.floor === 'string') floor = rt.floor;
  else if (withFloor && typeof rt.floor !== 'string') {
    // A floor that fails leaves the row to authd and its ceiling, saying why.
    try {
      await run(rt.floor.port, rt.floor.pid, ctx.warmS, warmStartAt);
      floor = await run(rt.floor.port, rt.floor.pid, ctx.measureS, 0);
    } catch (err) {
      floor = `its run failed: ${err instanceof Error ? err.message : String(err)}`;
    }
  }
  const warm = await run(ctx.port, ctx.pid, ctx.warmS, warmStartAt);
  const load = await around(() => run(ctx.port, ctx.pid, ctx.measureS, 0));
  const cameRound = distinct !== undefined && (sent(warm) > distinct * (1 - warmStartAt) || sent(load) > distinct * warmStartAt);
  return { load, ceiling, floor, cameRound };
}

/** What the row says of the floor: its rate and ratio, and what share of it authd reached. */
function floorText(floor: GenLoadResult | string | undefined, load: GenLoadResult, ceiling: GenLoadResult): string {
  if (floor === undefined) return '';
  if (typeof floor === 'string') return `; no floor (${floor})`;
  const failed = floor.failed.count > 0 || floor.errors > 0 ? `, ${floor.failed.count} refused and ${floor.errors} errors: not comparable` : '';
  return `; floor ${Math.round(floor.reqPerSec).toLocaleString('en-US')}/s, ${(floor.reqPerSec / ceiling.reqPerSec).toFixed(2)} x ceiling (authd ${(load.reqPerSec / floor.reqPerSec).toFixed(2)} x it${failed})`;
}

function row(id: string, name: string, method: 'GET' | 'POST', ratioMin: number, m: Pair, extra: Record<string, unknown>): ScenarioResult {
  const { load, ceiling, floor, cameRound } = m;
  const round = cameRound ? '; WARNING: authd was sent more requests than the file holds apart, so some came again (raise requestsPerFile)' : '';
  return {
    id, name, reqPerSec: load.reqPerSec, p50Ms: load.ok.p50Ms, p99Ms: load.ok.p99Ms,
    ratio: load.reqPerSec / ceiling.reqPerSec, ceiling: method, ceilingBesidePerSec: ceiling.reqPerSec, ratioMin,
    target: `>= ${ratioMin} x ceiling fed the same requests`, pass: null, cpu: load.cpu,
    verdict: `; ceiling ${Math.round(ceiling.reqPerSec).toLocaleString('en-US')}/s (${describeCpu(ceiling.cpu)})${floorText(floor, load, ceiling)}${unexpected(load)}${unexpected(ceiling).replace('unexpected', 'ceiling unexpected')}${round}`,
    extra: {
      generator: load.cpu.generator, durationS: load.durationS, statusCounts: load.statusCounts, errors: load.errors, timeouts: load.timeouts,
      cpu: load.cpu, ceilingCpu: ceiling.cpu, ceilingP50Ms: ceiling.ok.p50Ms, ceilingP99Ms: ceiling.ok.p99Ms, cameRound,
      ...(floor === undefined ? {} : typeof floor === 'string' ? { floor: { none: floor } } : { floor: { reqPerSec: floor.reqPerSec, ratio: floor.reqPerSec / ceiling.reqPerSec, cpu: floor.cpu, failed: floor.failed.count, errors: floor.errors } }),
      ...extra,
    },
  };
}

function authenticateRequest(f: Fixtures, body: unknown): GenRequest {
  return { method: 'POST', path: '/authenticate', headers: adminHeaders(f), body: JSON.stringify(body) };
}

/**
 * A''s requests: POST /authenticate type apikey, a key drawn at random from the fixtures' distinct keys for each,
 * the n-th from address addressStart + n. The same keys come in the same order for any addressStart, so another
 * bench (bench/tokens.ts) can send A''s traffic again with addresses of its own, which no earlier request carried.
 */
export function apikeyDistinctRequests(f: Fixtures, keyFile: string, addressStart: number): { requests: GenRequest[]; apikeys: number } {
  const secrets = ApiKeySecrets.load({ keyFile });
  const keys = f.distinctApikeys.map((k) => ({ application: k.application, username: k.keyId, password: secrets.secretFor(k.keyId, k.nonce) }));
  const prng = new Prng(prngSeed);
  const requests = Array.from({ length: requestsPerFile }, (_, n) => {
    const k = prng.pick(keys);
    return authenticateRequest(f, {
      type: 'apikey', application: k.application, credential: { username: k.username, password: k.password }, ip_address: endUserAddress(addressStart + n),
    });
  });
  return { requests, apikeys: keys.length };
}

/** A': POST /authenticate type apikey, a key drawn at random from 10,000 for each request, each from its own address. */
export async function apikeyDistinct(ctx: ScenarioContext, rt: RealTraffic): Promise<ScenarioResult> {
  const { requests, apikeys } = apikeyDistinctRequests(ctx.fixtures, ctx.keyFile, addressBase["A'"]!);
  const reply = await realAnswer(ctx, requests[0]!, "A'", '"authenticated":true');
  const m = await measurePair(ctx, rt, rt.generator.prepare('apikey-distinct', requests), reply, requests.length, undefined, true);
  return row("A'", `POST /authenticate, apikey, ${apikeys.toLocaleString('en-US')} keys, an address per request`, 'POST', apikeyDistinctRatioMin, m,
    { apikeys, requestsInFile: requests.length });
}

/**
 * B': POST /authenticate type username over many Users whose verification is cached: each User
 * authenticates once (argon2) before the measured runs. The Users are the last of the fixture's distinct
 * credentials, so scenario C, which starts from the first, still finds its Users uncached.
 */
/** Users already verified once on the server at this port: M reuses B''s warm-up when both run. */
const warmedOn = new Map<number, number>();

/** The Users B' and M authenticate: the last of the fixture's distinct credentials, so scenario C (from the first) finds its own uncached. */
function cachedUsers(ctx: ScenarioContext, rt: RealTraffic): readonly Credential[] {
  const f = ctx.fixtures;
  return f.distinctCredentials.slice(-Math.min(rt.quick ? usernameDistinctUsersQuick : usernameDistinctUsers, f.distinctCredentials.length));
}

function usernameBody(ctx: ScenarioContext, c: Credential, address: number): GenRequest {
  return authenticateRequest(ctx.fixtures, { type: 'username', application: c.application, credential: { username: c.email, password: ctx.fixtures.password }, ip_address: endUserAddress(address) });
}

/** One successful authentication of each User (argon2 on the hash workers), so that the measured runs find every verification cached. */
async function warmUsers(ctx: ScenarioContext, users: readonly Credential[], log: (line: string) => void): Promise<number> {
  if ((warmedOn.get(ctx.port) ?? 0) >= users.length) return 0;
  const base = addressBase["B'"]!;
  const warmStarted = performance.now();
  let next = 0;
  const failures: string[] = [];
  const warmOne = async (): Promise<void> => {
    for (let i = next++; i < users.length; i = next++) {
      // Addresses past the measured files', so that no measured request repeats a warm-up body.
      const r = usernameBody(ctx, users[i]!, base + requestsPerFile + i);
      const res = await post(ctx.port, r.path, { ...r.headers }, r.body!);
      if (res.status !== 200 || !res.text.includes('"authenticated":true')) failures.push(`${users[i]!.email}: ${res.status} ${res.text.slice(0, 120)}`);
      if ((i + 1) % 1000 === 0) log(`${(i + 1).toLocaleString('en-US')} of ${users.length.toLocaleString('en-US')} Users verified once`);
    }
  };
  await Promise.all(Array.from({ length: warmConcurrency }, warmOne));
  const warmMs = performance.now() - warmStarted;
  if (failures.length > 0) throw new Error(`${failures.length} warm-up logins failed, first: ${failures[0]}`);
  log(`verify cache warmed with ${users.length.toLocaleString('en-US')} Users in ${(warmMs / 1000).toFixed(1)} s`);
  warmedOn.set(ctx.port, users.length);
  return warmMs;
}

/** B': POST /authenticate type username over many Users whose verification is cached (warmed first). */
export async function usernameDistinct(ctx: ScenarioContext, rt: RealTraffic, log: (line: string) => void): Promise<ScenarioResult> {
  const users = cachedUsers(ctx, rt);
  const warmMs = await warmUsers(ctx, users, (line) => log(`B': ${line}`));
  const prng = new Prng(prngSeed + 1);
  const requests = Array.from({ length: requestsPerFile }, (_, n) => usernameBody(ctx, prng.pick(users), addressBase["B'"]! + n));
  const reply = await realAnswer(ctx, requests[0]!, "B'", '"authenticated":true');
  const m = await measurePair(ctx, rt, rt.generator.prepare('username-distinct', requests), reply, requests.length, undefined, true);
  return row("B'", `POST /authenticate, username, ${users.length.toLocaleString('en-US')} cached users, an address per request`, 'POST', usernameDistinctRatioMin, m,
    { users: users.length, warmMs, requestsInFile: requests.length });
}

/** D': GET /users/user/{id} over ids drawn at random from every seeded User, as the admin. */
export async function userReadRandom(ctx: ScenarioContext, rt: RealTraffic): Promise<ScenarioResult> {
  const f = ctx.fixtures;
  const { authorization } = adminHeaders(f);
  const requests: GenRequest[] = f.randomUserIds.map((id) => ({ method: 'GET', path: `/users/user/${id}`, headers: { authorization: authorization! } }));
  const reply = await realAnswer(ctx, requests[0]!, "D'", '"id"');
  const m = await measurePair(ctx, rt, rt.generator.prepare('user-read-random', requests), reply, undefined, undefined, true);
  return row("D'", `GET /users/user/{id}, ${new Set(f.randomUserIds).size.toLocaleString('en-US')} random ids of ${f.users.toLocaleString('en-US')} users`, 'GET', userReadRandomRatioMin, m,
    { requestsInFile: requests.length, replyBytes: Buffer.byteLength(reply) });
}

/** F': GET /users/search/{term}?limit=20 with random terms over every User, one connection: the latency one person's search meets. */
export async function searchRandom(ctx: ScenarioContext, rt: RealTraffic): Promise<ScenarioResult> {
  const { authorization } = adminHeaders(ctx.fixtures);
  const prng = new Prng(prngSeed + 2);
  const terms = Array.from({ length: termsPerFile }, (_, n) => randomSearchTerm(ctx.fixtures, prng, n));
  const requests: GenRequest[] = terms.map((t) => ({ method: 'GET', path: `/users/search/${encodeURIComponent(t.term)}?limit=${searchPageLimit}`, headers: { authorization: authorization! } }));
  const reply = await realAnswer(ctx, requests[0]!, "F'", '"users"');
  let server: SearchServerSide | undefined;
  const m = await measurePair({ ...ctx, connections: searchConnections }, rt, rt.generator.prepare('search-random', requests), reply, undefined, async (measure) => {
    const first = await scrapeMetrics(ctx);
    const load = await measure();
    const second = await scrapeMetrics(ctx);
    server = first === undefined || second === undefined ? undefined : searchServerSide(first, second, load.durationS);
    return load;
  });
  const pass = m.load.ok.p50Ms <= searchRandomP50MsMax && m.load.ok.p99Ms <= searchRandomP99MsMax && m.load.failed.count === 0;
  const shortest = terms.filter((t) => t.term.length <= 2).length;
  return {
    ...row("F'", `GET /users/search/{term}?limit=${searchPageLimit}, ${terms.length.toLocaleString('en-US')} random terms (${new Set(terms.map((t) => t.term)).size.toLocaleString('en-US')} distinct), ${searchConnections} connection`,
      'GET', 0, m, { terms: terms.length, termsOfAtMost2Chars: shortest, sampleTerms: terms.slice(0, 12), serverSide: server }),
    ratioMin: undefined, pass,
    target: `p50 <= ${searchRandomP50MsMax} ms, p99 <= ${searchRandomP99MsMax} ms`,
    verdict: `p50 ${m.load.ok.p50Ms.toFixed(2)} / p99 ${m.load.ok.p99Ms.toFixed(2)} ms (${shortest.toLocaleString('en-US')} of ${terms.length.toLocaleString('en-US')} terms of 1-2 characters)` +
      `${server === undefined ? '' : `; ${describeSearchServerSide(server)}`}; ceiling ${Math.round(m.ceiling.reqPerSec).toLocaleString('en-US')}/s${unexpected(m.load)}`,
  };
}

/**
 * What F''s measured run looked like from the server. wrk's percentiles are corrected for coordinated omission: a
 * request held back by a pause also stands for the requests a steady client would have sent meanwhile, one per
 * mean interval, so one pause of a few ms weighs as several slow searches. The server's own times and its young
 * collections tell the searches' cost from the pauses between them.
 */
interface SearchServerSide {
  readonly searches: number;
  readonly within1Ms: number;
  readonly scavenges: number;
  readonly scavengeMeanMs: number;
  /** Share of the run the main thread spent in young collections. */
  readonly scavengeShare: number;
}

function searchServerSide(first: string, second: string, durationS: number): SearchServerSide | undefined {
  const times = routeTimesBetween(first, second, 'GET', '/users/search/:search');
  const minor = pausesBetween(first, second)?.gc['minor'];
  if (times === undefined || minor === undefined) return undefined;
  return {
    searches: times.count, within1Ms: times.count - over(times, 0.001),
    scavenges: minor.count, scavengeMeanMs: minor.count === 0 ? 0 : (minor.seconds * 1000) / minor.count, scavengeShare: minor.seconds / durationS,
  };
}

function describeSearchServerSide(s: SearchServerSide): string {
  const within = s.searches === 0 ? 0 : (100 * s.within1Ms) / s.searches;
  return `wrk's percentiles count the searches a pause held back (coordinated omission); by the server's own time ${within.toFixed(2)}% of ` +
    `${s.searches.toLocaleString('en-US')} searches took at most 1 ms, and ${s.scavenges} young collections of ${s.scavengeMeanMs.toFixed(1)} ms mean ` +
    `held the event loop ${(100 * s.scavengeShare).toFixed(1)}% of the run`;
}

/**
 * M: a mix as a client application's traffic might be: 90% authenticate (half A' keys, half B' Users),
 * 8% reads of random Users, 2% updates of Users no authenticate request touches, each durable
 * (FSYNC=always) before its answer. The ceiling answers every request with the authenticate reply.
 */
export async function mix(ctx: ScenarioContext, rt: RealTraffic, log: (line: string) => void): Promise<ScenarioResult> {
  const f = ctx.fixtures;
  if (f.writableUserIds.length === 0) throw new Error('M: the dataset has no User to update (too few Users)');
  const users = cachedUsers(ctx, rt);
  const warmMs = await warmUsers(ctx, users, (line) => log(`M: ${line}`));
  const secrets = ApiKeySecrets.load({ keyFile: ctx.keyFile });
  const keys = f.distinctApikeys.map((k) => ({ application: k.application, username: k.keyId, password: secrets.secretFor(k.keyId, k.nonce) }));
  const admin = adminHeaders(f);
  const prng = new Prng(prngSeed + 3);
  const counts = { apikey: 0, username: 0, read: 0, write: 0 };
  const requests = Array.from({ length: requestsPerFile }, (_, n): GenRequest => {
    const r = prng.next();
    const address = addressBase['M']! + n;
    if (r < mixApikeyShare) {
      counts.apikey++;
      const k = prng.pick(keys);
      return authenticateRequest(ctx.fixtures, { type: 'apikey', application: k.application, credential: { username: k.username, password: k.password }, ip_address: endUserAddress(address) });
    }
    if (r < mixApikeyShare + mixUsernameShare) {
      counts.username++;
      return usernameBody(ctx, prng.pick(users), address);
    }
    if (r < mixApikeyShare + mixUsernameShare + mixReadShare) {
      counts.read++;
      return { method: 'GET', path: `/users/user/${prng.pick(f.randomUserIds)}`, headers: { authorization: admin.authorization! } };
    }
    counts.write++;
    return { method: 'PUT', path: `/users/user/${prng.pick(f.writableUserIds)}`, headers: admin, body: JSON.stringify({ name: `Mixed Writer ${n}` }) };
  });
  const reply = await realAnswer(ctx, requests.find((r) => r.path === '/authenticate')!, 'M', '"authenticated":true');
  const write = requests.find((r) => r.method === 'PUT');
  if (write !== undefined) await realAnswer(ctx, write, 'M (update)', '"user"');
  const m = await measurePair(ctx, rt, rt.generator.prepare('mix', requests), reply, requests.length);
  return row('M', `mix: ${(counts.apikey + counts.username).toLocaleString('en-US')} authenticate (apikey, cached username), ${counts.read.toLocaleString('en-US')} reads, ${counts.write.toLocaleString('en-US')} fsynced updates per ${requests.length.toLocaleString('en-US')}`,
    'POST', mixRatioMin, m, { requestsInFile: requests.length, counts, users: users.length, apikeys: keys.length, warmMs });
}
