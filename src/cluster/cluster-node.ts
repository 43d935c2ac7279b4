// One node of a cluster: connects to the stream, checks the server key against the cluster's, loads the newest local snapshot, follows the stream from there, and takes local snapshots.

import { dirname, resolve } from 'node:path';
import { Objm, type ObjectStore } from '@nats-io/obj';
import { ConfigError, type ClusterConfig } from '../config/config.js';
import { snapshotsKept } from '../config/limits.js';
import { restrictDataDir } from '../persist/dir-mode.js';
import { classifyDir } from '../persist/layout.js';
import { acquireLock, type DirLock } from '../persist/lock.js';
import type { PersistLogger } from '../persist/replayable.js';
import { readSnapshotChunks, SnapshotError, writeSnapshot, type SnapshotWritten } from '../persist/snapshot.js';
import { NodeStorage, type Storage } from '../persist/storage.js';
import { State } from '../store/state.js';
import { Replica } from './replica.js';
import { StreamLog, type StreamFollower } from './stream-log.js';

const timerMsMax = 2 ** 31 - 1;

export interface ClusterNodeOptions {
  readonly cluster: ClusterConfig;
  readonly dataDir: string;
  /** The server key's fingerprint (ApiKeySecrets.fingerprint()): every node of a cluster must have the same. */
  readonly keyFingerprint: string;
  readonly logger: PersistLogger;
  readonly snapshotEveryRecords: number;
  readonly snapshotEverySeconds: number;
  /** Told once when this node cannot go on following the stream (an invalid message, a gap): exit and start again. */
  readonly onFatal: (err: Error) => void;
}

export type Readiness = 'catching_up' | 'ready' | 'degraded';

export class ClusterNode {
  #follower: StreamFollower | undefined;
  /** The stream's last sequence when this node started: ready once applied. */
  #startSeq = 0;
  #snapshotRunning: Promise<SnapshotWritten | undefined> | undefined;
  #newestSnapshotSeq: number;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;

  private constructor(
    readonly state: State,
    readonly replica: Replica,
    readonly log: StreamLog,
    private readonly lock: DirLock,
    private readonly storage: Storage,
    private readonly opts: ClusterNodeOptions,
    snapshotSeq: number,
  ) {
    this.#newestSnapshotSeq = snapshotSeq;
  }

  /** Everything up to following the stream; await caughtUp() before serving. */
  static async open(opts: ClusterNodeOptions): Promise<ClusterNode> {
    const { cluster, dataDir, logger } = opts;
    const storage = new NodeStorage();
    let connected = true;
    const log = await StreamLog.open({
      servers: cluster.servers, stream: cluster.stream, replicas: cluster.replicas, nodeId: cluster.nodeId,
      onConnection: (now) => {
        if (now === connected) return;
        connected = now;
        if (now) logger.info({ stream: cluster.stream }, 'reconnected to NATS');
        else logger.warn({ stream: cluster.stream }, 'lost the connection to NATS: writes answer 503, reads and authentications go on');
      },
    });
    let lock: DirLock | undefined;
    try {
      await checkClusterKey(await clusterBucket(log, cluster.stream, cluster.replicas), opts.keyFingerprint);
      await storage.mkdirp(dataDir);
      restrictDataDir(dataDir, logger);
      await storage.fsyncDir(dirname(resolve(dataDir)));
      lock = await acquireLock(storage, dataDir);
      const { state, snapshotSeq } = await loadNewestSnapshot(storage, dataDir, logger);
      const firstSeq = await log.firstSeq();
      if (firstSeq > state.lastSeq + 1 && state.lastSeq > 0) {
        throw new Error(`the stream starts at sequence ${firstSeq}, after this node's snapshot at ${state.lastSeq}: start it with an empty data directory to load the cluster's snapshot`);
      }
      const node = new ClusterNode(state, new Replica(state), log, lock, storage, opts, snapshotSeq);
      await node.#start();
      return node;
    } catch (err) {
      await lock?.release().catch(() => undefined);
      await log.close().catch(() => undefined);
      throw err;
    }
  }

  /** Resolves once this node has applied everything the stream held when it started. */
  caughtUp(): Promise<void> {
    return this.replica.applied(this.#startSeq);
  }

  get readiness(): Readiness {
    if (this.replica.appliedSeq < this.#startSeq) return 'catching_up';
    return this.log.connected ? 'ready' : 'degraded';
  }

  /** For a strongly consistent read: resolves once this node has applied what the stream holds now. */
  async syncPoint(): Promise<void> {
    await this.replica.applied(await this.log.lastSeq());
  }

  /** Takes a local snapshot now, unless one is running (that one) or nothing was applied since the newest (undefined). */
  snapshot(): Promise<SnapshotWritten | undefined> {
    this.#snapshotRunning ??= this.#takeSnapshot().finally(() => {
      this.#snapshotRunning = undefined;
      this.#armTimer();
    });
    return this.#snapshotRunning;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#follower?.stop();
    try {
      await this.#snapshotRunning?.catch(() => undefined);
      await this.snapshot().catch(() => undefined);
      await this.log.close();
    } finally {
      await this.lock.release();
    }
  }

  async #start(): Promise<void> {
    this.#startSeq = await this.log.lastSeq();
    let sinceSnapshot = 0;
    this.#follower = await this.log.follow(this.state.lastSeq + 1, (seq, data) => {
      if (this.#closed) return;
      try {
        this.replica.receive(seq, data);
      } catch (err) {
        this.#closed = true;
        this.#follower?.stop();
        this.opts.onFatal(err as Error);
        return;
      }
      if (++sinceSnapshot >= this.opts.snapshotEveryRecords && this.#snapshotRunning === undefined) {
        sinceSnapshot = 0;
        this.snapshot().catch(() => undefined);
      }
    });
    this.#armTimer();
  }

  async #takeSnapshot(): Promise<SnapshotWritten | undefined> {
    const source = this.state.snapshotSource();
    if (source.baseSeq === this.#newestSnapshotSeq || source.baseSeq === 0) return undefined;
    const { dataDir, logger } = this.opts;
    try {
      // Fuzzy like the embedded one: records after baseSeq are in the stream, and a load replays them from baseSeq + 1.
      const written = await writeSnapshot(this.storage, dataDir, source);
      this.#newestSnapshotSeq = written.baseSeq;
      logger.info({ file: written.path, baseSeq: written.baseSeq, entities: written.entities, bytes: written.bytes, ms: Math.round(written.durationMs) }, 'snapshot written');
      await this.#removeOldSnapshots();
      return written;
    } catch (err) {
      logger.error({ err, baseSeq: source.baseSeq }, 'snapshot failed; the stream still holds every change');
      throw err;
    }
  }

  async #removeOldSnapshots(): Promise<void> {
    const { dataDir, logger } = this.opts;
    try {
      const { snapshots } = classifyDir(dataDir, await this.storage.list(dataDir));
      for (const old of snapshots.slice(snapshotsKept)) await this.storage.unlink(old.path);
    } catch (err) {
      logger.warn({ err }, 'could not remove old snapshots');
    }
  }

  #armTimer(): void {
    clearTimeout(this.#timer);
    if (this.#closed) return;
    this.#timer = setTimeout(() => void this.snapshot().catch(() => undefined), Math.min(this.opts.snapshotEverySeconds * 1000, timerMsMax));
    this.#timer.unref();
  }
}

/** The cluster's Object Store bucket: the server key's fingerprint (and the snapshots nodes share). */
export async function clusterBucket(log: StreamLog, stream: string, replicas: number): Promise<ObjectStore> {
  return new Objm(log.connection).create(`${stream}-cluster`, { storage: 'file', replicas });
}

const keyFingerprintObject = 'key-fingerprint';

/** The first node records its key's fingerprint; every later one must have the same key. */
export async function checkClusterKey(bucket: ObjectStore, fingerprint: string): Promise<void> {
  const held = await bucket.getBlob(keyFingerprintObject);
  if (held === null) {
    await bucket.putBlob({ name: keyFingerprintObject }, Buffer.from(fingerprint, 'latin1'));
    return;
  }
  const cluster = Buffer.from(held).toString('latin1');
  if (cluster !== fingerprint) {
    throw new ConfigError(`this node's server key (fingerprint ${fingerprint}) is not the cluster's (fingerprint ${cluster}): give every node the same KEY_FILE or SERVER_KEY`);
  }
}

/** The newest valid local snapshot loaded into a new State, or an empty State when there is none. */
async function loadNewestSnapshot(storage: Storage, dir: string, logger: PersistLogger): Promise<{ state: State; snapshotSeq: number }> {
  const { snapshots } = classifyDir(dir, await storage.list(dir));
  for (const snapshot of snapshots) {
    const state = new State();
    try {
      const summary = await readSnapshotChunks(storage, snapshot.path, (kind, values) => state.loadSection(kind, values));
      state.finishLoad(summary.baseSeq);
      logger.info({ file: snapshot.path, baseSeq: summary.baseSeq }, 'loaded the local snapshot');
      return { state, snapshotSeq: summary.baseSeq };
    } catch (err) {
      if (!(err instanceof SnapshotError)) throw err;
      logger.warn({ file: snapshot.path, reason: err.message }, 'local snapshot invalid; trying an older one');
    }
  }
  return { state: new State(), snapshotSeq: 0 };
}
