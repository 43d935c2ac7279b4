// Torn tails: the log cut at every byte offset of its last two records, or its last 512 bytes zeroed, starts with exactly the records before the damage and takes new writes; the same on the real server.

import assert from 'node:assert/strict';
import { cpSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { decodeLog } from '../src/persist/codec.js';
import { segmentFileName } from '../src/persist/layout.js';
import { buildLog, damagedCopy, frameMap, modelAfter, modelRecord, recoverCopy, type Built } from './helpers/fault-logs.js';
import { okKey } from './helpers/http-shapes.js';
import { newServerDirs, startServer } from './helpers/server.js';

const segment = segmentFileName(1);

/** Recovers a damaged copy, checks it holds exactly records 1..expected, appends one more, reopens, checks again. */
async function startsWithExactly(built: Built, damage: (bytes: Uint8Array) => Uint8Array, expected: number, what: string): Promise<void> {
  const copy = damagedCopy(built, (files, put) => put(segment, damage(files.get(segment)!)));
  const opened = await recoverCopy(copy);
  if ('error' in opened) assert.fail(`${what}: recovery refused: ${String(opened.error)}`);
  assert.equal(opened.state.lastSeq, expected, `${what}: recovered up to seq ${opened.state.lastSeq}, expected ${expected}`);
  assert.deepEqual(opened.state.dump(), modelAfter(expected).dump(), `${what}: the state is exactly records 1..${expected}`);
  const next = modelRecord(expected + 1);
  const durable = opened.persistence.append(next);
  opened.state.apply(next);
  await durable;
  await opened.persistence.close();
  const again = await recoverCopy(copy);
  if ('error' in again) assert.fail(`${what}: the reopen after a new write refused: ${String(again.error)}`);
  assert.equal(again.state.lastSeq, expected + 1, `${what}: the new write survived`);
  assert.deepEqual(again.state.dump(), modelAfter(expected + 1).dump());
  await again.persistence.close();
}

for (const together of [1, 2]) {
  test(`a log cut at every byte offset of its last two records (${together === 1 ? 'one batch each' : 'one batch together'}) starts with exactly the records before the cut and takes new writes`, async (t) => {
    const built = await buildLog(`/torn/cut${together}`, 12, { together });
    const bytes = built.storage.files(built.dir).get(segment)!;
    const frames = frameMap(bytes);
    assert.equal(frames.length, 12);
    // From the end of record 10: the last two records and their batch marks.
    const from = frames[9]!.end;
    let cases = 0;
    for (let cut = from; cut < bytes.length; cut++) {
      const expected = frames.filter((f) => f.end <= cut).length;
      await startsWithExactly(built, (b) => b.slice(0, cut), expected, `cut at ${cut} of ${bytes.length}`);
      cases++;
    }
    t.diagnostic(`${cases} cut offsets (bytes ${from}..${bytes.length - 1})`);
  });
}

test('a log whose last 512 bytes are zeroed starts with exactly the records before them and takes new writes', async () => {
  const built = await buildLog('/torn/zero', 30);
  const bytes = built.storage.files(built.dir).get(segment)!;
  const frames = frameMap(bytes);
  const zeroFrom = bytes.length - 512;
  assert.ok(frames.filter((f) => f.end > zeroFrom).length >= 3, 'the zeroed bytes span several records');
  const expected = frames.filter((f) => f.end <= zeroFrom).length;
  await startsWithExactly(built, (b) => {
    const z = b.slice();
    z.fill(0, zeroFrom);
    return z;
  }, expected, 'last 512 bytes zeroed');
  // And zero fill past the end, as a file system may leave after a crash.
  await startsWithExactly(built, (b) => Buffer.concat([b, Buffer.alloc(4096)]), 30, 'zero fill appended');
});

test('the real server: a log cut inside its last records, or with its last 512 bytes zeroed, starts with the records before and takes new writes', async (t) => {
  const server = await startServer();
  try {
    const api = server.api();
    for (let i = 0; i < 12; i++) okKey(await api.post('/applications/application', { name: `torn-${i}`, description: 'x'.repeat(40 * i) }), 'application');
    await server.kill();
    const segmentName = readdirSync(server.dirs.dataDir).filter((f) => f.startsWith('wal-')).sort().at(-1)!;
    const original = readFileSync(join(server.dirs.dataDir, segmentName));
    const frames = frameMap(original);
    const appNames = decodeLog(original, segmentName).records.map((r) => r.ops.flatMap((op) => (op.op === 'put' && op.kind === 'application' ? [op.value.name] : [])));
    const last = frames.at(-1)!;
    const zeroFrom = original.length - 512;
    const cases: Array<{ what: string; damaged: Buffer; kept: number }> = [
      { what: 'cut inside the last frame header', damaged: original.subarray(0, last.start + 3), kept: frames.length - 1 },
      { what: 'cut inside the last payload', damaged: original.subarray(0, last.start + 20), kept: frames.length - 1 },
      { what: 'cut inside the record before', damaged: original.subarray(0, frames.at(-2)!.start + 30), kept: frames.length - 2 },
      { what: 'last 512 bytes zeroed', damaged: Buffer.concat([original.subarray(0, zeroFrom), Buffer.alloc(512)]), kept: frames.filter((f) => f.end <= zeroFrom).length },
    ];
    for (const { what, damaged, kept } of cases) {
      // Each case on its own copy of the data directory, with the same server key.
      const dirs = newServerDirs();
      cpSync(server.dirs.dataDir, dirs.dataDir, { recursive: true });
      cpSync(server.dirs.keyFile, dirs.keyFile);
      writeFileSync(join(dirs.dataDir, segmentName), damaged);
      const copy = await startServer({ dirs });
      try {
        const api2 = copy.api();
        const listed = okKey<{ name: string }[]>(await api2.get('/applications'), 'applications').map((a) => a.name).filter((n) => n.startsWith('torn-'));
        const expected = appNames.slice(0, kept).flat().filter((n) => n.startsWith('torn-'));
        assert.deepEqual(listed.sort(), expected.sort(), `${what}: exactly the applications before the damage`);
        okKey(await api2.post('/applications/application', { name: `after ${what}` }), 'application');
        const warning = copy.logLines().find((l) => l['msg'] === 'cutting off a torn record at the end of the log (a crash during its write)');
        assert.ok(warning !== undefined && warning['file'] === join(dirs.dataDir, segmentName), `${what}: the cut is logged, naming the file`);
        t.diagnostic(`${what}: started with ${kept} of ${frames.length} records and took a new write`);
      } finally {
        await copy.dispose();
      }
    }
  } finally {
    await server.dispose();
  }
});
