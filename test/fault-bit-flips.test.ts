// Bit flips: damage anywhere in earlier log records or in the newest snapshot is never skipped silently; recovery falls back to the previous snapshot plus the log where that gives the same state, else refuses, naming the file and offset.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { segmentFileName, snapshotFileName } from '../src/persist/layout.js';
import { RecoveryError } from '../src/persist/recovery.js';
import { buildLog, damagedCopy, frameMap, modelAfter, recoverCopy, type Built, flipped } from './helpers/fault-logs.js';

/** Snapshots after 10 and 20, then 21..26: kept are snapshot-10, snapshot-20, wal-11 and wal-21 (the live one). */
async function twoSnapshots(dir: string): Promise<Built> {
  return buildLog(dir, 26, { snapshotsAfter: [10, 20] });
}


test('a bit flip anywhere in the log before its last write refuses to start, naming the segment and the damaged frame', async (t) => {
  const built = await twoSnapshots('/flip/log');
  const files = built.storage.files(built.dir);
  assert.deepEqual([...files.keys()].filter((f) => f !== 'LOCK').sort(), [snapshotFileName(10), snapshotFileName(20), segmentFileName(11), segmentFileName(21)].sort());
  const live = files.get(segmentFileName(21))!;
  const frames = frameMap(live);
  const lastWriteStart = frames.at(-2)!.end; // the last batch: its mark and record 26
  let refused = 0;
  for (let at = 0; at < lastWriteStart; at++) {
    const copy = damagedCopy(built, (_, put) => put(segmentFileName(21), flipped(live, at, at % 8)));
    const outcome = await recoverCopy(copy);
    if (!('error' in outcome)) {
      await outcome.persistence.close();
      assert.fail(`a flip at byte ${at} of ${segmentFileName(21)} was not noticed: recovered seq ${outcome.state.lastSeq}`);
    }
    const err = outcome.error;
    assert.ok(err instanceof RecoveryError, `byte ${at}: ${String(err)}`);
    assert.equal(err.file, `${copy.dir}/${segmentFileName(21)}`);
    assert.ok(err.offset !== undefined && err.offset <= at, `byte ${at}: the offset named (${err.offset}) is where the damaged frame starts`);
    assert.match(err.message, new RegExp(`offset ${err.offset}`));
    refused++;
  }
  t.diagnostic(`${refused} single-bit flips in ${segmentFileName(21)} (every byte before its last write): every one refused, naming file and offset`);
});

test('a bit flip in the last write of the log cuts it off there, with a warning naming file and offset (it was never known durable)', async () => {
  const built = await twoSnapshots('/flip/last');
  const live = built.storage.files(built.dir).get(segmentFileName(21))!;
  const frames = frameMap(live);
  const lastWriteStart = frames.at(-2)!.end;
  for (let at = lastWriteStart; at < live.length; at += 3) {
    const copy = damagedCopy(built, (_, put) => put(segmentFileName(21), flipped(live, at, 7 - (at % 8))));
    const outcome = await recoverCopy(copy);
    if ('error' in outcome) assert.fail(`byte ${at}: ${String(outcome.error)}`);
    assert.equal(outcome.state.lastSeq, 25, 'exactly the records before the last write');
    assert.deepEqual(outcome.state.dump(), modelAfter(25).dump());
    const warning = outcome.logger.at('warn').find((e) => e.obj['file'] === `${copy.dir}/${segmentFileName(21)}`);
    // The damaged frame is either the write's mark or its record; the cut is where it starts.
    const damagedFrame = at >= frames.at(-1)!.start ? frames.at(-1)!.start : lastWriteStart;
    assert.ok(warning !== undefined && warning.obj['offset'] === damagedFrame, `byte ${at}: a warning names the file and offset`);
    await outcome.persistence.close();
  }
});

test('a bit flip anywhere in the newest snapshot falls back to the previous snapshot plus the log, with the same state and a warning naming the file', async (t) => {
  const built = await twoSnapshots('/flip/snap');
  const snapshot = built.storage.files(built.dir).get(snapshotFileName(20))!;
  const truth = modelAfter(26).dump();
  for (let at = 0; at < snapshot.length; at++) {
    const copy = damagedCopy(built, (_, put) => put(snapshotFileName(20), flipped(snapshot, at, at % 8)));
    const outcome = await recoverCopy(copy);
    if ('error' in outcome) assert.fail(`byte ${at}: ${String(outcome.error)}`);
    assert.deepEqual(outcome.state.dump(), truth, `byte ${at}: the same state`);
    const warning = outcome.logger.at('warn').find((e) => e.obj['file'] === `${copy.dir}/${snapshotFileName(20)}`);
    assert.ok(warning !== undefined && typeof warning.obj['offset'] === 'number', `byte ${at}: the bad snapshot is named with an offset`);
    await outcome.persistence.close();
  }
  t.diagnostic(`${snapshot.length} single-bit flips in ${snapshotFileName(20)}: every one fell back to ${snapshotFileName(10)} plus the log, warning with file and offset`);
});

test('a bad newest snapshot with a damaged fallback path refuses to start, naming file and offset', async () => {
  const built = await twoSnapshots('/flip/both');
  const files = built.storage.files(built.dir);
  const older = files.get(segmentFileName(11))!;
  const middle = frameMap(older)[4]!;
  const copy = damagedCopy(built, (_, put) => {
    put(snapshotFileName(20), flipped(files.get(snapshotFileName(20))!, 40, 3));
    put(segmentFileName(11), flipped(older, middle.start + 12, 0));
  });
  const outcome = await recoverCopy(copy);
  assert.ok('error' in outcome, 'recovery refused');
  const err = outcome.error;
  assert.ok(err instanceof RecoveryError, String(err));
  assert.equal(err.file, `${copy.dir}/${segmentFileName(11)}`);
  assert.equal(err.offset, middle.start);
});
