// The write-ahead log: group commit per turn, no overlapping flushes, the three fsync policies, rotation, and the failed state after an I/O error.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { decodeLog, RecordTooLargeError } from '../src/persist/codec.js';
import { segmentFileName } from '../src/persist/layout.js';
import { NodeStorage } from '../src/persist/storage.js';
import { Wal, WalError, type FsyncPolicy } from '../src/persist/wal.js';
import { walRecordBytesMax } from '../src/config/limits.js';
import { gate, HookedStorage, ioError, record, RecordingLogger, tempDir, turn, user } from './helpers/persist-fixtures.js';
import type { Storage } from '../src/persist/storage.js';

async function openWal(dir: string, fsync: FsyncPolicy = 'always', storage: Storage = new NodeStorage(), nextSeq = 1): Promise<Wal> {
  return Wal.open({ dir, storage, fsync, logger: new RecordingLogger(), nextSeq });
}

function seqsIn(path: string): number[] {
  const decoded = decodeLog(readFileSync(path), path);
  assert.deepEqual(decoded.end, { kind: 'clean' });
  return decoded.records.map((r) => r.seq);
}

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}

test('appends of one turn go out in one write and one fdatasync', async (t) => {
  const { dir, cleanup } = tempDir();
  t.after(cleanup);
  const wal = await openWal(dir);
  const pending = range(1, 100).map((seq) => wal.append(record(seq)));
  await Promise.all(pending);
  assert.equal(wal.stats.writes, 1);
  assert.equal(wal.stats.fsyncs, 1);
  assert.equal(wal.stats.records, 100);
  assert.equal(wal.stats.bytes, readFileSync(join(dir, segmentFileName(1))).length);
  await wal.close();
  assert.deepEqual(seqsIn(join(dir, segmentFileName(1))), range(1, 100));
});

test('appends made while a flush is in flight form the next batch, flushed right after, never concurrently', async (t) => {
  const { dir, cleanup } = tempDir();
  t.after(cleanup);
  const storage = new HookedStorage();
  const hold = gate();
  let firstSyncReached: () => void = () => undefined;
  const reached = new Promise<void>((resolve) => { firstSyncReached = resolve; });
  storage.before = (op) => {
    // The first fdatasync is the new segment's header (see Wal.writeHeader); the second is the first batch's.
    if (op === 'datasync' && storage.count('datasync') === 2) {
      firstSyncReached();
      return hold.promise;
    }
  };
  const wal = await openWal(dir, 'always', storage);
  const first = Promise.all(range(1, 3).map((seq) => wal.append(record(seq))));
  await reached;
  // Two separate turns while the first fdatasync is held: both join one batch.
  const second: Promise<void>[] = [wal.append(record(4)), wal.append(record(5))];
  await turn();
  second.push(wal.append(record(6)));
  await turn();
  let firstDone = false;
  void first.then(() => { firstDone = true; });
  await turn();
  assert.equal(firstDone, false, 'not acknowledged before its fdatasync');
  assert.equal(wal.stats.writes, 1);
  hold.open();
  await first;
  await Promise.all(second);
  assert.equal(wal.stats.writes, 2);
  assert.equal(wal.stats.fsyncs, 2);
  assert.equal(storage.maxInFlightDatasyncs, 1);
  await wal.close();
  assert.deepEqual(seqsIn(join(dir, segmentFileName(1))), range(1, 6));
});

test('a batch larger than walWriteBytesMax is split into several writes but one fdatasync', async (t) => {
  const { dir, cleanup } = tempDir();
  t.after(cleanup);
  const wal = await openWal(dir);
  const big = 'x'.repeat(3 * 1024 * 1024);
  const pending = range(1, 5).map((seq) => wal.append(record(seq, { op: 'put', kind: 'user', value: user(`u${seq}`, 'big', { customData: { big } }) })));
  await Promise.all(pending);
  assert.ok(wal.stats.writes >= 2, `writes: ${wal.stats.writes}`);
  assert.equal(wal.stats.fsyncs, 1);
  await wal.close();
  assert.deepEqual(seqsIn(join(dir, segmentFileName(1))), range(1, 5));
});

test('policy interval acknowledges after the write and fdatasyncs later on its own', async (t) => {
  const { dir, cleanup } = tempDir();
  t.after(cleanup);
  const wal = await openWal(dir, 'interval');
  await Promise.all(range(1, 10).map((seq) => wal.append(record(seq))));
  assert.equal(wal.stats.writes, 1);
  assert.equal(wal.stats.fsyncs, 0, 'acknowledged before any fdatasync');
  // The interval timer syncs without further appends; wait for it (bounded, no timing assertion).
  for (let i = 0; i < 500 && wal.stats.fsyncs === 0; i++) await new Promise((r) => setTimeout(r, 10));
  assert.equal(wal.stats.fsyncs, 1);
  await wal.close();
  assert.deepEqual(seqsIn(join(dir, segmentFileName(1))), range(1, 10));
});

test('policy off acknowledges after the write and never fdatasyncs until close', async (t) => {
  const { dir, cleanup } = tempDir();
  t.after(cleanup);
  const wal = await openWal(dir, 'off');
  for (let seq = 1; seq <= 5; seq++) await wal.append(record(seq));
  assert.equal(wal.stats.writes, 5);
  assert.equal(wal.stats.fsyncs, 0);
  await wal.close();
  assert.equal(wal.stats.fsyncs, 1);
  assert.deepEqual(seqsIn(join(dir, segmentFileName(1))), range(1, 5));
});

test('policy always acknowledges each turn only after its fdatasync', async (t) => {
  const { dir, cleanup } = tempDir();
  t.after(cleanup);
  const wal = await openWal(dir, 'always');
  for (let seq = 1; seq <= 4; seq++) {
    await wal.append(record(seq));
    assert.equal(wal.stats.fsyncs, seq);
  }
  await wal.close();
});

test('out-of-order seqs are a programming error, thrown at once', async (t) => {
  const { dir, cleanup } = tempDir();
  t.after(cleanup);
  const wal = await openWal(dir, 'always', new NodeStorage(), 5);
  assert.throws(() => wal.append(record(4)), /consecutive/);
  assert.throws(() => wal.append(record(6)), /consecutive/);
  await wal.append(record(5));
  assert.throws(() => wal.append(record(5)), /consecutive/);
  await wal.close();
});

test('an oversized record throws synchronously and leaves the seq free', async (t) => {
  const { dir, cleanup } = tempDir();
  t.after(cleanup);
  const wal = await openWal(dir);
  const huge = record(1, { op: 'put', kind: 'user', value: user('big', 'big', { customData: { blob: 'y'.repeat(walRecordBytesMax) } }) });
  assert.throws(() => wal.append(huge), RecordTooLargeError);
  assert.equal(wal.nextSeq, 1);
  await wal.append(record(1));
  await wal.close();
  assert.deepEqual(seqsIn(join(dir, segmentFileName(1))), [1]);
});

test('rotate starts a new segment named after the next seq; earlier appends stay in the old one', async (t) => {
  const { dir, cleanup } = tempDir();
  t.after(cleanup);
  const wal = await openWal(dir, 'off');
  const before = range(1, 5).map((seq) => wal.append(record(seq)));
  const rotated = wal.rotate(6);
  const after = range(6, 8).map((seq) => wal.append(record(seq)));
  await Promise.all([...before, rotated, ...after]);
  // Synced before being left behind even under 'off': only the last segment may ever end torn.
  assert.equal(wal.stats.fsyncs, 1);
  assert.equal(wal.segmentPath, join(dir, segmentFileName(6)));
  assert.throws(() => wal.rotate(7), /rotate/);
  await wal.close();
  assert.deepEqual(readdirSync(dir).sort(), [segmentFileName(1), segmentFileName(6)]);
  assert.deepEqual(seqsIn(join(dir, segmentFileName(1))), range(1, 5));
  assert.deepEqual(seqsIn(join(dir, segmentFileName(6))), range(6, 8));
});

test('rotating an empty segment to its own seq keeps it', async (t) => {
  const { dir, cleanup } = tempDir();
  t.after(cleanup);
  const wal = await openWal(dir);
  await wal.rotate(1);
  await wal.append(record(1));
  await wal.close();
  assert.deepEqual(readdirSync(dir), [segmentFileName(1)]);
});

test('a failed fdatasync rejects every waiting append, is never retried, and fails later appends at once', async (t) => {
  const { dir, cleanup } = tempDir();
  t.after(cleanup);
  const storage = new HookedStorage();
  const logger = new RecordingLogger();
  const wal = await Wal.open({ dir, storage, fsync: 'always', logger, nextSeq: 1 });
  // Fails from the first batch on; the segment header's fdatasync (in open) went through.
  storage.before = (op) => {
    if (op === 'datasync') throw ioError('EIO');
  };
  const waiting = range(1, 3).map((seq) => wal.append(record(seq)));
  for (const p of waiting) await assert.rejects(p, (err: unknown) => err instanceof WalError && err.code === 'wal_io');
  await assert.rejects(wal.append(record(4)), (err: unknown) => err instanceof WalError && err.code === 'wal_failed');
  await assert.rejects(wal.rotate(4), WalError);
  assert.ok(wal.failure instanceof WalError);
  assert.equal(storage.count('datasync'), 2, "the header's and the failed one");
  assert.equal(logger.at('error').length, 1);
  await assert.rejects(wal.close(), WalError);
  assert.equal(storage.count('datasync'), 2, 'close does not retry the failed fsync');
});

test('ENOSPC on write cuts the batch and the batch queued behind it back, tells the owner, and later appends go on', async (t) => {
  const { dir, cleanup } = tempDir();
  t.after(cleanup);
  const storage = new HookedStorage();
  const hold = gate();
  const wal = await openWal(dir, 'always', storage);
  await wal.append(record(1));
  let full = true;
  storage.before = async (op) => {
    if (op === 'write' && full) {
      await hold.promise;
      throw ioError('ENOSPC');
    }
  };
  const lost: number[] = [];
  wal.lossListener = (seq) => lost.push(seq);
  const second = wal.append(record(2));
  await turn();
  const third = wal.append(record(3));
  hold.open();
  await assert.rejects(second, (err: unknown) => err instanceof WalError && err.code === 'wal_cut_back' && err.firstLostSeq === 2 && /ENOSPC/.test(err.message));
  await assert.rejects(third, (err: unknown) => err instanceof WalError && err.code === 'wal_cut_back');
  assert.deepEqual(lost, [2], 'told once, synchronously, from the first lost seq');
  assert.equal(wal.failure, undefined, 'a failed write does not fail the log');
  assert.equal(wal.nextSeq, 2, 'the lost seqs are free again');
  full = false;
  await wal.append(record(2));
  await wal.close();
  assert.deepEqual(seqsIn(join(dir, segmentFileName(1))), [1, 2]);
});

test('close writes and syncs what was appended in the same turn, then refuses appends', async (t) => {
  const { dir, cleanup } = tempDir();
  t.after(cleanup);
  const wal = await openWal(dir, 'interval');
  const appended = wal.append(record(1));
  const closed = wal.close();
  await Promise.all([appended, closed]);
  assert.equal(wal.stats.fsyncs, 1);
  await assert.rejects(wal.append(record(2)), (err: unknown) => err instanceof WalError && err.code === 'wal_closed');
  assert.deepEqual(seqsIn(join(dir, segmentFileName(1))), [1]);
});
