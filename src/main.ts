#!/usr/bin/env node
// Wiring only: configuration, logger, recovery, first-start bootstrap, HTTP server, signals.

import { randomBytes } from 'node:crypto';
import pino, { type Logger } from 'pino';
import type { ApiKeySecrets } from './auth/apikey-secrets.js';
import { HashPool, OverloadedError } from './auth/hash-pool.js';
import { VerifyCache } from './auth/verify-cache.js';
import { ConfigError, defaultPublicUrl, loadConfig, settings, usage, type ClusterConfig, type Config } from './config/config.js';
import { email } from './domain/schema.js';
import { packageVersion } from './config/package-version.js';
import {
  bodyReceiveTimeoutMs, hashQueueMax, indexTurnMs, passwordBytesMax, passwordCharsMin, searchIndexIdleCheckMs,
  shutdownGraceMs, trustedPairsSaveIntervalMs, verifyCacheEntriesMax,
} from './config/limits.js';
import type { HttpRequest, RunningServer } from './http/adapter.js';
import { chooseFrontEnd, FrontEndError } from './http/front-end.js';
import { Metrics } from './http/metrics.js';
import { createPipeline, errorReply } from './http/pipeline.js';
import { Renderer } from './http/render.js';
import { routeTable } from './http/routes/index.js';
import { RuntimeStats } from './http/runtime-stats.js';
import { faultSettingsFromEnv, withFaults } from './persist/fault-injection.js';
import { openPersistence, type Persistence } from './persist/persistence.js';
import type { SnapshotWritten } from './persist/snapshot.js';
import type { NodeReadiness } from './cluster/node-status.js';
import type { RejectedKind } from './cluster/rejected.js';
import type { SharedFailures } from './cluster/shared-failures.js';
import { describeRepair, repairDataDir } from './persist/repair.js';
import { NodeStorage } from './persist/storage.js';
import { WalError } from './persist/wal.js';
import { BruteForceLimiter } from './auth/limiter.js';
import { TrustedPairsFile } from './auth/trusted-pairs-file.js';
import { Audit, logSafe } from './service/audit.js';
import { fdOutput, LogWriter } from './service/log-writer.js';
import { Authenticator, type CallerAnswer } from './service/authenticator.js';
import { Committer, type Commits, type Identity } from './service/committer.js';
import { loadServerKey } from './service/server-key.js';
import { whenReady } from './service/when-ready.js';
import { MicrosClock } from './store/clock.js';
import { bootstrap } from './store/decide.js';
import { newApikeyId, newEntityId } from './store/ids.js';
import { State } from './store/state.js';
import { jose } from './tokens/jose.js';
import { Sealer, sealerSubkeyLabel } from './tokens/sealer.js';
import { TokenService } from './tokens/token-service.js';

/** The logger, and the output under it that audit lines are written to directly (src/service/audit.ts). */
function createLogger(level: string): { logger: Logger; out: LogWriter } {
  const out = new LogWriter(fdOutput(1));
  // Lines still waiting (logFlushMs), when something calls process.exit() right after logging.
  process.on('exit', () => out.flush());
  const logger = pino(
    {
      level,
      base: { service: 'authd' },
      // Belt and braces: nothing secret is ever passed to the logger, and these paths are masked if one slips in.
      redact: {
        paths: ['authorization', 'password', 'secret', '*.authorization', '*.password', '*.secret', 'headers.authorization'],
        censor: '[redacted]',
      },
    },
    out,
  );
  return { logger, out };
}

/** ADMIN_EMAIL under the rules every other User's email follows, so export and import take the first admin too. */
function adminEmailOf(config: Config): string {
  try {
    return email().parse(config.adminEmail ?? settings.ADMIN_EMAIL.default, 'ADMIN_EMAIL');
  } catch (err) {
    throw new ConfigError(err instanceof Error ? err.message : String(err));
  }
}

async function firstStart(config: Config, pool: HashPool, committer: Commits, logger: Logger, audit: Audit): Promise<void> {
  const email = adminEmailOf(config);
  const generated = config.adminPassword === undefined;
  const password = config.adminPassword ?? randomBytes(18).toString('base64url');
  if ([...password].length < passwordCharsMin || Buffer.byteLength(password) > passwordBytesMax) {
    throw new ConfigError(`ADMIN_PASSWORD must be ${passwordCharsMin} characters to ${passwordBytesMax} bytes long`);
  }
  const passwordHash = await pool.hashPassword(password);
  const admin = await committer.commit((state, ctx) => bootstrap(state, { email, passwordHash }, ctx));
  logger.info({ userId: admin.id, email, baseApplication: admin.applications[0] }, 'first start: base Application and admin User created');
  audit.record({
    action: 'bootstrap', caller: null, outcome: 'success', address: 'internal',
    targets: { user: admin.id, application: admin.applications[0]!, organization: admin.organization },
  });
  if (generated) {
    // Printed once, on purpose: the operator has no other way to learn it. Set ADMIN_PASSWORD to choose one.
    logger.warn({ adminEmail: email, generatedAdminPassword: password }, 'generated admin password; store it now, it is not shown again');
  }
}

/**
 * A current signing key per algorithm that this server key opens: made at a first start, an upgrade, or after
 * authctl rotate-key. Not fatal: without one, only EdDSA and ES256 tokens fail, and a later start tries again.
 */
async function ensureSigningKeys(tokens: TokenService, committer: Commits, logger: Logger): Promise<void> {
  try {
    const { made } = await tokens.rotate(committer, 'missing');
    if (made.length > 0) logger.info({ algs: made }, 'made new signing keys for access tokens');
    const unopened = tokens.unopenedSecrets();
    if (unopened.length > 0) {
      logger.warn({ count: unopened.length, applicationIds: unopened.slice(0, 10) }, 'HS256 secrets sealed under another server key: their tokens fail until each gets a new one (POST /applications/application/{appid}/jwt-secret)');
    }
  } catch (err) {
    logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'could not make signing keys; EdDSA and ES256 tokens fail until a restart or POST /admin/signing-keys/rotate');
  }
}

/** The state and how changes reach it durably: the embedded log, or the cluster's stream. */
interface Store {
  readonly state: State;
  readonly committer: Commits;
  readonly snapshots: { snapshot(): Promise<SnapshotWritten | undefined> };
  readonly persistence?: Persistence;
  readonly cluster?: {
    readonly readiness: NodeReadiness; readonly conflicts: number; readonly refused: number; readonly rejected: Readonly<Record<RejectedKind, number>>;
  };
  readiness(): NodeReadiness | Promise<NodeReadiness>;
  /** Cluster mode: see PipelineDeps.strongRead. */
  readonly strongRead?: (waitMs?: number) => Promise<void>;
  /** Cluster mode: the limiter's failures shared with the other nodes, and theirs counted (src/cluster/shared-failures.ts). */
  readonly shareFailures?: (limiter: BruteForceLimiter) => SharedFailures;
  close(): Promise<void>;
}

async function openEmbedded(config: Config, logger: Logger, clock: MicrosClock, identity: Identity, onFailure: () => void): Promise<Store> {
  // Test-only kill points and disk faults (src/persist/fault-injection.ts); undefined, and so absent, unless set.
  const faults = faultSettingsFromEnv(process.env);
  const { state, persistence } = await openPersistence({
    dir: config.dataDir, fsync: config.fsync, createState: () => new State(), logger,
    snapshotEveryRecords: config.snapshotEveryRecords, snapshotEverySeconds: config.snapshotEverySeconds,
    storage: faults === undefined ? undefined : withFaults(new NodeStorage(), faults),
  });
  // A failed fsync fails the log for good: exit at once, not only when a request next meets it.
  persistence.setFailureListener(onFailure);
  clock.notBefore(state.lastAt);
  return {
    state, committer: new Committer(state, persistence, clock, identity), snapshots: persistence, persistence,
    readiness: () => 'ready', close: () => persistence.close(),
  };
}

async function openCluster(config: Config, cluster: ClusterConfig, logger: Logger, clock: MicrosClock, identity: Identity, secrets: ApiKeySecrets): Promise<Store> {
  // Loaded only in cluster mode: the NATS client's modules would lengthen every embedded start for nothing.
  const [{ ClusterNode }, { ClusterCommitter }, { shareFailures }, { ClusterSeal, clusterSealSubkeyLabel }, { RejectedMessages }] = await Promise.all([
    import('./cluster/cluster-node.js'), import('./cluster/cluster-committer.js'), import('./cluster/shared-failures.js'),
    import('./cluster/seal.js'), import('./cluster/rejected.js'),
  ]);
  // Everything this node puts on NATS is sealed under a subkey of the server key every node shares (docs/cluster.md).
  const seal = new ClusterSeal(secrets.subkey(clusterSealSubkeyLabel));
  const rejected = new RejectedMessages(logger);
  const node = await ClusterNode.open({
    cluster, dataDir: config.dataDir, keyFingerprint: secrets.fingerprint(), seal, rejected, logger,
    snapshotEveryRecords: config.snapshotEveryRecords, snapshotEverySeconds: config.snapshotEverySeconds,
    onFatal: (err) => {
      logger.fatal({ err: err.message }, 'cannot go on following the cluster log; exiting so that a restart loads it again');
      setTimeout(() => process.exit(1), 100);
    },
  });
  logger.info({ stream: cluster.stream, node: cluster.nodeId, fromSeq: node.state.lastSeq + 1 }, 'following the cluster log');
  await node.caughtUp();
  clock.notBefore(node.state.lastAt);
  const committer = new ClusterCommitter(node.state, node.replica, node.writer, clock, identity, (seq) => node.readerDiverged(seq));
  return {
    state: node.state, committer, snapshots: node,
    cluster: {
      get readiness() { return node.readiness; }, get conflicts() { return committer.conflicts; }, get refused() { return committer.refused; },
      rejected: rejected.counts,
    },
    readiness: () => node.probeReadiness(), strongRead: (waitMs) => node.syncPoint(waitMs), close: () => node.close(),
    shareFailures: (limiter) => shareFailures(node.log.connection, cluster.stream, limiter, seal, rejected),
  };
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(usage());
    return;
  }
  if (argv.includes('--version')) {
    process.stdout.write(`authd ${packageVersion() ?? '(unknown version)'}\n`);
    return;
  }
  const config = loadConfig(process.env, argv);
  // Checked before anything is created, though only a first start uses it.
  adminEmailOf(config);
  const { logger, out } = createLogger(config.logLevel);
  if (config.repair) {
    // --repair: fix what recovery refuses (back up, cut at the damage), say what was dropped, and stop.
    const report = await repairDataDir({ dir: config.dataDir, createState: () => new State(), logger });
    process.stderr.write(`authd --repair:\n${describeRepair(report)}\n`);
    logger.flush();
    setTimeout(() => process.exit(0), 50);
    return;
  }
  // Before any data is touched: a server that will not serve must not bootstrap a data directory either.
  const frontEnd = chooseFrontEnd(config.frontEnd);
  logger.info({ frontEnd: frontEnd.kind, build: frontEnd.build, reason: frontEnd.reason, node: process.versions.node }, 'front end');
  // The port is taken before anything else for the same reason (it may be in use); until the service is ready,
  // every request is answered 503 `starting`.
  const requestLogOn = logger.isLevelEnabled('info');
  let handle: ((req: HttpRequest) => ReturnType<ReturnType<typeof createPipeline>>) | undefined;
  /** Set once the service is ready: requests answered `starting` before then are not counted. */
  let requestMetrics: Metrics | undefined;
  const server: RunningServer = await frontEnd.start({
    host: config.host, port: config.port, bodyBytesMax: config.bodyBytesMax, bodyReceiveTimeoutMs,
    handler: (req) => (handle === undefined ? errorReply(req, 'starting') : handle(req)),
    onFinished: (req, status, ms, route) => {
      requestMetrics?.requestFinished(route, status, ms);
      // Checked first: the line's object would be built (and thrown away) on every request at LOG_LEVEL=warn.
      if (requestLogOn) logger.info({ method: req.method, path: logSafe(req.path.slice(0, 512)), status, ms: Math.round(ms * 1000) / 1000 }, 'request');
    },
    earlyReply: (kind) => errorReply({ startedAt: performance.now() } as HttpRequest, kind),
  });
  // Also before any data is touched: a missing or different server key refuses the start (src/service/server-key.ts).
  const secrets = await loadServerKey({ dataDir: config.dataDir, keyFile: config.keyFile, keyValue: config.serverKey, logger });
  const pool = new HashPool({ workers: config.hashWorkers, queueMax: hashQueueMax, argon2: config.argon2 });

  const started = performance.now();
  const clock = new MicrosClock();
  const identity = { newId: newEntityId, newApikeyId, newNonce: () => secrets.newNonce() };
  let shuttingDown = false;
  const exitOnStorageFailure = (): void => {
    if (shuttingDown) return;
    shuttingDown = true;
    // Memory now holds changes the log may not: stop at once and let recovery rebuild from what is durable.
    logger.fatal('the write-ahead log failed; exiting so that recovery restarts from durable state');
    setTimeout(() => process.exit(1), 100);
  };
  const store = config.cluster === undefined
    ? await openEmbedded(config, logger, clock, identity, exitOnStorageFailure)
    : await openCluster(config, config.cluster, logger, clock, identity, secrets);
  const { state, committer } = store;
  logger.info({ ...state.counts(), lastSeq: state.lastSeq, ms: Math.round(performance.now() - started) }, 'state recovered');
  const sharedEmails = state.sharedEmailKeys();
  if (sharedEmails.length > 0) {
    // Stored before emails were keyed NFC and case-folded per code point: a sign-in by that address finds the oldest.
    logger.warn({ count: sharedEmails.length, userIds: sharedEmails.slice(0, 10).map((shared) => shared.userIds) }, 'Users sharing one email key: sign-in by email finds the oldest; change or delete the others');
  }
  const sharedNames = state.sharedApplicationNames();
  if (sharedNames.length > 0) {
    // Stored before Application names were unique: each keeps working; a new duplicate is refused (docs/api.md).
    logger.warn({ count: sharedNames.length, applicationIds: sharedNames.slice(0, 10).map((shared) => shared.applicationIds) }, 'Applications sharing one name: rename all but one');
  }

  // Derived indexes a load leaves (memberships, trigram postings) are built in small steps, for indexTurnMs of a
  // turn, while the service answers: a read of memberships finishes theirs at once, searches fall back to a scan.
  const driveIndexes = (): void => {
    const until = performance.now() + indexTurnMs;
    let more = state.indexing;
    while (more && (more = state.indexStep()) && performance.now() < until);
    if (more) setImmediate(driveIndexes);
    else setTimeout(driveIndexes, searchIndexIdleCheckMs).unref();
  };
  driveIndexes();

  // Audit lines are written at info whatever LOG_LEVEL says (only `silent` turns them off): the trail is not verbosity.
  const audit = new Audit(config.logLevel === 'silent' ? undefined : out);
  if (state.meta === undefined) {
    // In a cluster another node may bootstrap first: its admin is the one, and this node's attempt is refused.
    await firstStart(config, pool, committer, logger, audit).catch((err: unknown) => {
      if (state.meta === undefined) throw err;
    });
  }

  const cache = new VerifyCache({ ttlMs: config.verifyCacheTtlMs, idleMs: config.verifyCacheIdleMs, entriesMax: verifyCacheEntriesMax });
  const limiter = new BruteForceLimiter(config.bruteForce);
  const sharedFailures = store.shareFailures?.(limiter);
  // Pairs that succeeded before a restart stay trusted through it (src/auth/trusted-pairs-file.ts).
  limiter.useTrustKey(secrets.subkey('authd-trusted-pairs-v2'));
  const trustedPairs = new TrustedPairsFile({ dataDir: config.dataDir, limiter, logger });
  trustedPairs.load();
  trustedPairs.start(trustedPairsSaveIntervalMs);
  const authenticator = new Authenticator(state, pool, cache, secrets, committer, config.argon2, logger, { limiter, audit });

  const runtime = new RuntimeStats();
  runtime.start();
  const metrics = new Metrics({
    counts: () => state.counts(), get lastSeq() { return state.lastSeq; }, hashQueueDepth: () => pool.queueDepth, hashWorkers: pool.workers, searchIndexBuilding: () => state.search.building, persistence: store.persistence, cluster: store.cluster,
    runtime, renderCacheBytes: () => renderer.cacheBytes, verifyCache: cache,
  });
  requestMetrics = metrics;

  const publicUrl = config.publicUrl ?? defaultPublicUrl(config.host, server.port);
  const renderer = new Renderer(publicUrl, state);
  const tokens = new TokenService(state, new Sealer(secrets.subkey(sealerSubkeyLabel)), publicUrl, clock);
  await ensureSigningKeys(tokens, committer, logger);
  metrics.registerRoutes(routeTable);
  const counted = (caller: CallerAnswer): CallerAnswer => {
    // Shed (the hash queue is full): not evaluated, so not counted.
    if (!(caller instanceof OverloadedError)) metrics.callerChecked(caller !== undefined);
    return caller;
  };
  handle = createPipeline(routeTable, {
    realm: config.realm,
    routeDeps: { state, committer, authenticator, renderer, pool, secrets, tokens, snapshots: store.snapshots, metrics, readiness: store.readiness },
    strongRead: store.strongRead,
    audit: (entry) => audit.record(entry),
    caller: (username, password, address, authorization) => whenReady(authenticator.caller(username, password, address, authorization), counted),
    knownCaller: (authorization, address) => {
      const caller = authenticator.knownCaller(authorization, address);
      if (caller !== undefined) metrics.callerChecked(true);
      return caller;
    },
    onUnexpected: (err, req) => {
      // A failed write was cut back (from the log and from memory): refuse this change, keep serving.
      if (err instanceof WalError && err.code === 'wal_cut_back') return 'storage_unavailable';
      if (err instanceof WalError) {
        exitOnStorageFailure();
        return 'storage_unavailable';
      }
      logger.error({ err, method: req.method, path: logSafe(req.path.slice(0, 512)) }, 'unexpected error');
      return 'internal';
    },
  });
  logger.info({ port: server.port, host: config.host, publicUrl, fsync: config.fsync, dataDir: config.dataDir, cluster: config.cluster?.stream ?? null, node: config.cluster?.nodeId ?? null }, 'listening');
  // Token code is loaded on first use, off the start-up path; where tokens are on, now, so a login does not wait for it.
  if ([...state.allApplications()].some((app) => app.tokens?.enabled === true)) setImmediate(() => void jose());

  const shutdown = async (signal: string): Promise<void> => {
    if (shuttingDown) return;
    shuttingDown = true;
    logger.info({ signal }, 'shutting down: finishing in-flight requests');
    await server.close(shutdownGraceMs);
    sharedFailures?.stop();
    await trustedPairs.close().catch((err: unknown) => logger.warn({ err: err instanceof Error ? err.message : 'unknown' }, 'trusted pairs not saved'));
    await store.close();
    await pool.close();
    runtime.stop();
    logger.info('stopped cleanly');
    logger.flush();
    setTimeout(() => process.exit(0), 50);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

main().catch((err: unknown) => {
  const message = err instanceof Error ? err.message : String(err);
  process.stderr.write(`authd: cannot start: ${message}\n`);
  process.exit(err instanceof ConfigError || err instanceof FrontEndError ? 2 : 1);
});
