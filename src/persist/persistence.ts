// The running orchestrator: opens the data directory (lock, recovery, log), appends records, takes snapshots on a schedule, removes obsolete files.

import assert from 'node:assert/strict';
import { dirname, resolve } from 'node:path';
import type { LogRecord } from '../domain/entities.js';
import { snapshotEveryRecordsDefault, snapshotEverySecondsDefault, snapshotsKept } from '../config/limits.js';
import { restrictDataDir } from './dir-mode.js';
import { classifyDir } from './layout.js';
import { acquireLock, type DirLock } from './lock.js';
import { recover } from './recovery.js';
import type { PersistLogger, Replayable } from './replayable.js';
import { writeSnapshot, type SnapshotWritten } from './snapshot.js';
import { NodeStorage, type Storage } from './storage.js';
import { Wal, type FsyncPolicy, type WalStats } from './wal.js';

const timerMsMax = 2 ** 31 - 1;

export interface PersistenceOptions<S extends Replayable> {
  readonly dir: string;
  readonly fsync?: FsyncPolicy;
  readonly createState: () => S;
  readonly logger: PersistLogger;
  readonly snapshotEveryRecords?: number;
  readonly snapshotEverySeconds?: number;
  /** Defaults to the real file system; tests pass a double that simulates crashes and I/O errors. */
  readonly storage?: Storage;
}

/** Plain counters for metrics and benchmarks; read them, never write them. */
export interface PersistenceStats {
  readonly wal: WalStats;
  snapshotsTaken: number;
  snapshotsFailed: number;
  lastSnapshotMs: number;
  lastSnapshotBytes: number;
  lastSnapshotEntities: number;
  lastSnapshotBaseSeq: number;
  recordsSinceSnapshot: number;
}

interface Settings {
  readonly dir: string;
  readonly storage: Storage;
  readonly logger: PersistLogger;
  readonly everyRecords: number;
  readonly everyMs: number;
}

export class Persistence {
  readonly stats: PersistenceStats;
  private running: Promise<SnapshotWritten | undefined> | undefined;
  private triggerScheduled = false;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly settings: Settings,
    private readonly state: Replayable,
    private readonly wal: Wal,
    private readonly lock: DirLock,
    /** Base seq of the newest valid snapshot; 0 when there is none (the empty state needs none). */
    private newestSnapshotBaseSeq: number,
  ) {
    this.stats = {
      wal: wal.stats, snapshotsTaken: 0, snapshotsFailed: 0, lastSnapshotMs: 0, lastSnapshotBytes: 0,
      lastSnapshotEntities: 0, lastSnapshotBaseSeq: newestSnapshotBaseSeq, recordsSinceSnapshot: state.lastSeq - newestSnapshotBaseSeq,
    };
    this.armTimer();
  }

  /**
   * Appends record to the log (see Wal.append: encoding errors are thrown synchronously and leave
   * nothing behind; the promise settles when the record is durable per the fsync policy). Call it in
   * the same synchronous turn as state.apply(record).
   */
  append(record: LogRecord): Promise<void> {
    const durable = this.wal.append(record);
    if (++this.stats.recordsSinceSnapshot >= this.settings.everyRecords && this.running === undefined && !this.triggerScheduled) {
      this.triggerScheduled = true;
      // Not now: the caller applies this record to the state right after we return, and the snapshot
      // must start from a state whose lastSeq matches what the log has been given.
      setImmediate(() => {
        this.triggerScheduled = false;
        if (!this.closed) this.snapshot().catch(() => undefined);
      });
    }
    return durable;
  }

  /**
   * Takes a snapshot now, unless one is running (then resolves with that one) or nothing changed
   * since the newest snapshot (then resolves undefined). Rejects if writing it failed; serving goes
   * on, the log still holds everything.
   */
  snapshot(): Promise<SnapshotWritten | undefined> {
    if (this.running !== undefined) return this.running;
    const run = this.takeSnapshot().finally(() => {
      this.running = undefined;
    });
    this.running = run;
    return run;
  }

  /**
   * listener is told synchronously which records a failed write cut back (that seq and every later
   * one): the owner must undo them in memory before anything else runs. See Wal.cutBack.
   */
  setLossListener(listener: (firstLostSeq: number) => void): void {
    this.wal.lossListener = listener;
  }

  /** listener is told once when the log fails for good (a failed fsync): stop acknowledging and exit. */
  setFailureListener(listener: (err: Error) => void): void {
    this.wal.failureListener = listener;
  }

  /** Flushes the log, writes a final snapshot, closes the log and releases the lock. Rejects with WalError if the log had failed. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.timer);
    try {
      await this.running?.catch(() => undefined);
      if (this.wal.failure === undefined) {
        // Either failure is logged where it happens. A failed final snapshot costs only start-up
        // time; a failed flush leaves the log failed, and close() below reports it.
        await this.wal.flush().then(() => this.snapshot()).catch(() => undefined);
      }
      await this.wal.close();
    } finally {
      await this.lock.release();
    }
  }

  private async takeSnapshot(): Promise<SnapshotWritten | undefined> {
    const { storage, dir, logger } = this.settings;
    const source = this.state.snapshotSource();
    if (source.baseSeq === this.newestSnapshotBaseSeq) return undefined;
    const counted = this.stats.recordsSinceSnapshot;
    this.stats.recordsSinceSnapshot = 0;
    this.armTimer();
    try {
      if (source.baseSeq + 1 !== this.wal.nextSeq) {
        // A broken contract (append and apply in different turns), never a disk problem.
        throw new Error(`state lastSeq ${source.baseSeq} does not match the log's next seq ${this.wal.nextSeq}`);
      }
      // Segments line up with snapshots: every record after baseSeq lands in the new segment, so the
      // files before it become removable once the snapshot and its successor exist.
      await this.wal.rotate(source.baseSeq + 1);
      const cutBacks = this.wal.cutBacks;
      // The snapshot is fuzzy: it may hold effects of records after baseSeq that were applied but not
      // yet durable. Before it takes its name, every record appended so far must be durable, or a crash
      // could leave a snapshot holding half of a record the log never got (a partial change); and if a
      // failed write cut records back meanwhile, the snapshot may hold those and is abandoned.
      const written = await writeSnapshot(storage, dir, source, async () => {
        await this.wal.flush();
        if (this.wal.cutBacks !== cutBacks) throw new Error('log records were cut back while the snapshot was written');
      });
      this.newestSnapshotBaseSeq = written.baseSeq;
      this.stats.snapshotsTaken++;
      this.stats.lastSnapshotMs = written.durationMs;
      this.stats.lastSnapshotBytes = written.bytes;
      this.stats.lastSnapshotEntities = written.entities;
      this.stats.lastSnapshotBaseSeq = written.baseSeq;
      logger.info({
        file: written.path, baseSeq: written.baseSeq, entities: written.entities, bytes: written.bytes,
        ms: Math.round(written.durationMs), recordsCovered: counted,
      }, 'snapshot written');
      await this.removeObsoleteFiles();
      return written;
    } catch (err) {
      this.stats.snapshotsFailed++;
      logger.error({ err, baseSeq: source.baseSeq }, 'snapshot failed; the log still holds every change');
      throw err;
    }
  }

  /**
   * Keeps the newest snapshotsKept snapshots and every segment holding records after the older kept
   * one, so recovery can still fall back to it if the newest turns out bad. With fewer snapshots
   * than that, the fallback is replaying from seq 1, so no segment goes.
   */
  private async removeObsoleteFiles(): Promise<void> {
    const { storage, dir, logger } = this.settings;
    try {
      const { snapshots, segments } = classifyDir(dir, await storage.list(dir));
      const doomed = snapshots.slice(snapshotsKept).map((s) => s.path);
      if (snapshots.length >= snapshotsKept) {
        const olderKeptBaseSeq = snapshots[snapshotsKept - 1]!.baseSeq;
        // Segment i holds seqs firstSeq(i) .. firstSeq(i+1) - 1; the last one is being written and always stays.
        for (let i = 0; i < segments.length - 1; i++) {
          if (segments[i + 1]!.firstSeq <= olderKeptBaseSeq + 1) doomed.push(segments[i]!.path);
        }
      }
      for (const path of doomed) await storage.unlink(path);
      if (doomed.length > 0) {
        await storage.fsyncDir(dir);
        logger.info({ removed: doomed }, 'removed obsolete snapshots and log segments');
      }
    } catch (err) {
      // Leftovers cost disk space, not correctness; the next snapshot tries again.
      logger.warn({ err }, 'could not remove obsolete files');
    }
  }

  private armTimer(): void {
    clearTimeout(this.timer);
    if (this.closed) return;
    this.timer = setTimeout(() => {
      if (this.stats.recordsSinceSnapshot > 0 && this.running === undefined) this.snapshot().catch(() => undefined);
      else this.armTimer();
    }, this.settings.everyMs);
    // A pending snapshot must not keep the process alive on its own.
    this.timer.unref();
  }
}

/**
 * Opens a data directory: creates it if missing (or tightens its mode), takes its lock, recovers the state (see
 * recovery.ts) and opens the log where recovery left it. The lock is released if any step fails.
 */
export async function openPersistence<S extends Replayable>(opts: PersistenceOptions<S>): Promise<{ state: S; persistence: Persistence }> {
  const storage = opts.storage ?? new NodeStorage();
  const everyRecords = opts.snapshotEveryRecords ?? snapshotEveryRecordsDefault;
  const everySeconds = opts.snapshotEverySeconds ?? snapshotEverySecondsDefault;
  assert.ok(Number.isSafeInteger(everyRecords) && everyRecords > 0, 'snapshotEveryRecords must be a positive integer');
  assert.ok(everySeconds > 0, 'snapshotEverySeconds must be positive');
  await storage.mkdirp(opts.dir);
  restrictDataDir(opts.dir, opts.logger);
  // On the first start the directory itself is new: its name must be durable before anything in it is.
  await storage.fsyncDir(dirname(resolve(opts.dir)));
  const lock = await acquireLock(storage, opts.dir);
  try {
    const recovered = await recover({ dir: opts.dir, storage, createState: opts.createState, logger: opts.logger });
    const { state } = recovered;
    const wal = await Wal.open({
      dir: opts.dir, storage, fsync: opts.fsync ?? 'always', logger: opts.logger,
      nextSeq: state.lastSeq + 1, continueSegment: recovered.continueSegment,
    });
    // setTimeout cannot wait longer than 2^31 - 1 ms (about 24.8 days); a longer period is clamped to it.
    const everyMs = Math.min(everySeconds * 1000, timerMsMax);
    const settings: Settings = { dir: opts.dir, storage, logger: opts.logger, everyRecords, everyMs };
    const persistence = new Persistence(settings, state, wal, lock, recovered.snapshotBaseSeq ?? 0);
    return { state, persistence };
  } catch (err) {
    await lock.release();
    throw err;
  }
}
