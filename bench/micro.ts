// The micro benchmarks (benny), run as a child of bench/run.ts on the seeded data directory: codec, apply, index lookups, search, HMAC checks, argon2id.
//
// Its own process so that the state it loads (a million users) never sits in the load generator's
// heap during the HTTP scenarios. Writes its results as JSON to --out.

import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import b from 'benny';
import { argon2id, argon2Verify } from 'hash-wasm';
import { ApiKeySecrets } from '../src/auth/apikey-secrets.js';
import { VerifyCache } from '../src/auth/verify-cache.js';
import {
  argon2HashBytes, argon2IterationsDefault, argon2MemoryKiBDefault, argon2ParallelismDefault, argon2SaltBytes, verifyCacheEntriesMax,
} from '../src/config/limits.js';
import { entityKinds, type LogRecord, type User } from '../src/domain/entities.js';
import { decodeLog, encodeRecord } from '../src/persist/codec.js';
import { classifyDir } from '../src/persist/layout.js';
import { readSnapshot } from '../src/persist/snapshot.js';
import { NodeStorage } from '../src/persist/storage.js';
import { Renderer } from '../src/http/render.js';
import type { RouteContext, RouteResult } from '../src/http/route.js';
import { userRoutes } from '../src/http/routes/users.js';
import { newEntityId } from '../src/store/ids.js';
import { State } from '../src/store/state.js';
import { benchHaystack, randomSearchTerm, type Fixtures } from './lib/dataset.js';
import { Prng } from './lib/prng.js';
import { compact, formatOps, formatUs, type MicroReport, type MicroResult } from './lib/report.js';

interface MicroArgs {
  dataDir: string;
  fixtures: string;
  keyFile: string;
  out: string;
  quick: boolean;
}

/** The search index as this benchmark uses it: a lowercase term in, matching ids out. Typed loosely on purpose,
 *  so the index can change shape (it is being optimised) without breaking the benchmark's build. */
interface SearchLike {
  search(termLower: string, limit: number): Iterable<string>;
  /** Its own linear scan over its precomputed strings, when it offers one. */
  scan?(termLower: string, limit: number): Iterable<string>;
  /** An index built in the background after a bulk load: true until it is complete. */
  readonly building?: boolean;
  buildStep?(docsMax: number): boolean;
}

/** Timed runs of each search term on its own (the median is kept). */
const searchPerTermRuns = 21;
/** Documents per buildStep call while the micro suite completes the search index before measuring it. */
const searchBuildDocsPerStep = 100_000;
/** First pages of random terms timed through the search route, per pass (the first pass warms, the second is reported). */
const firstPageTerms = 10_000;
const firstPageTermsQuick = 2_000;
/** The page F' asks for. */
const firstPageLimit = 20;
/** Slowest terms named in the output. */
const firstPageSlowestShown = 5;
/** The seed of timeFirstPages's terms. */
const prngSeedFirstPages = 2402;

/** A first page's time in ms through the route's handler, with the term and how it was drawn. */
interface FirstPageTime {
  readonly term: string;
  readonly kind: string;
  readonly ms: number;
}

/** p50, p99 and max of times in ms, as text. */
function percentiles(ms: number[]): string {
  const sorted = [...ms].sort((a, b) => a - b);
  const at = (p: number): number => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
  return `p50 ${at(0.5).toFixed(3)} / p99 ${at(0.99).toFixed(3)} / max ${sorted[sorted.length - 1]!.toFixed(2)} ms`;
}

/**
 * GET /users/search/{term}?limit=20 without HTTP: the route's handler (paged search, rendering, the page's
 * text) over random terms, one at a time, each awaited like a request. Times include the collections the
 * searches cause, as a server's would; the first pass warms the code and the renderings kept.
 */
async function timeFirstPages(state: State, fixtures: Fixtures, count: number): Promise<FirstPageTime[]> {
  const route = userRoutes.find((r) => r.operationId === 'searchUsers');
  if (route === undefined) throw new Error('micro: no searchUsers route');
  const deps = { state, renderer: new Renderer('http://127.0.0.1:8080', state) };
  const prng = new Prng(prngSeedFirstPages);
  const terms = Array.from({ length: count }, (_, n) => randomSearchTerm(fixtures, prng, n));
  let times: FirstPageTime[] = [];
  for (let pass = 0; pass < 2; pass++) {
    times = [];
    for (const { term, kind } of terms) {
      const ctx = { params: { search: encodeURIComponent(term) }, query: `limit=${firstPageLimit}`, deps } as unknown as RouteContext<unknown>;
      const started = performance.now();
      const answer = (await route.handler(ctx)) as RouteResult;
      const ms = performance.now() - started;
      if (answer.list !== undefined) throw new Error(`micro: the search for "${term}" answered a listing, not a page`);
      times.push({ term, kind, ms });
    }
  }
  return times;
}

function parseArgs(argv: readonly string[]): MicroArgs {
  const get = (name: string): string => {
    const i = argv.indexOf(name);
    const value = i === -1 ? undefined : argv[i + 1];
    if (value === undefined) throw new Error(`micro: ${name} is required`);
    return value;
  };
  return { dataDir: get('--data-dir'), fixtures: get('--fixtures'), keyFile: get('--key-file'), out: get('--out'), quick: argv.includes('--quick') };
}

async function loadState(dataDir: string): Promise<State> {
  const listing = classifyDir(dataDir, readdirSync(dataDir));
  const newest = listing.snapshots[0];
  if (newest === undefined) throw new Error(`micro: no snapshot in ${dataDir}`);
  const snapshot = await readSnapshot(new NodeStorage(), newest.path);
  const state = new State();
  for (const kind of entityKinds) {
    const values = snapshot.sections.get(kind);
    if (values !== undefined) state.loadSection(kind, values);
  }
  state.finishLoad(snapshot.baseSeq);
  return state;
}

/** A user shaped like the seeded ones (company, three custom_data fields, memberships, one API key), for the codec. */
function typicalUser(fixtures: Fixtures, passwordHash: string): User {
  const at = Date.now() * 1000;
  const key = fixtures.apikeys[0];
  return {
    id: newEntityId(), email: fixtures.distinctCredentials[0]?.email ?? 'jane.roe1@acme.example', name: 'Jane Roe', status: 'ENABLED',
    customData: { plan: 'pro', signup_source: 'web', locale: 'en-US', company_name: 'Acme Labs' }, passwordHash,
    organization: newEntityId(), applications: [fixtures.writeApplication, newEntityId()], groups: [newEntityId(), newEntityId()],
    apikeys: key === undefined ? [] : [{ id: key.keyId, name: 'default', description: '', status: 'ENABLED', nonce: key.nonce, createdAt: at, modifiedAt: at }],
    createdAt: at, modifiedAt: at,
  };
}

/** Cycles through items without allocating, so the benchmark measures the call, not the picking. */
function cycler<T>(items: readonly T[]): () => T {
  let i = 0;
  return () => {
    const item = items[i]!;
    i = i + 1 === items.length ? 0 : i + 1;
    return item;
  };
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const fixtures = JSON.parse(readFileSync(args.fixtures, 'utf8')) as Fixtures;
  const secrets = ApiKeySecrets.load({ keyFile: args.keyFile });
  const caseOptions = args.quick ? { maxTime: 0.5, minSamples: 5 } : { maxTime: 2, minSamples: 10 };
  const slowCaseOptions = args.quick ? { maxTime: 1, minSamples: 5 } : { maxTime: 3, minSamples: 10 };

  const results: MicroResult[] = [];
  const suite = async (group: string, ...cases: ReturnType<typeof b.add>[]): Promise<void> => {
    await b.suite(group, ...cases, b.cycle((current) => {
      const result: MicroResult = {
        name: current.name, group, opsPerSec: current.ops, meanUs: current.details.mean * 1e6,
        marginPct: current.margin, samples: current.samples,
      };
      results.push(result);
      process.stdout.write(`micro: ${group} / ${result.name}: ${formatOps(result.opsPerSec)} ops/s (${formatUs(result.meanUs)} per op, ±${result.marginPct.toFixed(1)}%)\n`);
      return undefined;
    }), b.complete(() => undefined));
  };

  // ---- phase 1, before the dataset is loaded: code whose cost does not depend on it ----
  // argon2 above all: each run allocates ~19 MiB of wasm memory, and in a process holding a million users
  // that external-memory pressure sets off full collections of the whole heap, several times slower than the
  // hash (the server runs argon2 in worker threads, whose heaps are small, exactly to avoid this).
  const phc = await argon2id({
    password: fixtures.password, salt: randomBytes(argon2SaltBytes), memorySize: argon2MemoryKiBDefault,
    iterations: argon2IterationsDefault, parallelism: argon2ParallelismDefault, hashLength: argon2HashBytes, outputType: 'encoded',
  });
  await suite('argon2id (m=19456 KiB, t=2, p=1)',
    b.add('hash', () => argon2id({
      password: fixtures.password, salt: randomBytes(argon2SaltBytes), memorySize: argon2MemoryKiBDefault,
      iterations: argon2IterationsDefault, parallelism: argon2ParallelismDefault, hashLength: argon2HashBytes, outputType: 'encoded',
    }), slowCaseOptions),
    b.add('verify', () => argon2Verify({ password: fixtures.password, hash: phc }), slowCaseOptions),
  );
  const argon2Hash = results[results.length - 2]!;
  const argon2Verified = results[results.length - 1]!;

  const keys = fixtures.apikeys.slice(0, 64).map((k) => ({ keyId: k.keyId, nonce: k.nonce, secret: secrets.secretFor(k.keyId, k.nonce) }));
  const nextApikey = cycler(keys);
  await suite('HMAC verification',
    b.add('ApiKeySecrets.secretFor (HMAC-SHA256: a key\'s first check)', () => { const k = nextApikey(); secrets.secretFor(k.keyId, k.nonce); }, caseOptions),
    b.add('ApiKeySecrets.verify (a key in use: constant-time compare with its kept secret)', () => { const k = nextApikey(); secrets.verify(k.keyId, k.nonce, k.secret); }, caseOptions),
  );

  const typical = typicalUser(fixtures, phc);
  const record: LogRecord = { seq: 1, at: typical.modifiedAt, ops: [{ op: 'put', kind: 'user', value: typical }] };
  const framed = encodeRecord(record);
  await suite('codec',
    b.add('encode a user record', () => { encodeRecord(record); }, caseOptions),
    b.add('decode a user record (crc + msgpack + shape check)', () => { decodeLog(framed, 'bench'); }, caseOptions),
  );

  // ---- phase 2: the dataset ----
  const loadStarted = performance.now();
  const state = await loadState(args.dataDir);
  const loadMs = performance.now() - loadStarted;
  const users = state.counts().users;
  process.stdout.write(`micro: loaded ${users.toLocaleString('en-US')} users in ${(loadMs / 1000).toFixed(1)} s\n`);

  // The server builds its search postings in the background after loading a snapshot, answering with a
  // scan until they are complete; here they are completed first, so search and apply run in their steady state.
  const index = state.search as unknown as SearchLike;
  const buildStarted = performance.now();
  if (index.building === true && typeof index.buildStep === 'function') {
    while (index.buildStep(searchBuildDocsPerStep)) { /* until complete */ }
  }
  const searchBuildMs = performance.now() - buildStarted;
  process.stdout.write(`micro: search index completed in ${(searchBuildMs / 1000).toFixed(1)} s\n`);

  const sample = state.user(fixtures.userIds[0]!)!;
  // ---- state machine ----
  // Two versions of the same user, alternated, so every apply really re-indexes (name and email change).
  const versions: User[] = [0, 1].map((v) => ({ ...sample, name: `${sample.name} v${v}`, email: `v${v}.${sample.email}`, modifiedAt: sample.modifiedAt + 1 + v }));
  let seq = state.lastSeq;
  await suite('state machine',
    b.add(`State.apply: put a user (${compact(users)} users)`, () => {
      seq++;
      state.apply({ seq, at: versions[seq & 1]!.modifiedAt, ops: [{ op: 'put', kind: 'user', value: versions[seq & 1]! }] });
    }, caseOptions),
  );
  state.apply({ seq: ++seq, at: sample.modifiedAt + 3, ops: [{ op: 'put', kind: 'user', value: { ...sample, modifiedAt: sample.modifiedAt + 3 } }] });

  // ---- index lookups ----
  const nextEmail = cycler(fixtures.distinctCredentials.map((c) => c.email.toUpperCase()));
  const nextKey = cycler(fixtures.apikeys.map((k) => k.keyId));
  // The answers are counted: a lookup whose result goes unused is one the compiler may drop (it measured 5 ns).
  let found = 0;
  await suite('index lookups',
    b.add('userByEmail (mixed case)', () => { if (state.userByEmail(nextEmail()) !== undefined) found++; }, caseOptions),
    b.add('userByApikey', () => { if (state.userByApikey(nextKey()) !== undefined) found++; }, caseOptions),
  );
  if (found === 0) throw new Error('micro: the index lookups found no user');

  // ---- search ----
  const terms = fixtures.searchTerms.map((t) => t.term);
  const nextIndexTerm = cycler(terms);
  const nextScanTerm = cycler(terms);
  const countIds = (ids: Iterable<string>): number => {
    let n = 0;
    for (const _ of ids) n++;
    return n;
  };
  // The baseline: a linear scan over a precomputed folded string per User (benchHaystack), what an index beats.
  const haystacks: string[] = [];
  for (const user of state.allUsers()) haystacks.push(benchHaystack(user));
  const linearScan = (term: string): number => {
    let found = 0;
    for (let i = 0; i < haystacks.length; i++) if (haystacks[i]!.includes(term)) found++;
    return found;
  };
  const scanName = `linear scan over ${compact(haystacks.length)} precomputed strings (the bench's own)`;
  await suite('search',
    b.add(`index: state.search.search (${terms.length} terms, ${compact(users)} users)`, () => countIds(index.search(nextIndexTerm(), Number.POSITIVE_INFINITY)), caseOptions),
    b.add(scanName, () => linearScan(nextScanTerm()), slowCaseOptions),
  );
  const searchIndex = results[results.length - 2]!;
  const searchScan = results[results.length - 1]!;
  // Per term, so a slow kind of term (long, or made of common trigrams) shows up by name.
  const searchPerTerm = fixtures.searchTerms.map((t) => {
    const times: number[] = [];
    for (let i = 0; i < searchPerTermRuns; i++) {
      const started = performance.now();
      countIds(index.search(t.term, Number.POSITIVE_INFINITY));
      times.push(performance.now() - started);
    }
    const scanStarted = performance.now();
    linearScan(t.term);
    const scanUs = (performance.now() - scanStarted) * 1000;
    times.sort((x, y) => x - y);
    return { term: t.term, kind: t.kind, matches: t.matches, indexUs: times[Math.floor(times.length / 2)]! * 1000, scanUs };
  });
  const slowest = [...searchPerTerm].sort((x, y) => y.indexUs - x.indexUs).slice(0, 3);
  process.stdout.write(`micro: slowest terms for the index: ${slowest.map((t) => `"${t.term}" (${t.kind}, ${t.matches} matches) ${formatUs(t.indexUs)}`).join('; ')}\n`);
  const firstPages = await timeFirstPages(state, fixtures, args.quick ? firstPageTermsQuick : firstPageTerms);
  const kinds = [...new Set(firstPages.map((t) => t.kind))];
  process.stdout.write(`micro: search first page (route, limit ${firstPageLimit}, ${firstPages.length} random terms): ${percentiles(firstPages.map((t) => t.ms))}; ` +
    `${kinds.map((k) => `${k} ${percentiles(firstPages.filter((t) => t.kind === k).map((t) => t.ms))}`).join('; ')}\n`);
  const slowestPages = [...firstPages].sort((x, y) => y.ms - x.ms).slice(0, firstPageSlowestShown);
  process.stdout.write(`micro: slowest first pages: ${slowestPages.map((t) => `"${t.term}" (${t.kind}) ${t.ms.toFixed(2)} ms`).join('; ')}\n`);

  // ---- the verified-credential cache (its entries are tied to live User objects) ----
  const cache = new VerifyCache({ ttlMs: 3_600_000, entriesMax: verifyCacheEntriesMax });
  const cachedUsers = fixtures.userIds.slice(0, 64).map((id) => state.user(id)!);
  for (const u of cachedUsers) cache.remember(u.id, u, fixtures.password);
  const nextCached = cycler(cachedUsers);
  await suite('HMAC verification',
    b.add('VerifyCache.check (hit)', () => { const u = nextCached(); cache.check(u.id, u, fixtures.password); }, caseOptions),
  );

  const report: MicroReport = {
    users, loadMs, searchBuildMs, results,
    searchSpeedup: searchScan.meanUs / searchIndex.meanUs,
    searchTerms: terms.length,
    searchPerTerm,
    argon2VerifyMs: argon2Verified.meanUs / 1000,
    argon2HashMs: argon2Hash.meanUs / 1000,
  };
  writeFileSync(args.out, JSON.stringify(report, null, 2));
}

main().catch((err: unknown) => {
  process.stderr.write(`micro: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
  process.exit(1);
});
