// Start-up recovery and the orchestrator: snapshot + replay, torn-tail repair, fallback to an older snapshot, refusals naming file and offset, cleanup, and the lock.
//
// A "crash image" is a copy of the data directory taken while the service still runs, after the
// awaited appends were acknowledged: exactly what a power cut at that moment would leave behind.

import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { appendFileSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { decodeLog, encodeRecord, frameHeaderBytes } from '../src/persist/codec.js';
import { segmentFileName, snapshotFileName } from '../src/persist/layout.js';
import { LockError } from '../src/persist/lock.js';
import { openPersistence, type Persistence } from '../src/persist/persistence.js';
import { RecoveryError } from '../src/persist/recovery.js';
import { writeSnapshot } from '../src/persist/snapshot.js';
import { NodeStorage } from '../src/persist/storage.js';
import { commit, commitRange, FakeState, HookedStorage, ioError, putUser, record, RecordingLogger, tempDir } from './helpers/persist-fixtures.js';

interface Opened {
  state: FakeState;
  persistence: Persistence;
  logger: RecordingLogger;
}

async function open(dir: string, snapshotEveryRecords = 1_000_000): Promise<Opened> {
  const logger = new RecordingLogger();
  const { state, persistence } = await openPersistence({
    dir, fsync: 'always', createState: () => new FakeState(), logger, snapshotEveryRecords, snapshotEverySeconds: 3600,
  });
  return { state, persistence, logger };
}

type Defer = (fn: () => unknown) => void;

/** A temp dir plus a LIFO list of clean-ups run after the test: persistences close before their directories go. */
function scoped(t: TestContext): { dir: string; defer: Defer } {
  const { dir, cleanup } = tempDir();
  const stack: Array<() => unknown> = [cleanup];
  t.after(async () => {
    for (const fn of stack.reverse()) await fn();
  });
  return { dir, defer: (fn) => stack.push(fn) };
}

/** A copy of dir as it is now, in a new temp directory removed after the test. */
function crashImage(defer: Defer, dir: string): string {
  const { dir: image, cleanup } = tempDir('persist-image-');
  defer(cleanup);
  cpSync(dir, image, { recursive: true });
  return image;
}

/** Whether some open file holds dir's lock, asked the way an operator would: `flock -n LOCK true` exits 1 then. */
function lockHeld(dir: string): boolean {
  const { status } = spawnSync('flock', ['-n', join(dir, 'LOCK'), 'true']);
  assert.ok(status === 0 || status === 1, `flock exited with ${status}`);
  return status === 1;
}

function files(dir: string): string[] {
  return readdirSync(dir).sort();
}

function flipByte(path: string, at: number): void {
  const buf = readFileSync(path);
  buf[at] ^= 0x20;
  writeFileSync(path, buf);
}

test('a fresh directory starts empty, and a clean close leaves a final snapshot that a reopen loads', async (t) => {
  const { dir, defer } = scoped(t);
  const data = join(dir, 'data', 'nested');
  const first = await open(data);
  assert.equal(first.state.lastSeq, 0);
  assert.deepEqual(files(data), ['LOCK', segmentFileName(1)]);
  assert.equal(readFileSync(join(data, 'LOCK'), 'utf8'), `${process.pid}\n`);
  assert.equal(lockHeld(data), true);
  await commitRange(first.persistence, first.state, 1, 20);
  await first.persistence.close();
  assert.deepEqual(files(data), ['LOCK', snapshotFileName(20), segmentFileName(1), segmentFileName(21)].sort());

  const second = await open(data);
  defer(() => second.persistence.close());
  assert.deepEqual(second.state.dump(), first.state.dump());
  assert.equal(second.state.loadCalls, 1, 'loaded from the snapshot, not replayed');
});

test('recovery loads the newest snapshot and replays the records after it', async (t) => {
  const { dir, defer } = scoped(t);
  const live = await open(dir);
  defer(() => live.persistence.close());
  await commitRange(live.persistence, live.state, 1, 10);
  const written = await live.persistence.snapshot();
  assert.equal(written?.baseSeq, 10);
  await commitRange(live.persistence, live.state, 11, 15);
  await commit(live.persistence, live.state, record(16, { op: 'del', kind: 'user', id: 'u3' }, putUser('u11', 'changed')));

  const image = crashImage(defer, dir);
  const recovered = await open(image);
  defer(() => recovered.persistence.close());
  assert.deepEqual(recovered.state.dump(), live.state.dump());
  const info = recovered.logger.entries.find((e) => e.msg === 'recovered state from disk')!;
  assert.equal(info.obj['baseSeq'], 10);
  assert.equal(info.obj['recordsReplayed'], 6);
});

test('a torn tail is cut off with a warning, and appends continue in the same segment', async (t) => {
  const { dir, defer } = scoped(t);
  const live = await open(dir);
  defer(() => live.persistence.close());
  await commitRange(live.persistence, live.state, 1, 5);
  const image = crashImage(defer, dir);
  const segment = join(image, segmentFileName(1));
  const goodBytes = statSync(segment).size;
  // The crash hit during the write of record 6: only part of its frame reached the disk.
  const torn = encodeRecord(record(6)).subarray(0, 17);
  appendFileSync(segment, torn);

  const recovered = await open(image);
  assert.deepEqual(recovered.state.dump(), live.state.dump());
  assert.equal(statSync(segment).size, goodBytes);
  const warning = recovered.logger.at('warn').find((e) => /torn/.test(e.msg ?? ''))!;
  assert.deepEqual([warning.obj['file'], warning.obj['offset'], warning.obj['droppedBytes']], [segment, goodBytes, torn.length]);

  await commitRange(recovered.persistence, recovered.state, 6, 8);
  const image2 = crashImage(defer, image);
  await recovered.persistence.close();
  const again = await open(image2);
  defer(() => again.persistence.close());
  assert.equal(again.state.lastSeq, 8);
  assert.deepEqual(again.state.dump(), recovered.state.dump());
  assert.deepEqual(files(image2).filter((f) => f.startsWith('wal-')), [segmentFileName(1)]);
});

async function twoSnapshots(dir: string): Promise<Opened> {
  const live = await open(dir);
  await commitRange(live.persistence, live.state, 1, 10);
  await live.persistence.snapshot();
  await commitRange(live.persistence, live.state, 11, 20);
  await live.persistence.snapshot();
  await commitRange(live.persistence, live.state, 21, 25);
  return live;
}

test('a bad newest snapshot is reported and recovery falls back to the previous one plus the log', async (t) => {
  const { dir, defer } = scoped(t);
  const live = await twoSnapshots(dir);
  defer(() => live.persistence.close());
  const image = crashImage(defer, dir);
  const newest = join(image, snapshotFileName(20));
  flipByte(newest, 40);

  const recovered = await open(image);
  defer(() => recovered.persistence.close());
  assert.deepEqual(recovered.state.dump(), live.state.dump());
  const warning = recovered.logger.at('warn').find((e) => e.obj['file'] === newest);
  assert.ok(warning, 'the bad snapshot is named in a warning');
  assert.equal(typeof warning.obj['offset'], 'number');
  assert.equal(recovered.logger.entries.find((e) => e.msg === 'recovered state from disk')!.obj['baseSeq'], 10);
});

test('with one snapshot, a bad snapshot falls back to replaying the whole log from seq 1', async (t) => {
  const { dir, defer } = scoped(t);
  const live = await open(dir);
  defer(() => live.persistence.close());
  await commitRange(live.persistence, live.state, 1, 10);
  await live.persistence.snapshot();
  await commitRange(live.persistence, live.state, 11, 12);
  const image = crashImage(defer, dir);
  writeFileSync(join(image, snapshotFileName(10)), readFileSync(join(image, snapshotFileName(10))).subarray(0, 30));
  const recovered = await open(image);
  defer(() => recovered.persistence.close());
  assert.deepEqual(recovered.state.dump(), live.state.dump());
  assert.equal(recovered.logger.entries.find((e) => e.msg === 'recovered state from disk')!.obj['snapshot'], null);
});

test('bad snapshots with no usable fallback refuse to start, naming the newest snapshot', async (t) => {
  const { dir, defer } = scoped(t);
  const live = await open(dir);
  defer(() => live.persistence.close());
  await commitRange(live.persistence, live.state, 1, 10);
  await live.persistence.snapshot();
  await commitRange(live.persistence, live.state, 11, 20);
  await live.persistence.snapshot();
  await commitRange(live.persistence, live.state, 21, 30);
  await live.persistence.snapshot();
  await commitRange(live.persistence, live.state, 31, 32);
  const image = crashImage(defer, dir);
  // Kept: snapshots 30 and 20, segments from 21 on. Damage both snapshots.
  assert.deepEqual(files(image).filter((f) => f.startsWith('snapshot-')), [snapshotFileName(20), snapshotFileName(30)]);
  flipByte(join(image, snapshotFileName(30)), 100);
  flipByte(join(image, snapshotFileName(20)), 100);
  await assert.rejects(open(image), (err: unknown) => {
    assert.ok(err instanceof RecoveryError, String(err));
    assert.equal(err.file, join(image, snapshotFileName(30)));
    assert.equal(typeof err.offset, 'number');
    assert.match(err.message, /snapshot-0000000000000020/);
    assert.match(err.message, /gap/);
    return true;
  });
  assert.equal(lockHeld(image), false, 'the lock is released when recovery refuses');
});

test('a gap in the log is detected: the log must start at seq 1 without a snapshot, and continue without holes', async (t) => {
  const { dir } = scoped(t);
  const a = join(dir, 'a');
  const b = join(dir, 'b');
  // a: the log starts at seq 3.
  mkdirSync(a);
  writeFileSync(join(a, segmentFileName(3)), Buffer.concat([encodeRecord(record(3)), encodeRecord(record(4))]));
  await assert.rejects(open(a), (err: unknown) => err instanceof RecoveryError && err.file === join(a, segmentFileName(3)) && err.offset === 0 && /gap/.test(err.message));
  // b: records 1..2, then a segment starting at 5.
  mkdirSync(b);
  writeFileSync(join(b, segmentFileName(1)), Buffer.concat([encodeRecord(record(1)), encodeRecord(record(2))]));
  writeFileSync(join(b, segmentFileName(5)), encodeRecord(record(5)));
  await assert.rejects(open(b), (err: unknown) => err instanceof RecoveryError && err.file === join(b, segmentFileName(5)) && /expected seq 3/.test(err.message));
});

test('a fallback that ends short of the newest snapshot would lose acknowledged changes and is refused', async (t) => {
  const { dir } = scoped(t);
  writeFileSync(join(dir, snapshotFileName(10)), 'not a snapshot');
  writeFileSync(join(dir, segmentFileName(1)), Buffer.concat([1, 2, 3, 4, 5].map((seq) => encodeRecord(record(seq)))));
  await assert.rejects(open(dir), (err: unknown) =>
    err instanceof RecoveryError && err.file === join(dir, snapshotFileName(10)) && /short of this snapshot's base seq 10/.test(err.message));
});

test('a valid snapshot ahead of the log end starts a new segment after it; an empty stray segment is removed', async (t) => {
  const { dir, defer } = scoped(t);
  const source = new FakeState();
  for (let seq = 1; seq <= 10; seq++) source.apply(record(seq));
  await writeSnapshot(new NodeStorage(), dir, source.snapshotSource());
  writeFileSync(join(dir, segmentFileName(1)), Buffer.concat([1, 2, 3, 4, 5].map((seq) => encodeRecord(record(seq)))));
  writeFileSync(join(dir, segmentFileName(20)), '');
  const opened = await open(dir);
  assert.equal(opened.state.lastSeq, 10);
  assert.deepEqual(files(dir), ['LOCK', snapshotFileName(10), segmentFileName(1), segmentFileName(11)].sort());
  await commit(opened.persistence, opened.state, record(11));
  const image = crashImage(defer, dir);
  await opened.persistence.close();
  const again = await open(image);
  defer(() => again.persistence.close());
  assert.deepEqual(again.state.dump(), opened.state.dump());
});

test('corruption in the middle of a segment refuses to start, naming file and offset', async (t) => {
  const { dir, defer } = scoped(t);
  const live = await open(dir);
  defer(() => live.persistence.close());
  for (let seq = 1; seq <= 5; seq++) await commit(live.persistence, live.state, record(seq));
  const image = crashImage(defer, dir);
  const segment = join(image, segmentFileName(1));
  // Where record 3 starts: segments also hold marks (see codec.ts), so offsets are read, not computed.
  const third = decodeLog(readFileSync(segment), segment).offsets[2]!;
  flipByte(segment, third + frameHeaderBytes + 10);
  await assert.rejects(open(image), (err: unknown) => {
    assert.ok(err instanceof RecoveryError, String(err));
    assert.equal(err.file, segment);
    assert.equal(err.offset, third);
    assert.match(err.message, /corrupt/);
    return true;
  });
});

test('a torn record in a segment that is not the last refuses to start', async (t) => {
  const { dir } = scoped(t);
  writeFileSync(join(dir, segmentFileName(1)), Buffer.concat([encodeRecord(record(1)), encodeRecord(record(2)).subarray(0, 9)]));
  writeFileSync(join(dir, segmentFileName(2)), encodeRecord(record(2)));
  await assert.rejects(open(dir), (err: unknown) =>
    err instanceof RecoveryError && err.file === join(dir, segmentFileName(1)) && err.offset === encodeRecord(record(1)).length && /not the last/.test(err.message));
});

test('snapshots keep the newest two and every segment after the older one; falling back still works', async (t) => {
  const { dir, defer } = scoped(t);
  const live = await open(dir);
  defer(() => live.persistence.close());
  for (const upTo of [10, 20, 30]) {
    await commitRange(live.persistence, live.state, upTo - 9, upTo);
    await live.persistence.snapshot();
  }
  await commitRange(live.persistence, live.state, 31, 33);
  assert.deepEqual(files(dir), ['LOCK', snapshotFileName(20), snapshotFileName(30), segmentFileName(21), segmentFileName(31)].sort());
  assert.equal(live.persistence.stats.snapshotsTaken, 3);
  assert.equal(live.persistence.stats.lastSnapshotBaseSeq, 30);

  const image = crashImage(defer, dir);
  flipByte(join(image, snapshotFileName(30)), 50);
  const recovered = await open(image);
  defer(() => recovered.persistence.close());
  assert.deepEqual(recovered.state.dump(), live.state.dump());
});

test('a snapshot is taken automatically after snapshotEveryRecords records', async (t) => {
  const { dir, defer } = scoped(t);
  const live = await open(dir, 10);
  defer(() => live.persistence.close());
  await commitRange(live.persistence, live.state, 1, 12);
  for (let i = 0; i < 500 && live.persistence.stats.snapshotsTaken === 0; i++) await new Promise((r) => setTimeout(r, 5));
  assert.equal(live.persistence.stats.snapshotsTaken, 1);
  assert.ok(existsSync(join(dir, snapshotFileName(12))));
  // The counter moves a moment before the running snapshot settles; a call in between joins that one.
  await live.persistence.snapshot();
  assert.equal(await live.persistence.snapshot(), undefined, 'nothing changed since');
});

test('a snapshot is taken automatically after snapshotEverySeconds when something changed', async (t) => {
  const { dir, defer } = scoped(t);
  const logger = new RecordingLogger();
  const { state, persistence } = await openPersistence({ dir, createState: () => new FakeState(), logger, snapshotEverySeconds: 0.05 });
  defer(() => persistence.close());
  await commitRange(persistence, state, 1, 3);
  for (let i = 0; i < 500 && persistence.stats.snapshotsTaken === 0; i++) await new Promise((r) => setTimeout(r, 5));
  assert.equal(persistence.stats.snapshotsTaken, 1);
  assert.equal(persistence.stats.lastSnapshotBaseSeq, 3);
  assert.equal(persistence.stats.lastSnapshotEntities, 3);
});

test('leftover temporaries are removed at start-up', async (t) => {
  const { dir, defer } = scoped(t);
  writeFileSync(join(dir, snapshotFileName(7) + '.tmp'), 'half a snapshot');
  const opened = await open(dir);
  defer(() => opened.persistence.close());
  assert.deepEqual(files(dir), ['LOCK', segmentFileName(1)]);
});

test('the lock refuses a second opener whatever LOCK says, and is free again once released (issue 23)', async (t) => {
  const { dir } = scoped(t);
  const first = await open(dir);
  await assert.rejects(open(dir), LockError);
  // The kernel lock is the only thing consulted: what the file says, even our own pid (a holder in another
  // pid namespace reads as that), garbage or nothing, never makes a held lock look stale.
  for (const content of [`${process.pid}\n`, `${process.pid} 00000000-0000-0000-0000-000000000000\n`, 'not a pid', '']) {
    writeFileSync(join(dir, 'LOCK'), content);
    await assert.rejects(open(dir), (err: unknown) => err instanceof LockError && err.message.includes('in use'), JSON.stringify(content));
  }
  await first.persistence.close();
  assert.equal(existsSync(join(dir, 'LOCK')), true, 'the LOCK file stays; only the kernel lock goes');
  assert.equal(lockHeld(dir), false);

  // Unheld, a LOCK naming a live process (our parent) is no obstacle either.
  writeFileSync(join(dir, 'LOCK'), `${process.ppid}\n`);
  const again = await open(dir);
  assert.equal(readFileSync(join(dir, 'LOCK'), 'utf8'), `${process.pid}\n`);
  await again.persistence.close();
});

test('close after a log failure releases the lock and reports the failure', async (t) => {
  const { dir } = scoped(t);
  const storage = new HookedStorage();
  const logger = new RecordingLogger();
  const { state, persistence } = await openPersistence({ dir, createState: () => new FakeState(), logger, storage });
  storage.before = (op) => {
    if (op === 'datasync') throw ioError('EIO');
  };
  await assert.rejects(commit(persistence, state, record(1)));
  await assert.rejects(persistence.close());
  assert.equal(lockHeld(dir), false);
  assert.equal(files(dir).some((f) => f.startsWith('snapshot-')), false, 'no snapshot of a state the log does not hold');
});
