// The whole service in-process, wired as src/main.ts wires it but on any Storage (the power-loss double, a faulty one) and without the HTTP socket: for fault and fuzz tests that need thousands of requests or to look inside.
//
// Requests go straight to the pipeline as HttpRequest objects, so a test can check what a socket
// cannot show: that Object.prototype is untouched, that a refused request changed nothing (lastSeq
// and a fingerprint of the state), and that every accepted write reads back the same after a
// recovery from the same storage.

import { ApiKeySecrets } from '../../src/auth/apikey-secrets.js';
import { HashPool } from '../../src/auth/hash-pool.js';
import { BruteForceLimiter, type LimiterSettings } from '../../src/auth/limiter.js';
import { VerifyCache } from '../../src/auth/verify-cache.js';
import { joined, type HttpRequest, type Reply } from '../../src/http/adapter.js';
import { Metrics } from '../../src/http/metrics.js';
import { createPipeline } from '../../src/http/pipeline.js';
import { Renderer } from '../../src/http/render.js';
import { routeTable } from '../../src/http/routes/index.js';
import { openPersistence, type Persistence } from '../../src/persist/persistence.js';
import type { Storage } from '../../src/persist/storage.js';
import { WalError } from '../../src/persist/wal.js';
import { Audit, type AuditEntry } from '../../src/service/audit.js';
import { Authenticator } from '../../src/service/authenticator.js';
import { Committer } from '../../src/service/committer.js';
import { MicrosClock } from '../../src/store/clock.js';
import { bootstrap } from '../../src/store/decide.js';
import { newApikeyId, newEntityId } from '../../src/store/ids.js';
import { State } from '../../src/store/state.js';
import { Sealer, sealerSubkeyLabel } from '../../src/tokens/sealer.js';
import { TokenService } from '../../src/tokens/token-service.js';
import { PowerLossStorage } from './fault-storage.js';

export const appAdminEmail = 'admin@example.com';
export const appAdminPassword = 'admin-pass-Zq7!wK2';
/** A fixed server key (hex, 32 bytes): API Key secrets stay the same across a simulated restart. */
const serverKey = '6b'.repeat(32);
const publicUrl = 'https://auth.example.test';
const fastArgon2 = { memoryKiB: 1024, iterations: 1, parallelism: 1 };

/** Limits generous enough that functional tests never meet them; limiter tests pass their own. */
export const relaxedLimits: LimiterSettings = {
  failureFactor: 0, addressFailureFactor: 0, waitIncrementMs: 0, maxWaitMs: 0, failureResetMs: 1, tarpitStepMs: 0, tarpitMaxMs: 0,
};

export interface AppResponse {
  readonly status: number;
  readonly body: string;
  readonly json: unknown;
  readonly headers: readonly (readonly [string, string])[];
}

export interface RequestOptions {
  readonly body?: unknown;
  /** Sent as is (bytes or text); wins over body. */
  readonly raw?: string | Uint8Array;
  readonly contentType?: string;
  /** A Basic credential pair, a raw Authorization value, or null for none. Default: the admin. */
  readonly auth?: { readonly username: string; readonly password: string } | string | null;
  readonly query?: string;
  readonly remoteAddress?: string;
}

const noopLogger = { info: () => undefined, warn: () => undefined, error: () => undefined, fatal: () => undefined, debug: () => undefined };

export interface OpenAppOptions {
  readonly storage: Storage;
  readonly dir: string;
  readonly pool?: HashPool;
  /** The argon2 parameters `pool` hashes with (else every login re-hashes, as after a parameter change). */
  readonly argon2?: { memoryKiB: number; iterations: number; parallelism: number };
  readonly limits?: LimiterSettings;
  /** The limiter itself, made by the test (limits is then unused). */
  readonly limiter?: BruteForceLimiter;
  /** Receives every audit entry. */
  readonly audit?: (entry: AuditEntry) => void;
  readonly snapshotEveryRecords?: number;
}

export class InProcessApp {
  /** Set when the log failed for good (the real server would exit). */
  logFailure: Error | undefined;

  private constructor(
    readonly state: State,
    readonly persistence: Persistence,
    readonly committer: Committer,
    readonly authenticator: Authenticator,
    readonly pool: HashPool,
    private readonly ownsPool: boolean,
    private readonly handle: (req: HttpRequest) => Reply | Promise<Reply>,
    /** Every route, as `METHOD pattern`, for fuzzers that must reach every endpoint. */
    readonly routes: ReadonlyArray<{ readonly method: string; readonly pattern: string; readonly public: boolean }>,
  ) {}

  static async open(opts: OpenAppOptions): Promise<InProcessApp> {
    const pool = opts.pool ?? new HashPool({ workers: 1, queueMax: 64, argon2: fastArgon2 });
    const secrets = ApiKeySecrets.load({ keyFile: '/nonexistent', keyValue: serverKey });
    const { state, persistence } = await openPersistence({
      dir: opts.dir, fsync: 'always', createState: () => new State(), logger: noopLogger, storage: opts.storage,
      snapshotEveryRecords: opts.snapshotEveryRecords ?? 1_000_000, snapshotEverySeconds: 3600,
    });
    const clock = new MicrosClock();
    clock.notBefore(state.lastAt);
    const committer = new Committer(state, persistence, clock, { newId: newEntityId, newApikeyId, newNonce: () => secrets.newNonce() });
    if (state.meta === undefined) {
      const passwordHash = await pool.hashPassword(appAdminPassword);
      await committer.commit((s, ctx) => bootstrap(s, { email: appAdminEmail, passwordHash }, ctx));
    }
    const audit = new Audit(opts.audit === undefined ? undefined : { write: (line) => opts.audit!(fromLine(JSON.parse(line) as object)) });
    const limiter = opts.limiter ?? new BruteForceLimiter(opts.limits ?? relaxedLimits);
    const cache = new VerifyCache({ ttlMs: 60_000, entriesMax: 1000 });
    const authenticator = new Authenticator(state, pool, cache, secrets, committer, opts.argon2 ?? fastArgon2, noopLogger, { limiter, audit });
    const metrics = new Metrics({ counts: () => state.counts(), get lastSeq() { return state.lastSeq; }, hashQueueDepth: () => pool.queueDepth, hashWorkers: pool.workers, searchIndexBuilding: () => state.search.building, persistence });
    const renderer = new Renderer(publicUrl, state);
    const tokens = new TokenService(state, new Sealer(secrets.subkey(sealerSubkeyLabel)), publicUrl, clock);
    let app: InProcessApp | undefined;
    const handle = createPipeline(routeTable, {
      realm: 'authd',
      routeDeps: { state, committer, authenticator, renderer, pool, secrets, tokens, snapshots: persistence, metrics, readiness: () => 'ready' },
      audit: (entry) => audit.record(entry),
      caller: (username, password, address, authorization) => authenticator.caller(username, password, address, authorization),
      knownCaller: (authorization, address) => authenticator.knownCaller(authorization, address),
      onUnexpected: (err) => {
        if (err instanceof WalError && err.code === 'wal_cut_back') return 'storage_unavailable';
        if (err instanceof WalError) {
          if (app !== undefined) app.logFailure = err;
          return 'storage_unavailable';
        }
        // A bug: the tests want to see it, not a polite 500.
        throw err;
      },
    });
    persistence.setFailureListener((err) => {
      if (app !== undefined) app.logFailure = err;
    });
    const routeList = routeTable.map((r) => ({ method: r.method, pattern: r.pattern, public: r.access === 'public' }));
    app = new InProcessApp(state, persistence, committer, authenticator, pool, opts.pool === undefined, handle, routeList);
    return app;
  }

  async request(method: string, path: string, opts: RequestOptions = {}): Promise<AppResponse> {
    const reply = await this.reply(method, path, opts);
    let text = joined(reply.body);
    if (reply.stream !== undefined) for (let next = reply.stream.next(); next.done !== true; next = reply.stream.next()) text += next.value;
    let json: unknown;
    try { json = JSON.parse(text); } catch { json = undefined; }
    return { status: reply.status, body: text, json, headers: reply.headers ?? [] };
  }

  /** The pipeline's Reply as it is, a streamed body not yet read: for a test that reads it a chunk at a time. */
  async reply(method: string, path: string, opts: RequestOptions = {}): Promise<Reply> {
    const auth = opts.auth === undefined ? { username: appAdminEmail, password: appAdminPassword } : opts.auth;
    const authorization = auth === null ? '' : typeof auth === 'string' ? auth : `Basic ${Buffer.from(`${auth.username}:${auth.password}`, 'utf8').toString('base64')}`;
    let body: Buffer | undefined;
    let contentType = opts.contentType ?? '';
    if (opts.raw !== undefined) body = Buffer.from(opts.raw);
    else if (opts.body !== undefined) {
      body = Buffer.from(JSON.stringify(opts.body), 'utf8');
      if (opts.contentType === undefined) contentType = 'application/json';
    }
    const req: HttpRequest = {
      method, path, query: opts.query ?? '', authorization, contentType, remoteAddress: opts.remoteAddress ?? '127.0.0.1',
      body, startedAt: performance.now(),
    } as HttpRequest;
    try {
      return await this.handle(req);
    } catch (err) {
      throw new Error(`${method} ${path}: the pipeline threw instead of answering: ${(err as Error).stack ?? String(err)}`);
    }
  }

  get(path: string, opts?: RequestOptions): Promise<AppResponse> { return this.request('GET', path, opts); }
  post(path: string, body?: unknown, opts?: RequestOptions): Promise<AppResponse> { return this.request('POST', path, { ...opts, body }); }
  put(path: string, body?: unknown, opts?: RequestOptions): Promise<AppResponse> { return this.request('PUT', path, { ...opts, body }); }
  delete(path: string, opts?: RequestOptions): Promise<AppResponse> { return this.request('DELETE', path, opts); }

  /** A clean stop: flush, final snapshot, release the lock; the pool too if this app made it. */
  async close(): Promise<void> {
    await this.persistence.close().catch(() => undefined);
    if (this.ownsPool) await this.pool.close();
  }
}

/** The result of a 200 answer, or a thrown error naming what came instead. */
export function resultOf<T>(res: AppResponse): T {
  const service = (res.json as { service?: { result?: unknown } } | undefined)?.service;
  if (res.status !== 200 || service?.result === undefined) throw new Error(`expected 200 with a result, got ${res.status}: ${res.body.slice(0, 300)}`);
  return service.result as T;
}

/** The error code of an error answer. */
export function errorCodeOf(res: AppResponse): string | undefined {
  return (res.json as { service?: { error?: { code?: string } } } | undefined)?.service?.error?.code;
}

/** An audit line as written, back to its entry. */
function fromLine(obj: object): AuditEntry {
  const line = obj as Record<string, unknown>;
  return {
    action: line['audit'] as string, caller: line['caller'] as string | null, targets: line['targets'] as Record<string, string>,
    outcome: line['outcome'] as string, address: line['address'] as string,
    ...(line['reason'] === undefined ? {} : { reason: line['reason'] as string }),
    ...(line['peer'] === undefined ? {} : { peer: line['peer'] as string }),
  };
}

/** What a client can read of the whole state, listings sorted: equal fingerprints mean equal observable states. */
export async function fingerprint(app: InProcessApp): Promise<string> {
  const sorted = (items: { id: string }[]): { id: string }[] => [...items].sort((a, b) => (a.id < b.id ? -1 : 1));
  const applications = sorted(resultOf<{ applications: { id: string }[] }>(await app.get('/applications')).applications);
  const groups = sorted(resultOf<{ groups: { id: string }[] }>(await app.get('/groups')).groups);
  const users = sorted(resultOf<{ users: { id: string }[] }>(await app.get('/users')).users);
  return JSON.stringify({ applications, groups, users, lastSeq: app.state.lastSeq });
}

/** The server's route list, from the very code the server runs: a throwaway in-process app on simulated storage. */
export async function serverRoutes(): Promise<{ method: string; pattern: string; public: boolean }[]> {
  const pool = new HashPool({ workers: 1, queueMax: 8, argon2: { memoryKiB: 1024, iterations: 1, parallelism: 1 } });
  const storage = new PowerLossStorage();
  await storage.mkdirp('/routes');
  const app = await InProcessApp.open({ storage, dir: '/routes', pool });
  const routes = [...app.routes];
  await app.close();
  await pool.close();
  return routes;
}
