// The write-ahead log: segment files, group commit (one write and one fdatasync per event-loop turn), the fsync policy, and the failed state.
//
// Every file operation runs in one serial queue (pump): batches of records, rotations, explicit
// syncs and the close. Appends only ever add to the batch at the tail of that queue, so records that
// arrive while a write is in flight form the next batch and go out right after it, and two flushes
// never overlap (a crash simulator can then reason about exactly which bytes each fsync covered).

import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { LogRecord } from '../domain/entities.js';
import { fsyncIntervalMsMax, walWriteBytesMax } from '../config/limits.js';
import { encodeRecord } from './codec.js';
import { segmentFileName } from './layout.js';
import type { PersistLogger } from './replayable.js';
import type { Storage, WritableFile } from './storage.js';

/**
 * always: an append resolves after the fdatasync that covers it (Redis appendfsync always).
 * interval: resolves after the write; fdatasync within fsyncIntervalMsMax of it, so at most about a second of acknowledged records is lost on power failure.
 * off: resolves after the write; the OS decides when the data reaches the disk.
 */
export type FsyncPolicy = 'always' | 'interval' | 'off';

export type WalErrorCode =
  /** A write or fsync failed; the records it covered may or may not be on disk. */
  | 'wal_io'
  /** The log failed earlier and accepts nothing more; the owner should stop and let recovery run. */
  | 'wal_failed'
  | 'wal_closed';

export class WalError extends Error {
  constructor(readonly code: WalErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'WalError';
  }
}

/** Plain counters for metrics and benchmarks; read them, never write them. */
export interface WalStats {
  records: number;
  bytes: number;
  writes: number;
  fsyncs: number;
  lastFsyncMs: number;
}

export interface WalOptions {
  readonly dir: string;
  readonly storage: Storage;
  readonly fsync: FsyncPolicy;
  readonly logger: PersistLogger;
  /** The seq the next appended record must carry. */
  readonly nextSeq: number;
  /**
   * First seq of the existing segment to continue (recovery has already cut off any torn tail), or
   * undefined to start a new wal-<nextSeq>.log.
   */
  readonly continueSegment?: number;
}

interface Deferred {
  readonly promise: Promise<void>;
  resolve(): void;
  reject(err: Error): void;
}

function deferred(): Deferred {
  let resolve!: () => void;
  let reject!: (err: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

interface Batch {
  readonly kind: 'batch';
  readonly frames: Buffer[];
  /** Shared by every append of the batch: one promise per turn instead of one per record. */
  readonly done: Deferred;
}

type Item =
  | Batch
  | { readonly kind: 'rotate'; readonly nextSeq: number; readonly done: Deferred }
  /** done is absent for the interval timer's sync, which nobody waits for. */
  | { readonly kind: 'sync'; readonly done: Deferred | undefined }
  | { readonly kind: 'close'; readonly done: Deferred };

export class Wal {
  readonly stats: WalStats = { records: 0, bytes: 0, writes: 0, fsyncs: 0, lastFsyncMs: 0 };

  private readonly queue: Item[] = [];
  /** The batch at the tail of the queue that still takes appends; null once sealed or taken by pump. */
  private openBatch: Batch | null = null;
  private pumpScheduled = false;
  private pumping = false;
  /** Whether anything was written since the last fdatasync. */
  private dirty = false;
  private syncTimer: NodeJS.Timeout | null = null;
  private failed: WalError | undefined;
  private closing = false;
  private expectedSeq: number;

  private constructor(
    private readonly opts: WalOptions,
    private file: WritableFile | null,
    private segmentFirstSeq: number,
  ) {
    this.expectedSeq = opts.nextSeq;
  }

  /** Opens the segment to append to, creating it if needed. */
  static async open(opts: WalOptions): Promise<Wal> {
    const firstSeq = opts.continueSegment ?? opts.nextSeq;
    assert.ok(firstSeq <= opts.nextSeq, `segment first seq ${firstSeq} is after the next seq ${opts.nextSeq}`);
    const file = await opts.storage.openAppend(join(opts.dir, segmentFileName(firstSeq)));
    if (opts.continueSegment === undefined) {
      try {
        // The new name must survive a power loss, or records synced into it would vanish with it.
        await opts.storage.fsyncDir(opts.dir);
      } catch (err) {
        await file.close().catch(() => undefined);
        throw err;
      }
    }
    return new Wal(opts, file, firstSeq);
  }

  /** The seq the next append must carry. */
  get nextSeq(): number {
    return this.expectedSeq;
  }

  get segmentPath(): string {
    return join(this.opts.dir, segmentFileName(this.segmentFirstSeq));
  }

  /** Set once a write or fsync failed; the log then refuses everything. */
  get failure(): WalError | undefined {
    return this.failed;
  }

  /**
   * Queues record for the current turn's group commit. Encoding happens now: a RecordTooLargeError is
   * thrown synchronously and leaves nothing behind. The promise settles per the fsync policy; it
   * rejects with WalError if the log failed.
   */
  append(record: LogRecord): Promise<void> {
    if (this.failed !== undefined) return Promise.reject(this.failedError());
    if (this.closing) return Promise.reject(new WalError('wal_closed', 'the write-ahead log is closed'));
    assert.equal(record.seq, this.expectedSeq, `log records must have consecutive seqs: expected ${this.expectedSeq}, got ${record.seq}`);
    const frameBytes = encodeRecord(record);
    this.expectedSeq++;
    let batch = this.openBatch;
    if (batch === null) {
      batch = { kind: 'batch', frames: [], done: deferred() };
      this.openBatch = batch;
      this.queue.push(batch);
      this.schedulePump();
    }
    batch.frames.push(frameBytes);
    return batch.done.promise;
  }

  /**
   * Closes the current segment once everything appended before this call is written and synced,
   * and starts wal-<nextSeq>.log; records appended after this call go there. nextSeq must be the
   * seq of the next record, so that segments line up with snapshots.
   */
  rotate(nextSeq: number): Promise<void> {
    if (this.failed !== undefined) return Promise.reject(this.failedError());
    if (this.closing) return Promise.reject(new WalError('wal_closed', 'the write-ahead log is closed'));
    assert.equal(nextSeq, this.expectedSeq, `rotate(${nextSeq}) but the next record is ${this.expectedSeq}`);
    return this.enqueueControl({ kind: 'rotate', nextSeq, done: deferred() });
  }

  /** Resolves when everything appended so far is written and fdatasynced, whatever the policy. */
  flush(): Promise<void> {
    if (this.failed !== undefined) return Promise.reject(this.failedError());
    if (this.closing) return Promise.reject(new WalError('wal_closed', 'the write-ahead log is closed'));
    return this.enqueueControl({ kind: 'sync', done: deferred() });
  }

  /** Flushes, fdatasyncs and closes. Rejects with the failure if the log had failed (the file is closed anyway). */
  close(): Promise<void> {
    if (this.closing) return Promise.reject(new WalError('wal_closed', 'the write-ahead log is already closing'));
    this.closing = true;
    this.clearSyncTimer();
    return this.enqueueControl({ kind: 'close', done: deferred() });
  }

  private enqueueControl(item: Exclude<Item, Batch>): Promise<void> {
    this.openBatch = null;
    this.queue.push(item);
    this.schedulePump();
    // Only the interval timer enqueues a sync without a deferred, and it does not come through here.
    return item.done!.promise;
  }

  private failedError(): WalError {
    return new WalError('wal_failed', `the write-ahead log failed earlier and accepts no more records: ${this.failed?.message}`, { cause: this.failed });
  }

  private schedulePump(): void {
    if (this.pumping || this.pumpScheduled) return;
    this.pumpScheduled = true;
    // setImmediate, not a microtask: every append of this event-loop turn (and of the I/O callbacks
    // run in the same loop iteration) joins the batch before it is written.
    setImmediate(() => {
      this.pumpScheduled = false;
      void this.pump();
    });
  }

  private async pump(): Promise<void> {
    this.pumping = true;
    try {
      for (let item = this.queue.shift(); item !== undefined; item = this.queue.shift()) {
        if (item === this.openBatch) this.openBatch = null;
        if (this.failed !== undefined) {
          await this.settleAfterFailure(item);
          continue;
        }
        try {
          await this.process(item);
          item.done?.resolve();
        } catch (err) {
          this.fail(err, item);
        }
      }
    } finally {
      this.pumping = false;
    }
  }

  private async process(item: Item): Promise<void> {
    switch (item.kind) {
      case 'batch': return this.writeBatch(item);
      case 'sync': if (this.dirty) await this.datasync(); return;
      case 'rotate': return this.switchSegment(item.nextSeq);
      case 'close': return this.closeFile();
    }
  }

  private async writeBatch(batch: Batch): Promise<void> {
    const file = this.requireFile();
    const { frames } = batch;
    // Cut the batch into writes of at most walWriteBytesMax (a larger single frame goes alone), so a
    // huge burst never needs one giant contiguous buffer; durability still costs one fdatasync.
    let i = 0;
    while (i < frames.length) {
      const first = i;
      let size = frames[i]!.length;
      i++;
      while (i < frames.length && size + frames[i]!.length <= walWriteBytesMax) size += frames[i++]!.length;
      const data = i - first === 1 ? frames[first]! : Buffer.concat(frames.slice(first, i), size);
      this.dirty = true;
      await file.write(data);
      this.stats.writes++;
      this.stats.bytes += size;
    }
    this.stats.records += frames.length;
    if (this.opts.fsync === 'always') await this.datasync();
    else if (this.opts.fsync === 'interval') this.armSyncTimer();
  }

  private async datasync(): Promise<void> {
    const started = performance.now();
    await this.requireFile().datasync();
    this.stats.fsyncs++;
    this.stats.lastFsyncMs = performance.now() - started;
    this.dirty = false;
  }

  private armSyncTimer(): void {
    if (this.syncTimer !== null) return;
    // Armed by the first unsynced write, so no acknowledged write waits longer than the interval
    // (plus whatever is ahead of it in the queue) for its fdatasync.
    this.syncTimer = setTimeout(() => {
      this.syncTimer = null;
      if (this.failed !== undefined || this.closing) return;
      this.openBatch = null;
      this.queue.push({ kind: 'sync', done: undefined });
      this.schedulePump();
    }, fsyncIntervalMsMax);
  }

  private clearSyncTimer(): void {
    if (this.syncTimer !== null) clearTimeout(this.syncTimer);
    this.syncTimer = null;
  }

  private async switchSegment(nextSeq: number): Promise<void> {
    // Nothing was written since this segment was created (a snapshot right after start-up or right
    // after another snapshot): keep it rather than reopen the same name.
    if (nextSeq === this.segmentFirstSeq) return;
    // Synced whatever the policy: a segment that is no longer last must never end torn, because
    // recovery only forgives a torn tail in the last one.
    if (this.dirty) await this.datasync();
    await this.requireFile().close();
    this.file = null;
    const file = await this.opts.storage.openAppend(join(this.opts.dir, segmentFileName(nextSeq)));
    this.file = file;
    this.segmentFirstSeq = nextSeq;
    // As in open(): the new name must be durable before records synced into it count as durable.
    await this.opts.storage.fsyncDir(this.opts.dir);
  }

  private async closeFile(): Promise<void> {
    if (this.dirty) await this.datasync();
    const file = this.file;
    this.file = null;
    if (file !== null) await file.close();
  }

  private requireFile(): WritableFile {
    assert.ok(this.file !== null, 'write-ahead log has no open segment');
    return this.file;
  }

  private fail(err: unknown, item: Item): void {
    const cause = err as Error;
    // A failed fsync is never retried: the kernel may already have dropped the dirty pages and
    // cleared the error, so a second fsync that "succeeds" proves nothing (PostgreSQL's fsyncgate).
    this.failed = err instanceof WalError ? err : new WalError('wal_io', `write-ahead log ${item.kind} failed on ${this.segmentPath}: ${cause.message}`, { cause });
    this.clearSyncTimer();
    this.opts.logger.error({ err: cause, segment: this.segmentPath, op: item.kind }, 'write-ahead log failed; refusing further records');
    if (item.kind === 'close') {
      // Still release the descriptor; the close's own error is already the failure.
      const file = this.file;
      this.file = null;
      if (file !== null) void file.close().catch(() => undefined);
    }
    item.done?.reject(this.failed);
  }

  private async settleAfterFailure(item: Item): Promise<void> {
    if (item.kind === 'close') {
      const file = this.file;
      this.file = null;
      if (file !== null) await file.close().catch(() => undefined);
    }
    item.done?.reject(item.kind === 'batch' ? this.failed! : this.failedError());
  }
}
