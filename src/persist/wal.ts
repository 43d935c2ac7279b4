// The write-ahead log: segment files, group commit (one write and one fdatasync per event-loop turn), the fsync policy, and the failed state.
//
// Every file operation runs in one serial queue (pump): batches of records, rotations, explicit
// syncs and the close. Appends only ever add to the batch at the tail of that queue, so records that
// arrive while a write is in flight form the next batch and go out right after it, and two flushes
// never overlap (a crash simulator can then reason about exactly which bytes each fsync covered).
//
// Two kinds of failure, handled differently:
//   - a failed WRITE (disk full, EIO on write): the bytes never reached an fdatasync, so the segment is
//     cut back to where the batch began (truncate + fdatasync), the owner is told synchronously which
//     records are lost (the Committer undoes them in memory), their appends reject with 'wal_cut_back',
//     and the log keeps accepting records: writes resume when space returns;
//   - a failed FDATASYNC (or a failed cut-back): never retried, because the kernel may already have
//     dropped the dirty pages and cleared the error, so a second fsync that "succeeds" proves nothing
//     (PostgreSQL's fsyncgate). The log refuses everything from then on and the owner should exit.

import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { LogRecord } from '../domain/entities.js';
import { fsyncIntervalMsMax, walWriteBytesMax } from '../config/limits.js';
import { randomBytes } from 'node:crypto';
import { encodeMark, encodeRecord, headerNonce, headerReadBytes, walNonceBytes } from './codec.js';
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
  /** A write failed and was cut back: the records it carried, and every one queued behind it, were not made. */
  | 'wal_cut_back'
  /** An fsync (or a cut-back) failed; the records it covered may or may not be on disk. */
  | 'wal_io'
  /** The log failed earlier and accepts nothing more; the owner should stop and let recovery run. */
  | 'wal_failed'
  | 'wal_closed';

export class WalError extends Error {
  constructor(
    readonly code: WalErrorCode,
    message: string,
    options?: { cause?: unknown },
    /** For 'wal_cut_back': the first seq that was lost; every later one was lost too. */
    readonly firstLostSeq?: number,
  ) {
    super(message, options);
    this.name = 'WalError';
  }
}

/** A write of a batch failed; thrown inside the pump so the batch is cut back rather than failing the log. */
class WriteFailure extends Error {
  constructor(readonly batchStart: number, override readonly cause: Error) {
    super(cause.message);
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
  readonly firstSeq: number;
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
  /** Bytes in the current segment file, all written successfully. */
  private segmentBytes = 0;
  /** Bytes of the current segment an fdatasync of this process has covered. */
  private syncedBytes = 0;
  /** syncedBytes as the last mark written told it; a new mark is written only when it moved. */
  private markedSyncedBytes = -1;
  /** The current segment's nonce; undefined for a segment from before marks, which then gets none. */
  private nonce: Buffer | undefined;
  /** How many times a failed write was cut back; a snapshot compares it to know whether it saw lost records. */
  cutBacks = 0;
  /**
   * Told synchronously, before any other code runs, which records a cut-back lost: the owner must
   * undo them in memory at once, so nothing is decided on them. Set by the owner (the Committer).
   */
  lossListener: ((firstLostSeq: number) => void) | undefined;
  /** Told once when the log fails for good (a failed fsync): the owner should stop acknowledging and exit. */
  failureListener: ((err: WalError) => void) | undefined;

  private constructor(
    private readonly opts: WalOptions,
    private file: WritableFile | null,
    private segmentFirstSeq: number,
  ) {
    this.expectedSeq = opts.nextSeq;
  }

  /** Opens the segment to append to, creating it (with its synced header) if needed. */
  static async open(opts: WalOptions): Promise<Wal> {
    const firstSeq = opts.continueSegment ?? opts.nextSeq;
    assert.ok(firstSeq <= opts.nextSeq, `segment first seq ${firstSeq} is after the next seq ${opts.nextSeq}`);
    const path = join(opts.dir, segmentFileName(firstSeq));
    const head = opts.continueSegment === undefined ? undefined : await readHead(opts.storage, path);
    const file = await opts.storage.openAppend(path);
    const wal = new Wal(opts, file, firstSeq);
    try {
      if (head === undefined || head.bytes === 0) {
        await wal.writeHeader(file);
        // The new name must survive a power loss, or records synced into it would vanish with it.
        await opts.storage.fsyncDir(opts.dir);
      } else {
        // Continued: marks claim only what this process fdatasyncs (the first sync also covers the
        // bytes an earlier, killed process left in the page cache), so syncedBytes starts at 0.
        wal.segmentBytes = head.bytes;
        wal.nonce = head.nonce;
      }
    } catch (err) {
      await file.close().catch(() => undefined);
      throw err;
    }
    return wal;
  }

  /**
   * Every new segment starts with a mark naming it, written and fdatasynced before any record: so
   * damage at offset 0 is always corruption, and recovery always knows the nonce of the segment's marks.
   */
  private async writeHeader(file: WritableFile): Promise<void> {
    const nonce = randomBytes(walNonceBytes);
    const header = encodeMark(nonce, 0);
    await file.write(header);
    await file.datasync();
    this.nonce = nonce;
    this.segmentBytes = header.length;
    this.syncedBytes = header.length;
    this.markedSyncedBytes = 0;
    this.stats.bytes += header.length;
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
      batch = { kind: 'batch', firstSeq: record.seq, frames: [], done: deferred() };
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
          if (err instanceof WriteFailure && item.kind === 'batch') await this.cutBack(item, err);
          else this.fail(err, item);
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
    const batchStart = this.segmentBytes;
    // A batch written after an fdatasync starts with a mark saying how far that fdatasync reached.
    const frames = this.nonce !== undefined && this.syncedBytes !== this.markedSyncedBytes
      ? [encodeMark(this.nonce, this.syncedBytes), ...batch.frames]
      : batch.frames;
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
      try {
        await file.write(data);
      } catch (err) {
        throw new WriteFailure(batchStart, err as Error);
      }
      this.segmentBytes += size;
      this.stats.writes++;
      this.stats.bytes += size;
    }
    if (frames !== batch.frames) this.markedSyncedBytes = this.syncedBytes;
    this.stats.records += batch.frames.length;
    if (this.opts.fsync === 'always') await this.datasync();
    else if (this.opts.fsync === 'interval') this.armSyncTimer();
  }

  private async datasync(): Promise<void> {
    const started = performance.now();
    const covered = this.segmentBytes;
    await this.requireFile().datasync();
    this.stats.fsyncs++;
    this.stats.lastFsyncMs = performance.now() - started;
    this.dirty = false;
    this.syncedBytes = covered;
  }

  /**
   * A write of `batch` failed. Everything from the batch on is lost: the batch itself and every batch
   * queued behind it (decided on a state that held the lost records). The owner undoes them in memory
   * now, synchronously; then the segment is cut back to where the batch began and made durable so the
   * partial bytes cannot come back after a crash; only then are the appends rejected, so a 503 means
   * "not made". Appends that arrive meanwhile queue behind and go out once the cut-back is done.
   */
  private async cutBack(batch: Batch, failure: WriteFailure): Promise<void> {
    const firstLostSeq = batch.firstSeq;
    const lost: Item[] = [batch];
    for (let i = 0; i < this.queue.length; i++) {
      const item = this.queue[i]!;
      // A rotation asked for after the lost records names a seq that no longer comes next.
      if (item.kind === 'batch' || (item.kind === 'rotate' && item.nextSeq > firstLostSeq)) {
        lost.push(item);
        this.queue.splice(i--, 1);
      }
    }
    this.openBatch = null;
    this.expectedSeq = firstLostSeq;
    this.cutBacks++;
    const lostRecords = lost.reduce((n, item) => n + (item.kind === 'batch' ? item.frames.length : 0), 0);
    this.opts.logger.error({
      err: failure.cause, segment: this.segmentPath, offset: failure.batchStart, firstLostSeq, lostRecords,
    }, 'write-ahead log write failed; cutting the batch back, its changes are refused (503) and writes go on');
    this.lossListener?.(firstLostSeq);
    try {
      const file = this.requireFile();
      await file.truncate(failure.batchStart);
      this.segmentBytes = failure.batchStart;
      await this.datasync();
    } catch (err) {
      // The file is in an unknown state now: stop for good, like a failed fsync.
      this.fail(err, batch);
      for (const item of lost.slice(1)) item.done?.reject(this.failed!);
      return;
    }
    const cutBack = new WalError('wal_cut_back', `a write to ${this.segmentPath} failed and was cut back (${failure.cause.message}); the change was not made`, { cause: failure.cause }, firstLostSeq);
    for (const item of lost) item.done?.reject(cutBack);
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
    const path = join(this.opts.dir, segmentFileName(nextSeq));
    // The new segment is made ready (header, durable name) before the old one is let go, so a full
    // disk fails the rotation (and its snapshot) and leaves the log appending where it was.
    let file: WritableFile;
    try {
      file = await this.opts.storage.openAppend(path);
    } catch (err) {
      throw new RotationRefused(err as Error);
    }
    const previous = { nonce: this.nonce, segmentBytes: this.segmentBytes, syncedBytes: this.syncedBytes, marked: this.markedSyncedBytes };
    try {
      await this.writeHeader(file);
      // As in open(): the new name must be durable before records synced into it count as durable.
      await this.opts.storage.fsyncDir(this.opts.dir);
    } catch (err) {
      this.nonce = previous.nonce;
      this.segmentBytes = previous.segmentBytes;
      this.syncedBytes = previous.syncedBytes;
      this.markedSyncedBytes = previous.marked;
      await file.close().catch(() => undefined);
      // An empty newer segment left behind would stop recovery (the old one runs into its name):
      // if it cannot be removed, the log stops instead.
      await this.opts.storage.unlink(path);
      throw new RotationRefused(err as Error);
    }
    await this.requireFile().close();
    this.file = file;
    this.segmentFirstSeq = nextSeq;
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
    if (err instanceof RotationRefused && item.kind === 'rotate') {
      // Not a failure of the log: the old segment is still open and intact; only the snapshot that
      // asked for the rotation fails.
      this.opts.logger.error({ err: err.cause, segment: this.segmentPath }, 'could not start a new log segment; appending to the current one');
      item.done.reject(new WalError('wal_io', `could not start a new log segment: ${err.cause.message}`, { cause: err.cause }));
      return;
    }
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
    this.failureListener?.(this.failed);
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

/** A rotation that could not start its new segment; the current one stays in use. */
class RotationRefused extends Error {
  constructor(override readonly cause: Error) {
    super(cause.message);
  }
}

/** Size and header nonce of a segment about to be continued. */
async function readHead(storage: Storage, path: string): Promise<{ bytes: number; nonce: Buffer | undefined }> {
  const file = await storage.openRead(path);
  try {
    const head = new Uint8Array(Math.min(file.size, headerReadBytes));
    let done = 0;
    while (done < head.length) {
      const n = await file.read(head.subarray(done), head.length - done, done);
      if (n <= 0) break;
      done += n;
    }
    const nonce = headerNonce(head.subarray(0, done));
    return { bytes: file.size, nonce: nonce === undefined ? undefined : Buffer.from(nonce) };
  } finally {
    await file.close();
  }
}
