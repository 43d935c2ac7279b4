// Msgpack snapshots: chunked round trip, the string dictionary, fuzzy writes under concurrent change, and SnapshotError for damaged, unfinished or other-version files.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  snapshotChunkEntities, snapshotSharedListItemsMax, snapshotSharedListsMax, snapshotSharedStringCharsMax, snapshotSharedStringsMax,
} from '../src/config/limits.js';
import type { EntityKind } from '../src/domain/entities.js';
import { encodeRecord, frame as logFrame, frameHeaderBytes, packr } from '../src/persist/codec.js';
import { segmentFileName, snapshotFileName } from '../src/persist/layout.js';
import { recover, RecoveryError } from '../src/persist/recovery.js';
import { readSnapshot, readSnapshotChunks, SnapshotError, snapshotFormatVersion, snapshotFrame, snapshotMagic, writeSnapshot } from '../src/persist/snapshot.js';
import { NodeStorage } from '../src/persist/storage.js';
import { withSharedStrings } from '../src/store/compact.js';
import { FakeState, HookedStorage, ioError, putUser, record, RecordingLogger, tempDir, turn, user } from './helpers/persist-fixtures.js';

const storage = new NodeStorage();

function populated(users: number): FakeState {
  const state = new FakeState();
  state.apply(record(1, { op: 'put', kind: 'meta', value: { baseApplication: 'app-1', defaultOrganization: 'org-1' } }));
  state.apply(record(2, { op: 'put', kind: 'organization', value: { id: 'org-1', name: 'Org', description: '', customData: null, status: 'ENABLED', createdAt: 1, modifiedAt: 1 } }));
  // Many key sets inside one chunk: chunks encode entities as msgpackr records, one structure per key set.
  for (let i = 0; i < users; i++) {
    const customData = { [`k${i % 300}`]: i, nested: { [`n${i % 70}`]: [i, null, 'x'] } };
    state.maps.get('user')!.set(`u${i}`, user(`u${i}`, `User ${i} ✓`, i % 5 === 0 ? { customData: null } : { customData }));
  }
  state.lastSeq = 10;
  return state;
}

/** Frame start offsets of a snapshot file, walking the length fields. */
function frameStarts(buf: Buffer): number[] {
  const starts: number[] = [];
  for (let at = 0; at < buf.length; at += frameHeaderBytes + buf.readUInt32LE(at)) starts.push(at);
  return starts;
}

/** A FakeState loaded with a snapshot's sections, as recovery loads the real State. */
function restoredFrom(loaded: { readonly sections: ReadonlyMap<EntityKind, readonly unknown[]>; readonly baseSeq: number }): FakeState {
  const restored = new FakeState();
  for (const [kind, values] of loaded.sections) restored.loadSection(kind, values);
  restored.finishLoad(loaded.baseSeq);
  return restored;
}

test('a snapshot round-trips many entities in several chunks, under its baseSeq name, with no temporary left', async (t) => {
  const { dir, cleanup } = tempDir();
  t.after(cleanup);
  const state = populated(5000);
  const written = await writeSnapshot(storage, dir, state.snapshotSource());
  assert.equal(written.path, join(dir, snapshotFileName(10)));
  assert.equal(written.entities, 5002);
  assert.equal(written.counts.user, 5000);
  assert.equal(written.chunks, 2 + Math.ceil(5000 / snapshotChunkEntities));
  assert.deepEqual(readdirSync(dir), ['snapshot-0000000000000010.msgpack']);
  const loaded = await readSnapshot(storage, written.path);
  assert.equal(loaded.baseSeq, 10);
  assert.equal(loaded.bytes, written.bytes);
  const restored = restoredFrom(loaded);
  assert.deepEqual(restored.dump(), state.dump());
  assert.equal(loaded.sections.has('group'), false, 'empty kinds have no section');
});

test('large entities are cut into chunks by bytes, not only by count', async (t) => {
  const { dir, cleanup } = tempDir();
  t.after(cleanup);
  const state = new FakeState();
  const blob = 'z'.repeat(100 * 1024);
  for (let i = 0; i < 40; i++) state.maps.get('user')!.set(`u${i}`, user(`u${i}`, 'big', { customData: { blob } }));
  const written = await writeSnapshot(storage, dir, state.snapshotSource());
  assert.ok(written.chunks >= 4, `chunks: ${written.chunks}`);
  const loaded = await readSnapshot(storage, written.path);
  assert.equal(loaded.sections.get('user')!.length, 40);
});

test('the state may change while the snapshot is written; loading it then replaying the later records converges', async (t) => {
  const { dir, cleanup } = tempDir();
  t.after(cleanup);
  const state = populated(6000);
  const source = state.snapshotSource();
  const later = [record(11, putUser('u1', 'renamed')), record(12, { op: 'del', kind: 'user', id: 'u5999' }), record(13, putUser('new-one'))];
  const writing = writeSnapshot(storage, dir, source);
  await turn();
  for (const r of later) state.apply(r);
  const written = await writing;
  const loaded = await readSnapshot(storage, written.path);
  const restored = restoredFrom(loaded);
  for (const r of later) restored.apply(r);
  assert.deepEqual(restored.dump(), state.dump());
});

test('chunks are handed over one by one in file order, and a later bad frame still fails the whole read (issue 3)', async (t) => {
  const { dir, cleanup } = tempDir();
  t.after(cleanup);
  const written = await writeSnapshot(storage, dir, populated(1200).snapshotSource());
  const seen: Array<[EntityKind, number]> = [];
  const summary = await readSnapshotChunks(storage, written.path, (kind, values) => seen.push([kind, values.length]));
  assert.deepEqual(seen.map(([kind]) => kind), ['meta', 'organization', 'user', 'user', 'user']);
  assert.ok(seen.every(([, n]) => n <= snapshotChunkEntities));
  assert.deepEqual(summary.counts, { meta: 1, organization: 1, application: 0, group: 0, user: 1200 });
  assert.equal(summary.bytes, written.bytes);

  const original = readFileSync(written.path);
  const starts = frameStarts(original);
  const damaged = Buffer.from(original);
  damaged[starts[starts.length - 1]! + frameHeaderBytes + 1] ^= 0x01;
  writeFileSync(written.path, damaged);
  let handed = 0;
  await assert.rejects(readSnapshotChunks(storage, written.path, () => handed++), (err: unknown) => err instanceof SnapshotError && err.offset === starts[starts.length - 1]);
  assert.equal(handed, 5, 'every good chunk was handed over before the trailer failed the file');
});

async function expectInvalid(path: string, check: (err: SnapshotError) => void): Promise<void> {
  await assert.rejects(readSnapshot(storage, path), (err: unknown) => {
    assert.ok(err instanceof SnapshotError, String(err));
    assert.equal(err.code, 'snapshot_invalid');
    assert.equal(err.file, path);
    check(err);
    return true;
  });
}

test('a flipped bit anywhere in a snapshot is a SnapshotError naming the file and the damaged frame', async (t) => {
  const { dir, cleanup } = tempDir();
  t.after(cleanup);
  const written = await writeSnapshot(storage, dir, populated(3000).snapshotSource());
  const original = readFileSync(written.path);
  const starts = frameStarts(original);
  for (const frameIndex of [0, 1, 2, starts.length - 1]) {
    const at = starts[frameIndex]! + frameHeaderBytes + 3;
    const damaged = Buffer.from(original);
    damaged[at] ^= 0x10;
    writeFileSync(written.path, damaged);
    await expectInvalid(written.path, (err) => {
      assert.equal(err.offset, starts[frameIndex]);
      assert.match(err.message, /checksum/);
    });
  }
});

test('a snapshot without its trailer, or cut inside a frame, is invalid', async (t) => {
  const { dir, cleanup } = tempDir();
  t.after(cleanup);
  const written = await writeSnapshot(storage, dir, populated(2500).snapshotSource());
  const original = readFileSync(written.path);
  const starts = frameStarts(original);
  const trailerAt = starts[starts.length - 1]!;
  writeFileSync(written.path, original.subarray(0, trailerAt));
  await expectInvalid(written.path, (err) => assert.match(err.message, /missing trailer/));
  writeFileSync(written.path, original.subarray(0, trailerAt - 100));
  await expectInvalid(written.path, (err) => assert.match(err.message, /past the end/));
  writeFileSync(written.path, original.subarray(0, 5));
  await expectInvalid(written.path, (err) => assert.equal(err.offset, 0));
  writeFileSync(written.path, Buffer.concat([original, Buffer.from([1, 2, 3])]));
  await expectInvalid(written.path, (err) => assert.match(err.message, /after the trailer/));
});

test('a file that is not a snapshot, or whose header disagrees with its name, is invalid', async (t) => {
  const { dir, cleanup } = tempDir();
  t.after(cleanup);
  const notSnapshot = join(dir, snapshotFileName(3));
  writeFileSync(notSnapshot, 'hello, this is not a snapshot at all');
  await expectInvalid(notSnapshot, () => undefined);
  const written = await writeSnapshot(storage, dir, populated(1).snapshotSource());
  const renamed = join(dir, snapshotFileName(11));
  writeFileSync(renamed, readFileSync(written.path));
  await expectInvalid(renamed, (err) => assert.match(err.message, /file name says 11/));
});

test('a failing write leaves no temporary and reports snapshot_write', async (t) => {
  const { dir, cleanup } = tempDir();
  t.after(cleanup);
  const hooked = new HookedStorage();
  hooked.before = (op) => {
    if (op === 'write' && hooked.count('write') === 3) throw ioError('ENOSPC');
  };
  await assert.rejects(writeSnapshot(hooked, dir, populated(5000).snapshotSource()), (err: unknown) =>
    err instanceof SnapshotError && err.code === 'snapshot_write' && /ENOSPC/.test(err.message));
  assert.deepEqual(readdirSync(dir), []);
});

test('writing yields to the event loop between chunks', async (t) => {
  const { dir, cleanup } = tempDir();
  t.after(cleanup);
  const state = populated(snapshotChunkEntities * 4);
  let turnsDuringWrite = 0;
  let writing = true;
  const tick = (): void => {
    if (!writing) return;
    turnsDuringWrite++;
    setImmediate(tick);
  };
  setImmediate(tick);
  const written = await writeSnapshot(storage, dir, state.snapshotSource());
  writing = false;
  assert.ok(turnsDuringWrite >= written.chunks, `turns ${turnsDuringWrite}, chunks ${written.chunks}`);
});

test('entity kinds are restored in their own sections', async (t) => {
  const { dir, cleanup } = tempDir();
  t.after(cleanup);
  const state = populated(3);
  state.apply(record(11, { op: 'put', kind: 'group', value: { id: 'g1', name: 'G', description: '', customData: {}, status: 'ENABLED', application: 'app-1', createdAt: 1, modifiedAt: 1 } }));
  const written = await writeSnapshot(storage, dir, state.snapshotSource());
  const loaded = await readSnapshot(storage, written.path);
  const kinds: EntityKind[] = [...loaded.sections.keys()].sort();
  assert.deepEqual(kinds, ['group', 'meta', 'organization', 'user']);
  assert.deepEqual(loaded.counts, { meta: 1, organization: 1, application: 0, group: 1, user: 3 });
});

/** Times `needle` occurs in `haystack`. */
function occurrences(haystack: Buffer, needle: string): number {
  let n = 0;
  for (let at = haystack.indexOf(needle); at !== -1; at = haystack.indexOf(needle, at + 1)) n++;
  return n;
}

test('repeated strings are written once, in the string dictionary, and come back in every entity that had them', async (t) => {
  const { dir, cleanup } = tempDir();
  t.after(cleanup);
  const state = populated(0);
  const orgId = 'org-shared-by-everyone-7f3a';
  const longValue = `long-${'L'.repeat(snapshotSharedStringCharsMax)}`;
  state.apply(record(11, { op: 'put', kind: 'organization', value: { id: orgId, name: 'Shared', description: '', customData: null, status: 'ENABLED', createdAt: 2, modifiedAt: 2 } }));
  state.apply(record(12, { op: 'put', kind: 'group', value: { id: 'group-shared-91', name: 'G', description: '', customData: { tier: 'gold-tier-label' }, status: 'ENABLED', application: 'app-1', createdAt: 3, modifiedAt: 3 } }));
  for (let i = 0; i < 3 * snapshotChunkEntities; i++) {
    state.maps.get('user')!.set(`u${i}`, user(`u${i}`, `User ${i}`, {
      organization: orgId, groups: i % 2 === 0 ? ['group-shared-91'] : [],
      customData: { tier: 'gold-tier-label', n: i, long: longValue, plan: 'plan-value-x' },
      apikeys: i % 3 === 0 ? [{ id: `k${i}`, name: 'key', status: 'ENABLED', createdAt: 1 } as never] : [],
    }));
  }
  const source = { ...state.snapshotSource(), shareStrings: withSharedStrings };
  const written = await writeSnapshot(storage, dir, source);
  const file = readFileSync(written.path);
  for (const repeated of [orgId, 'group-shared-91', 'gold-tier-label', 'plan-value-x']) assert.equal(occurrences(file, repeated), 1, repeated);
  assert.equal(occurrences(file, longValue), 3 * snapshotChunkEntities, 'a string longer than snapshotSharedStringCharsMax is written inline');
  const loaded = await readSnapshot(storage, written.path);
  const restored = restoredFrom(loaded);
  assert.deepEqual(restored.dump(), state.dump());
});

test('the string dictionary stops at snapshotSharedStringsMax; later strings are written inline and still read back', async (t) => {
  const { dir, cleanup } = tempDir();
  t.after(cleanup);
  const state = populated(0);
  const users = snapshotSharedStringsMax + 1000;
  for (let i = 0; i < users; i++) state.maps.get('user')!.set(`u${i}`, user(`u${i}`, 'n', { customData: { tag: `tag-${i}` }, organization: `org-${i % 7}` }));
  const written = await writeSnapshot(storage, dir, { ...state.snapshotSource(), shareStrings: withSharedStrings });
  const loaded = await readSnapshot(storage, written.path);
  const restored = restoredFrom(loaded);
  assert.deepEqual(restored.dump(), state.dump());
});

/** A snapshot file made frame by frame, its header naming `version`: each frame is a list of values, packed one after another. */
function handMade(path: string, version: number, chunks: { kind: EntityKind; entities: Uint8Array[] }[]): void {
  const frames = [snapshotFrame(packr.pack({ t: 'header', magic: snapshotMagic, version, baseSeq: 5 }))];
  const counts: Record<string, number> = {};
  for (const { kind, entities } of chunks) {
    frames.push(snapshotFrame(Buffer.concat([packr.pack({ t: 'chunk', kind, n: entities.length }), ...entities])));
    counts[kind] = (counts[kind] ?? 0) + entities.length;
  }
  frames.push(snapshotFrame(packr.pack({ t: 'trailer', counts, chunks: chunks.length })));
  writeFileSync(path, Buffer.concat(frames));
}

/** The refusal of a header naming `version`: the version found and the only one this build reads. */
function otherVersion(version: number): RegExp {
  return new RegExp(`snapshot format version ${version}; this build reads format version ${snapshotFormatVersion} only`);
}

test('a snapshot of any other format version is refused, naming the version found and the one this build reads', async (t) => {
  const { dir, cleanup } = tempDir();
  t.after(cleanup);
  const path = join(dir, snapshotFileName(5));
  const one = user('u1', 'Only Format');
  handMade(path, snapshotFormatVersion, [{ kind: 'user', entities: [packr.pack(one)] }]);
  assert.deepEqual((await readSnapshot(storage, path)).sections.get('user'), [one]);
  for (const version of [snapshotFormatVersion - 1, snapshotFormatVersion + 1, 0]) {
    handMade(path, version, [{ kind: 'user', entities: [packr.pack(one)] }]);
    await expectInvalid(path, (err) => {
      assert.equal(err.offset, 0);
      assert.match(err.reason, otherVersion(version));
    });
  }
  // A release whose frames carried another checksum (earlier formats used the log's CRC32C): still refused
  // for its version, not taken for damage, though the checksum cannot tell which.
  const header = (version: number): Uint8Array => packr.pack({ t: 'header', magic: snapshotMagic, version, baseSeq: 5 });
  const trailer = packr.pack({ t: 'trailer', counts: {}, chunks: 0 });
  writeFileSync(path, Buffer.concat([logFrame(header(snapshotFormatVersion - 1)), logFrame(trailer)]));
  await expectInvalid(path, (err) => {
    assert.equal(err.offset, 0);
    assert.match(err.reason, otherVersion(snapshotFormatVersion - 1));
    assert.match(err.reason, /checksum is not this version's/);
  });
  // This version's header under any checksum but CRC-32 is damage.
  writeFileSync(path, Buffer.concat([logFrame(header(snapshotFormatVersion)), snapshotFrame(trailer)]));
  await expectInvalid(path, (err) => assert.equal(err.reason, 'checksum mismatch'));
  writeFileSync(path, Buffer.concat([snapshotFrame(header(snapshotFormatVersion)), snapshotFrame(trailer)]));
  assert.equal((await readSnapshot(storage, path)).baseSeq, 5);
});

test('recovery takes a snapshot of another format version for an invalid one: it falls back to the log, or refuses naming the version', async (t) => {
  const { dir, cleanup } = tempDir();
  t.after(cleanup);
  const previous = snapshotFormatVersion - 1;
  const records = (from: number, to: number): Buffer =>
    Buffer.concat(Array.from({ length: to - from + 1 }, (_, i) => encodeRecord(record(from + i, putUser(`u${from + i}`)))));
  // The whole log is there: the state is rebuilt from seq 1, with a warning naming the snapshot and its version.
  const whole = join(dir, 'whole');
  mkdirSync(whole);
  const snapshotPath = join(whole, snapshotFileName(5));
  handMade(snapshotPath, previous, [{ kind: 'user', entities: [packr.pack(user('u1'))] }]);
  writeFileSync(join(whole, segmentFileName(1)), records(1, 7));
  const logger = new RecordingLogger();
  const recovered = await recover({ dir: whole, storage, createState: () => new FakeState(), logger });
  assert.equal(recovered.snapshotBaseSeq, undefined);
  assert.equal(recovered.recordsReplayed, 7);
  assert.deepEqual([...recovered.state.maps.get('user')!.keys()].sort(), ['u1', 'u2', 'u3', 'u4', 'u5', 'u6', 'u7']);
  const warning = logger.at('warn').find((e) => e.obj['file'] === snapshotPath);
  assert.ok(warning, 'the refused snapshot is named in a warning');
  assert.match(String(warning.obj['reason']), otherVersion(previous));
  // The log starts after the snapshot: nothing gives the state, so recovery refuses, naming the snapshot and why.
  const tail = join(dir, 'tail');
  mkdirSync(tail);
  handMade(join(tail, snapshotFileName(5)), previous, [{ kind: 'user', entities: [packr.pack(user('u1'))] }]);
  writeFileSync(join(tail, segmentFileName(6)), records(6, 7));
  await assert.rejects(recover({ dir: tail, storage, createState: () => new FakeState(), logger: new RecordingLogger() }), (err: unknown) => {
    assert.ok(err instanceof RecoveryError, String(err));
    assert.equal(err.file, join(tail, snapshotFileName(5)));
    assert.equal(err.offset, 0);
    assert.match(err.message, otherVersion(previous));
    return true;
  });
});

test('membership lists are written once, in the list dictionary, and every User with the same list gets the same frozen array', async (t) => {
  const { dir, cleanup } = tempDir();
  t.after(cleanup);
  const state = populated(0);
  const long = Array.from({ length: snapshotSharedListItemsMax + 1 }, (_, i) => `app-long-${i}`);
  const listsOf = (i: number): { applications: string[]; groups: string[] } => ({
    applications: i === 0 ? long : i % 2 === 0 ? ['app-a', 'app-b'] : ['app-a'],
    groups: i % 3 === 0 ? [] : [`group-${i % 3}`],
  });
  // Across several chunks, so later chunks refer to lists an earlier one added.
  const users = 3 * snapshotChunkEntities;
  for (let i = 0; i < users; i++) state.maps.get('user')!.set(`u${i}`, user(`u${i}`, `User ${i}`, listsOf(i)));
  const written = await writeSnapshot(storage, dir, { ...state.snapshotSource(), shareStrings: withSharedStrings });
  const loaded = await readSnapshot(storage, written.path);
  const restored = restoredFrom(loaded);
  assert.deepEqual(restored.dump(), state.dump());
  const byId = new Map((loaded.sections.get('user') as { id: string; applications: readonly string[]; groups: readonly string[] }[]).map((u) => [u.id, u]));
  const u2 = byId.get('u2')!;
  assert.equal(byId.get(`u${users - 2}`)!.applications, u2.applications, 'the same list is the same array, in another chunk too');
  assert.equal(byId.get('u4')!.groups, byId.get('u1')!.groups, 'Groups lists are shared as well');
  assert.notEqual(byId.get('u1')!.applications, u2.applications);
  assert.ok(Object.isFrozen(u2.applications), 'a shared list cannot be changed through one User');
  assert.deepEqual(byId.get('u0')!.applications, long);
  assert.ok(!Object.isFrozen(byId.get('u0')!.applications), 'a list longer than snapshotSharedListItemsMax is written out');
});

test('the list dictionary stops at snapshotSharedListsMax; later lists are written out and still read back', async (t) => {
  const { dir, cleanup } = tempDir();
  t.after(cleanup);
  const state = populated(0);
  // Pairs from 300 Application ids: 70,000 distinct lists whose strings all fit in the string dictionary.
  const users = snapshotSharedListsMax + 4464;
  for (let i = 0; i < users; i++) {
    state.maps.get('user')!.set(`u${i}`, user(`u${i}`, 'n', { applications: [`a${i % 300}`, `b${Math.floor(i / 300) % 300}`] }));
  }
  const written = await writeSnapshot(storage, dir, { ...state.snapshotSource(), shareStrings: withSharedStrings });
  const loaded = await readSnapshot(storage, written.path);
  const restored = restoredFrom(loaded);
  assert.deepEqual(restored.dump(), state.dump());
  const last = (loaded.sections.get('user') as { id: string; applications: readonly string[] }[]).find((u) => u.id === `u${users - 1}`)!;
  assert.ok(!Object.isFrozen(last.applications), 'past the limit a list is written out');
});

test('a reference to a list the dictionary does not hold, or a list of strings it does not hold, is invalid', async (t) => {
  const { dir, cleanup } = tempDir();
  t.after(cleanup);
  const path = join(dir, snapshotFileName(5));
  // { a: <shared list 0> } with no list dictionary: map of 1, key "a", fixext 1 of type 0x4c, filler, 0.
  handMade(path, snapshotFormatVersion, [{ kind: 'user', entities: [Buffer.from([0x81, 0xa1, 0x61, 0xd4, 0x4c, 0x00, 0x00])] }]);
  await expectInvalid(path, (err) => assert.match(err.message, /not in the list dictionary/));
  const frames = [
    snapshotFrame(packr.pack({ t: 'header', magic: snapshotMagic, version: snapshotFormatVersion, baseSeq: 5 })),
    snapshotFrame(packr.pack({ t: 'chunk', kind: 'user', n: 0, strings: ['app-a'], lists: [[0, 1]] })),
    snapshotFrame(packr.pack({ t: 'trailer', counts: {}, chunks: 1 })),
  ];
  writeFileSync(path, Buffer.concat(frames));
  await expectInvalid(path, (err) => assert.match(err.message, /lists are not lists of indices into its strings/));
});

test('a reference to a string the dictionary does not hold is invalid', async (t) => {
  const { dir, cleanup } = tempDir();
  t.after(cleanup);
  const path = join(dir, snapshotFileName(5));
  // { a: <shared string 5> } in a file whose dictionary is empty: map of 1, key "a", fixext 1 of type 0x53, filler, 5.
  handMade(path, snapshotFormatVersion, [{ kind: 'user', entities: [Buffer.from([0x81, 0xa1, 0x61, 0xd4, 0x53, 0x00, 0x05])] }]);
  await expectInvalid(path, (err) => assert.match(err.message, /not in the string dictionary/));
});

test('a User\'s own strings are written with a 16- or 32-bit length header, so a load makes each a string of its own (issue 24)', async (t) => {
  // msgpackr's native extraction slices runs of short strings out of one string of the frame's bytes, and a
  // kept slice keeps the run: a str16/str32 header makes a string on its own. Any msgpack reader reads it.
  const { dir, cleanup } = tempDir();
  t.after(cleanup);
  const state = populated(0);
  const email = 'émile.zola-naturaliste@example.org';
  const passwordHash = '$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaA';
  const note = 'n'.repeat(300);
  const huge = 'h'.repeat(70_000);
  state.maps.get('user')!.set('user-id-0123456789', user('user-id-0123456789', 'Short', {
    email, passwordHash, customData: { note, huge, plan: 'pro' },
    apikeys: [{ id: 'APIKEYID0123456789ABCDEFG', name: 'default', description: '', status: 'ENABLED', nonce: 'nonce-0123456789abcdef', createdAt: 1, modifiedAt: 1 }],
  }));
  const written = await writeSnapshot(storage, dir, { ...state.snapshotSource(), shareStrings: withSharedStrings });
  const file = readFileSync(written.path);
  const str16 = (s: string): Buffer => Buffer.concat([Buffer.from([0xda, Buffer.byteLength(s) >> 8, Buffer.byteLength(s) & 0xff]), Buffer.from(s)]);
  for (const own of ['user-id-0123456789', email, passwordHash, note, 'APIKEYID0123456789ABCDEFG', 'nonce-0123456789abcdef']) {
    assert.ok(file.includes(str16(own)), `${own.slice(0, 40)} has a str16 header`);
  }
  const str32 = Buffer.alloc(5);
  str32[0] = 0xdb;
  str32.writeUInt32BE(huge.length, 1);
  assert.ok(file.includes(Buffer.concat([str32, Buffer.from(huge)])), 'a string over 65,535 bytes has a str32 header');
  assert.ok(file.includes(Buffer.from([0xa5, ...Buffer.from('Short')])), 'a string under 13 characters is written as usual');
  const restored = restoredFrom(await readSnapshot(storage, written.path));
  assert.deepEqual(restored.dump(), state.dump());
});
