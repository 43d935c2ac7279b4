// One node of a cluster: connects to the stream, checks the server key against the cluster's (and that the cluster is sealed), loads the newest snapshot (local, else the cluster's), follows the stream from there, answers what the stream's leader says it holds (barriers: strong reads, readiness), and takes snapshots (local, and the cluster's, below which the stream is purged).
//
// What the stream holds now is asked of its leader alone, by a barrier: a sealed message with no record, published
// expecting the sequence this node has applied, which only the leader stores (once a quorum did) or refuses naming the
// stream's last. Stream info will not do: while the stream has no leader any replica answers it, with a last sequence
// that may be behind what was acknowledged.

import { randomBytes } from 'node:crypto';
import { dirname, resolve } from 'node:path';
import { ConfigError, type ClusterConfig } from '../config/config.js';
import {
  clusterBarrierAttemptsMax, clusterFollowCheckMs, clusterPublishRetryMs, clusterReadyLagMs, clusterReadyProbeMs, clusterSnapshotsKept, clusterStartWaitMs, clusterStrongReadWaitMs,
  snapshotsKept, unavailableRetryAfterS,
} from '../config/limits.js';
import { packageVersion } from '../config/package-version.js';
import { DomainError } from '../domain/errors.js';
import { restrictDataDir } from '../persist/dir-mode.js';
import { classifyDir } from '../persist/layout.js';
import { acquireLock, type DirLock } from '../persist/lock.js';
import type { PersistLogger } from '../persist/replayable.js';
import { readSnapshotFile, SnapshotError, writeSnapshot, type SnapshotWritten } from '../persist/snapshot.js';
import { NodeStorage, type ReadableFile, type Storage } from '../persist/storage.js';
import { State } from '../store/state.js';
import type { StreamWriter } from './cluster-committer.js';
import { serveNodeStatus, type NodeReadiness } from './node-status.js';
import type { RejectedMessages } from './rejected.js';
import { isUnsealedMessage, Replica } from './replica.js';
import { LogSeal, sealedMessageId, sealOverheadBytes, type ClusterSeal } from './seal.js';
import { SnapshotBucket, SnapshotSealError } from './snapshot-bucket.js';
import { StreamLog, StreamUnavailableError, whileUnavailable, within, WrongLastSequenceError, type StreamFollower } from './stream-log.js';

const timerMsMax = 2 ** 31 - 1;

export interface ClusterNodeOptions {
  readonly cluster: ClusterConfig;
  readonly dataDir: string;
  /** The server key's fingerprint (ApiKeySecrets.fingerprint()): every node of a cluster must have the same. */
  readonly keyFingerprint: string;
  /** Seals and opens everything on NATS: ApiKeySecrets.subkey(clusterSealSubkeyLabel) (src/cluster/seal.ts). */
  readonly seal: ClusterSeal;
  /** Told of every message that does not open (authd_cluster_rejected_messages_total). */
  readonly rejected: RejectedMessages;
  readonly logger: PersistLogger;
  readonly snapshotEveryRecords: number;
  readonly snapshotEverySeconds: number;
  /** Told once when this node cannot go on following the stream (an invalid message, a gap): exit and start again. */
  readonly onFatal: (err: Error) => void;
}


export class ClusterNode {
  /** The stream as the committer writes it: each message sealed, its records carrying the sequence they are for. */
  readonly writer: StreamWriter;
  #follower: StreamFollower | undefined;
  /** A barrier's sequence when this node started: ready once applied. */
  #startSeq = 0;
  /** The highest sequence the stream's leader has given this node (acknowledgements, barriers, refusals): its reader must get there. */
  #leaderSeq = 0;
  /** The barrier not yet published: every strong read and catch-up asked for in this turn waits for the same one. */
  #nextBarrier: Promise<number> | undefined;
  /** Barriers' message ids: this process's random prefix and a counter (a retry of one is stored once). */
  readonly #barrierIdPrefix = `b${randomBytes(9).toString('base64url')}`;
  #barriers = 0;
  /** The readiness the last barrier found, and when (performance.now()); the one being found. */
  #probed: { readonly readiness: NodeReadiness; readonly atMs: number } | undefined;
  #probing: Promise<NodeReadiness> | undefined;
  #snapshotRunning: Promise<SnapshotWritten | undefined> | undefined;
  #newestSnapshotSeq: number;
  #timer: NodeJS.Timeout | undefined;
  #watchTimer: NodeJS.Timeout | undefined;
  #status: { stop(): void } | undefined;
  #closed = false;

  private constructor(
    readonly state: State,
    readonly replica: Replica,
    readonly log: StreamLog,
    private readonly bucket: SnapshotBucket,
    private readonly lock: DirLock,
    private readonly storage: Storage,
    private readonly opts: ClusterNodeOptions,
    snapshotSeq: number,
  ) {
    this.#newestSnapshotSeq = snapshotSeq;
    this.writer = {
      // Sealed once, outside StreamLog.publish's retries: a retry sends the very same bytes under the same message id.
      seal: (frames) => {
        const payload = replica.seal.close(frames);
        return { payload, id: sealedMessageId(payload) };
      },
      publish: async (message, expectedLastSeq, msgId) => {
        try {
          const seq = await log.publish(message.payload, expectedLastSeq, msgId);
          this.#sawLeaderSeq(seq);
          return seq;
        } catch (err) {
          if (err instanceof WrongLastSequenceError && err.lastSeq !== undefined) this.#sawLeaderSeq(err.lastSeq);
          throw err;
        }
      },
      get maxPayloadBytes() { return log.maxPayloadBytes - sealOverheadBytes; },
      barrier: () => this.barrier(),
    };
  }

  /** Everything up to following the stream; await caughtUp() before serving. */
  static async open(opts: ClusterNodeOptions): Promise<ClusterNode> {
    const { cluster, dataDir, logger } = opts;
    const storage = new NodeStorage();
    const log = await StreamLog.open({
      servers: cluster.servers, nats: cluster.nats, stream: cluster.stream, replicas: cluster.replicas, nodeId: cluster.nodeId, startWaitMs: clusterStartWaitMs,
      onConnection: (now) => {
        if (now) logger.info({ stream: cluster.stream }, 'reconnected to NATS');
        else logger.warn({ stream: cluster.stream }, 'lost the connection to NATS: writes answer 503, reads and authentications go on');
      },
    });
    let lock: DirLock | undefined;
    try {
      const bucket = await whileUnavailable(async () => {
        const opened = await SnapshotBucket.open(log.connection, cluster.stream, cluster.replicas, opts.seal);
        await opened.checkKey(opts.keyFingerprint, () => holdsUnsealed(log));
        return opened;
      }, clusterStartWaitMs, (err) => err instanceof ConfigError);
      await storage.mkdirp(dataDir);
      restrictDataDir(dataDir, logger);
      await storage.fsyncDir(dirname(resolve(dataDir)));
      lock = await acquireLock(storage, dataDir);
      const { state, snapshotSeq } = await whileUnavailable(() => loadSnapshot(storage, dataDir, log, bucket, logger, opts.rejected), clusterStartWaitMs);
      const replica = new Replica(state, new LogSeal(opts.seal, cluster.stream, log.subject), opts.rejected);
      const node = new ClusterNode(state, replica, log, bucket, lock, storage, opts, snapshotSeq);
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

  /** Readiness as last found (metrics, cluster status): catching up at start, degraded without NATS, else the last probe's. */
  get readiness(): NodeReadiness {
    if (this.replica.appliedSeq < this.#startSeq) return 'catching_up';
    if (!this.log.connected) return 'degraded';
    return this.#probed?.readiness ?? 'ready';
  }

  /**
   * GET /health/ready: ready only when this node applies, within clusterReadyLagMs, a barrier published after the
   * question; catching_up when it does not; degraded when no leader gives one (this node could not commit a write).
   * One barrier answers every question asked within clusterReadyProbeMs of it.
   */
  probeReadiness(): NodeReadiness | Promise<NodeReadiness> {
    if (this.replica.appliedSeq < this.#startSeq || !this.log.connected) return this.readiness;
    const probed = this.#probed;
    if (probed !== undefined && performance.now() - probed.atMs < clusterReadyProbeMs) return probed.readiness;
    this.#probing ??= this.#probe().finally(() => { this.#probing = undefined; });
    return this.#probing;
  }

  async #probe(): Promise<NodeReadiness> {
    let readiness: NodeReadiness;
    try {
      const { seq } = await within(this.#askLeader(), clusterStrongReadWaitMs, () => new StreamUnavailableError('no answer from a leader in time'));
      readiness = await within(this.replica.applied(seq).then((): NodeReadiness => 'ready'), clusterReadyLagMs, () => new Error('behind'))
        .catch((): NodeReadiness => 'catching_up');
    } catch {
      readiness = 'degraded';
    }
    this.#probed = { readiness, atMs: performance.now() };
    return readiness;
  }

  /**
   * The stream's last sequence as its leader says: a barrier published expecting `expected` (by default the sequence
   * this node has applied). committed when the leader stored it there (a quorum did: no other leader can have stored
   * anything past it); otherwise the leader refused it and named the stream's last sequence, which a leader that does
   * not yet know it was replaced may still do. Never a publish without an expected sequence: nats-server 2.9.10 has stored such
   * messages differently on different replicas.
   */
  async #askLeader(expected = this.replica.appliedSeq): Promise<{ readonly seq: number; readonly committed: boolean }> {
    try {
      const seq = await this.log.publish(this.replica.seal.close([]), expected, `${this.#barrierIdPrefix}-${++this.#barriers}`);
      this.#sawLeaderSeq(seq);
      return { seq, committed: true };
    } catch (err) {
      if (!(err instanceof WrongLastSequenceError) || err.lastSeq === undefined) throw err;
      this.#sawLeaderSeq(err.lastSeq);
      return { seq: err.lastSeq, committed: false };
    }
  }

  /**
   * A sequence the stream's leader committed after this call: a barrier, shared by every call of the same turn
   * (published once the turn's I/O is done), so that one serves a burst of strong reads. While other nodes write, the
   * leader refuses it naming the stream's last, and it is published again expecting that, up to
   * clusterBarrierAttemptsMax times. Rejects at once without NATS.
   */
  barrier(): Promise<number> {
    if (!this.log.connected) return Promise.reject(new StreamUnavailableError('not connected to NATS'));
    this.#nextBarrier ??= new Promise<number>((resolve, reject) => {
      setImmediate(() => {
        this.#nextBarrier = undefined;
        this.#commitBarrier().then(resolve, reject);
      });
    });
    return this.#nextBarrier;
  }

  async #commitBarrier(): Promise<number> {
    let expected = this.replica.appliedSeq;
    for (let attempt = 1; ; attempt++) {
      const { seq, committed } = await this.#askLeader(expected);
      if (committed) return seq;
      if (attempt >= clusterBarrierAttemptsMax) throw new StreamUnavailableError('the stream kept moving: no barrier committed');
      // Behind what it expected: a leader that was replaced and does not know it yet; ask again shortly.
      if (seq < expected) await new Promise((resolve) => setTimeout(resolve, clusterPublishRetryMs));
      expected = Math.max(seq, this.replica.appliedSeq);
    }
  }

  /**
   * For a strongly consistent read (and before a 404 is final): resolves once this node has applied a barrier
   * published after the call. Rejects with a 503 when no leader gives one, or the node has not applied it within waitMs.
   */
  async syncPoint(waitMs = clusterStrongReadWaitMs): Promise<void> {
    try {
      await within(this.barrier().then((seq) => this.replica.applied(seq)), waitMs, () => new Error('not applied in time'));
    } catch {
      throw new DomainError('storage_unavailable', 'This node cannot give a strongly consistent read right now (the cluster log has no leader, or this node is behind it); retry later.', { retryAfterS: unavailableRetryAfterS });
    }
  }

  /**
   * The stream's leader stored this node's message at seq, where this node's reader holds another: the replica it
   * reads from diverged. The reader starts again (its new consumer may be placed on another replica); what it applied
   * from that replica may differ from the other nodes' state, so an operator should start this node on an empty
   * data directory.
   */
  readerDiverged(seq: number): void {
    this.opts.logger.error({ seq }, 'this node\'s stream reader holds another message than the leader stored (a replica diverged): restart this node on an empty data directory; starting the reader again meanwhile');
    this.#follower?.restart();
  }

  #sawLeaderSeq(seq: number): void {
    if (seq > this.#leaderSeq) this.#leaderSeq = seq;
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
    clearTimeout(this.#watchTimer);
    this.#follower?.stop();
    this.#status?.stop();
    try {
      await this.#snapshotRunning?.catch(() => undefined);
      await this.snapshot().catch(() => undefined);
      await this.log.close();
    } finally {
      await this.lock.release();
    }
  }

  async #start(): Promise<void> {
    let sinceSnapshot = 0;
    this.#follower = await whileUnavailable(() => this.log.follow(this.state.lastSeq + 1, (seq, data) => {
      if (this.#closed) return;
      try {
        // Counted in ops, not messages: one message of `authctl cluster init` holds thousands of Users.
        sinceSnapshot += this.replica.receive(seq, data);
      } catch (err) {
        this.#closed = true;
        this.#follower?.stop();
        this.opts.onFatal(err as Error);
        return;
      }
      if (sinceSnapshot >= this.opts.snapshotEveryRecords && this.#snapshotRunning === undefined) {
        sinceSnapshot = 0;
        this.snapshot().catch(() => undefined);
      }
    }), clusterStartWaitMs);
    // What the stream holds as its leader says, retried while there is none (an election, servers restarting).
    this.#startSeq = (await whileUnavailable(() => this.#askLeader(), clusterStartWaitMs)).seq;
    this.#armTimer();
    this.#watch();
    // Answers `authctl cluster status` (src/cluster/node-status.ts).
    const { stream, nodeId } = this.opts.cluster;
    const startedAt = new Date().toISOString();
    const version = packageVersion() ?? null;
    this.#status = serveNodeStatus(this.log.connection, stream, nodeId, () => ({
      node: nodeId, applied_seq: this.replica.appliedSeq, readiness: this.readiness, version, started_at: startedAt,
    }), this.opts.seal, this.opts.rejected);
  }

  /**
   * Restarts the stream's reader when the stream is ahead of this node (as its leader said, or stream info: a hint,
   * which may be behind) and nothing was applied since the last look.
   */
  #watch(): void {
    let seen = this.replica.appliedSeq;
    const check = async (): Promise<void> => {
      if (this.#closed) return;
      const applied = this.replica.appliedSeq;
      if (applied === seen && this.log.connected) {
        const last = Math.max(this.#leaderSeq, await this.log.lastSeq().catch(() => applied));
        if (last > applied && this.replica.appliedSeq === applied) {
          this.opts.logger.warn({ applied, streamLastSeq: last }, 'no progress reading the stream; starting the reader again');
          this.#follower?.restart();
        }
      }
      seen = this.replica.appliedSeq;
    };
    const tick = (): void => {
      void check().finally(() => {
        if (!this.#closed) this.#watchTimer = setTimeout(tick, clusterFollowCheckMs).unref();
      });
    };
    this.#watchTimer = setTimeout(tick, clusterFollowCheckMs).unref();
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
      await this.#share(written);
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

  /**
   * Puts the snapshot in the cluster's bucket when the bucket's newest is older by at least half the snapshot period
   * (so that not every node uploads every one), then purges the stream below the oldest snapshot the bucket keeps.
   */
  async #share(written: SnapshotWritten): Promise<void> {
    const { logger, snapshotEveryRecords } = this.opts;
    // Without NATS the bucket cannot answer; a later snapshot shares.
    if (!this.log.connected) return;
    try {
      const held = await this.bucket.snapshotSeqs();
      if (held.length > 0 && written.baseSeq - held[0]! < snapshotEveryRecords / 2) return;
      const kept = await this.bucket.put(written.path, written.baseSeq);
      if (kept.length >= clusterSnapshotsKept) {
        const below = kept[kept.length - 1]! + 1;
        await this.log.purgeBelow(below);
        logger.info({ baseSeq: written.baseSeq, purgedBelow: below }, 'snapshot shared with the cluster; stream purged below the oldest kept');
      } else logger.info({ baseSeq: written.baseSeq }, 'snapshot shared with the cluster');
    } catch (err) {
      // The stream still holds every change; a later snapshot tries again.
      logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'could not share the snapshot with the cluster');
    }
  }

  #armTimer(): void {
    clearTimeout(this.#timer);
    if (this.#closed) return;
    this.#timer = setTimeout(() => void this.snapshot().catch(() => undefined), Math.min(this.opts.snapshotEverySeconds * 1000, timerMsMax));
    this.#timer.unref();
  }
}

/** Whether the stream's first message is in the form of an earlier version that sealed nothing: a cluster it wrote. */
async function holdsUnsealed(log: StreamLog): Promise<boolean> {
  const { state } = await log.info();
  if (state.messages === 0) return false;
  const first = await log.message(state.first_seq);
  return first !== undefined && isUnsealedMessage(state.first_seq, first);
}

/**
 * The newest valid local snapshot the stream can continue (its messages from the snapshot's sequence on are still
 * there, and it is not past the stream's last: one of another stream), else the cluster's newest from the bucket that
 * opens, else an empty state that replays the stream from its start.
 */
async function loadSnapshot(
  storage: Storage, dir: string, log: StreamLog, bucket: SnapshotBucket, logger: PersistLogger, rejected: RejectedMessages,
): Promise<{ state: State; snapshotSeq: number }> {
  const { first_seq: firstSeq, last_seq: lastSeq } = (await log.info()).state;
  const { snapshots } = classifyDir(dir, await storage.list(dir));
  const local = snapshots.filter((s) => s.baseSeq + 1 >= firstSeq && s.baseSeq <= lastSeq);
  if (local.length < snapshots.length) {
    logger.warn({ firstSeq, lastSeq, skipped: snapshots.length - local.length }, 'local snapshots older than the stream\'s first message, or past its last (of another stream), are of no use');
  }
  for (const snapshot of local) {
    const loaded = await loadFile(storage, snapshot.path, logger);
    if (loaded !== undefined) return loaded;
  }
  const held = await bucket.snapshots();
  for (const object of held.foreign) rejected.reject('snapshot', { object, reason: 'not put by a node of this cluster (its tag does not open)' });
  for (const seq of held.seqs) {
    if (seq + 1 < firstSeq) break;
    logger.info({ baseSeq: seq }, 'downloading the cluster\'s snapshot from its bucket');
    let download;
    try {
      download = await bucket.download(storage, dir, seq);
    } catch (err) {
      if (!(err instanceof SnapshotSealError)) throw err;
      rejected.reject('snapshot', { object: err.object, reason: err.message });
      continue;
    }
    const loaded = await loadFrom(download, logger, rejected).catch(async (err: unknown) => {
      await download.drop();
      throw err;
    });
    if (loaded === undefined) {
      await download.drop();
      continue;
    }
    await download.keep();
    logger.info({ baseSeq: seq }, 'loaded the cluster\'s snapshot from its bucket');
    return loaded;
  }
  if (firstSeq > 1) throw new Error(`the stream starts at sequence ${firstSeq} and no snapshot reaches it: nothing to start from`);
  return { state: new State(), snapshotSeq: 0 };
}

/** A local snapshot file; undefined if it is invalid. */
async function loadFile(storage: Storage, path: string, logger: PersistLogger): Promise<{ state: State; snapshotSeq: number } | undefined> {
  let file: ReadableFile;
  try {
    file = await storage.openRead(path);
  } catch (err) {
    logger.warn({ file: path, reason: err instanceof Error ? err.message : String(err) }, 'cannot open the snapshot; trying an older one');
    return undefined;
  }
  try {
    return await loadFrom(file, logger);
  } finally {
    await file.close().catch(() => undefined);
  }
}

/** A snapshot file, or one arriving from the bucket (readSnapshotFile); undefined if it is invalid or, from the bucket, does not open. */
async function loadFrom(file: ReadableFile, logger: PersistLogger, rejected?: RejectedMessages): Promise<{ state: State; snapshotSeq: number } | undefined> {
  const { path } = file;
  const state = new State();
  try {
    const summary = await readSnapshotFile(file, (kind, values) => state.loadSection(kind, values));
    state.finishLoad(summary.baseSeq);
    logger.info({ file: path, baseSeq: summary.baseSeq }, 'loaded the snapshot');
    return { state, snapshotSeq: summary.baseSeq };
  } catch (err) {
    if (!(err instanceof SnapshotError)) throw err;
    // A download that stalled is no sign of a bad snapshot: the start tries the same one again.
    if (err.cause instanceof StreamUnavailableError) throw err.cause;
    if (err.cause instanceof SnapshotSealError && rejected !== undefined) {
      rejected.reject('snapshot', { object: err.cause.object, reason: err.cause.message });
      return undefined;
    }
    logger.warn({ file: path, reason: err.message }, 'snapshot invalid; trying an older one');
    return undefined;
  }
}
