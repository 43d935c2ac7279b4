// --repair: backs the damaged file up, cuts the log at the damage (or sets a bad snapshot aside), says what was dropped, and the service starts again with exactly what is left.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { segmentFileName, snapshotFileName } from '../src/persist/layout.js';
import { repairDataDir, describeRepair } from '../src/persist/repair.js';
import { RecoveryError } from '../src/persist/recovery.js';
import { FakeState, RecordingLogger } from './helpers/persist-fixtures.js';
import { buildLog, damagedCopy, frameMap, modelAfter, modelRecord, recoverCopy, flipped } from './helpers/fault-logs.js';
import { okKey } from './helpers/http-shapes.js';
import { startServer } from './helpers/server.js';


test('repair cuts a corrupt segment at the damaged frame, keeps the original as a backup, and reports the records dropped', async () => {
  const built = await buildLog('/repair/cut', 20);
  const segment = built.storage.files(built.dir).get(segmentFileName(1))!;
  const tenth = frameMap(segment)[9]!;
  const copy = damagedCopy(built, (_, put) => put(segmentFileName(1), flipped(segment, tenth.start + 14)));
  const refused = await recoverCopy(copy);
  assert.ok('error' in refused && refused.error instanceof RecoveryError, 'recovery refuses first');

  const report = await repairDataDir({ dir: copy.dir, createState: () => new FakeState(), logger: new RecordingLogger(), storage: copy.storage, now: () => new Date(0) });
  assert.equal(report.actions.length, 1);
  const [action] = report.actions;
  assert.equal(action!.kind, 'log_cut');
  assert.equal(action!.offset, tenth.start);
  assert.equal(action!.droppedBytes, segment.length - tenth.start);
  assert.deepEqual(action!.droppedRecords, { count: 10, firstSeq: 11, lastSeq: 20 }, 'the whole records after the damaged one are named');
  assert.equal(report.lastSeq, 9);
  const files = copy.storage.files(copy.dir);
  assert.deepEqual(files.get(`${segmentFileName(1)}.damaged-1970-01-01T00-00-00-000Z`), flipped(segment, tenth.start + 14), 'the backup is the damaged original, byte for byte');
  assert.equal(files.get(segmentFileName(1))!.length, tenth.start);
  assert.match(describeRepair(report), /cut .*wal-0000000000000001\.log at offset \d+: dropped \d+ bytes holding 10 whole records \(seq 11\.\.20\)/);

  const reopened = await recoverCopy(copy);
  if ('error' in reopened) assert.fail(String(reopened.error));
  assert.deepEqual(reopened.state.dump(), modelAfter(9).dump());
  const next = modelRecord(10);
  const durable = reopened.persistence.append(next);
  reopened.state.apply(next);
  await durable;
  await reopened.persistence.close();
});

test('repair of damage behind a bad snapshot: cuts the log, sets later segments and the snapshot aside, and says which changes are lost', async () => {
  const built = await buildLog('/repair/deep', 26, { snapshotsAfter: [10, 20] });
  const files = built.storage.files(built.dir);
  const older = files.get(segmentFileName(11))!;
  const fifteenth = frameMap(older).find((f) => f.seq === 15)!;
  const copy = damagedCopy(built, (_, put) => {
    put(snapshotFileName(20), flipped(files.get(snapshotFileName(20))!, 30));
    put(segmentFileName(11), flipped(older, fifteenth.start + 9));
  });
  const report = await repairDataDir({ dir: copy.dir, createState: () => new FakeState(), logger: new RecordingLogger(), storage: copy.storage, now: () => new Date(0) });
  assert.deepEqual(report.actions.map((a) => a.kind), ['log_cut', 'log_set_aside', 'snapshot_set_aside']);
  assert.deepEqual(report.actions[1]!.droppedRecords, { count: 6, firstSeq: 21, lastSeq: 26 });
  assert.equal(report.lastSeq, 14);
  assert.deepEqual(report.lostSeqs, { from: 15, to: 20 });
  const text = describeRepair(report);
  assert.match(text, /changes seq 15\.\.20 were only in a set-aside snapshot and are lost/);
  const reopened = await recoverCopy(copy);
  if ('error' in reopened) assert.fail(String(reopened.error));
  assert.deepEqual(reopened.state.dump(), modelAfter(14).dump());
  await reopened.persistence.close();
});

test('repair of a healthy directory changes nothing', async () => {
  const built = await buildLog('/repair/healthy', 5);
  const copy = damagedCopy(built, () => undefined);
  const before = [...copy.storage.files(copy.dir).entries()].filter(([n]) => n !== 'LOCK');
  const report = await repairDataDir({ dir: copy.dir, createState: () => new FakeState(), logger: new RecordingLogger(), storage: copy.storage });
  assert.deepEqual(report.actions, []);
  assert.equal(report.lastSeq, 5);
  assert.deepEqual([...copy.storage.files(copy.dir).entries()].filter(([n]) => n !== 'LOCK'), before);
});

const mainJs = fileURLToPath(new URL('../src/main.js', import.meta.url));

test('the real server refuses a corrupt log naming file and offset; `--repair` fixes it and says what was dropped; it then starts with what is left', async () => {
  const server = await startServer();
  try {
    const api = server.api();
    for (let i = 0; i < 10; i++) okKey(await api.post('/applications/application', { name: `repair-${i}` }), 'application');
    await server.kill();
    const dataDir = server.dirs.dataDir;
    const segmentName = readdirSync(dataDir).filter((f) => f.startsWith('wal-')).sort().at(-1)!;
    const path = join(dataDir, segmentName);
    const original = readFileSync(path);
    const frames = frameMap(original);
    const damaged = frames.at(-5)!;
    writeFileSync(path, flipped(original, damaged.start + 20));

    await assert.rejects(server.restart(), (err: Error) => {
      assert.match(err.message, new RegExp(`${segmentName} is corrupt at offset ${damaged.start}`));
      return true;
    });

    const env = { ...process.env, DATA_DIR: dataDir, KEY_FILE: server.dirs.keyFile, LOG_LEVEL: 'warn' };
    const run = spawnSync(process.execPath, [mainJs, '--repair'], { env, encoding: 'utf8', cwd: server.dirs.root });
    assert.equal(run.status, 0, run.stderr);
    assert.match(run.stderr, new RegExp(`cut .*${segmentName} at offset ${damaged.start}: dropped ${original.length - damaged.start} bytes holding 4 whole records`));
    assert.match(run.stderr, /recovery now starts with the state as of seq \d+/);
    const backups = readdirSync(dataDir).filter((f) => f.startsWith(`${segmentName}.damaged-`));
    assert.equal(backups.length, 1);
    assert.deepEqual(new Uint8Array(readFileSync(join(dataDir, backups[0]!))), flipped(original, damaged.start + 20));

    const again = await startServer({ dirs: server.dirs });
    try {
      const names = okKey<{ name: string }[]>(await again.api().get('/applications'), 'applications').map((a) => a.name).filter((n) => n.startsWith('repair-'));
      assert.deepEqual(names.sort(), ['repair-0', 'repair-1', 'repair-2', 'repair-3', 'repair-4'].sort());
      okKey(await again.api().post('/applications/application', { name: 'after repair' }), 'application');
    } finally {
      await again.stop();
    }
  } finally {
    await server.dispose();
  }
});
