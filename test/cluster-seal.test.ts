// Issue 42: what authd puts on NATS is sealed under the server key's subkey, bound to its place; what does not open is never applied, and counted.

import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { RejectedMessages } from '../src/cluster/rejected.js';
import { Replica, StreamMessageError } from '../src/cluster/replica.js';
import { ClusterSeal, LogSeal, sealContext, sealOverheadBytes } from '../src/cluster/seal.js';
import { PartOpener, sealedFile, SnapshotSealError } from '../src/cluster/snapshot-bucket.js';
import { clusterRejectedLogIntervalMs, clusterSnapshotSealChunkBytes } from '../src/config/limits.js';
import type { LogRecord, Organization } from '../src/domain/entities.js';
import { encodeRecord } from '../src/persist/codec.js';
import { State } from '../src/store/state.js';

const quiet = { warn: () => undefined };

test('a sealed message opens only under its key and its context, whole', () => {
  const key = randomBytes(32);
  const seal = new ClusterSeal(key);
  const plain = Buffer.from('u:someone@example.com $argon2id$v=19$m=65536,t=3,p=1$c2FsdA$aGFzaA');
  const context = sealContext('log', 'authd', 'authd.log', 7);
  const sealed = seal.seal([plain.subarray(0, 10), plain.subarray(10)], context);
  assert.equal(sealed.length, plain.length + sealOverheadBytes);
  assert.equal(sealed.includes(Buffer.from('example.com')), false, 'nothing of the plaintext in clear');
  assert.deepEqual(seal.open(sealed, context), plain);
  assert.deepEqual(new ClusterSeal(key).open(sealed, context), plain, 'another process with the same key opens it');

  assert.equal(new ClusterSeal(randomBytes(32)).open(sealed, context), undefined, 'another key');
  for (const other of [sealContext('log', 'authd', 'authd.log', 8), sealContext('log', 'other', 'other.log', 7), sealContext('failure', 'authd', 'authd.log', 7)]) {
    assert.equal(seal.open(sealed, other), undefined, `context ${other.toString('latin1')}`);
  }
  for (let i = 0; i < sealed.length; i++) {
    const altered = Buffer.from(sealed);
    altered[i]! ^= 0x01;
    assert.equal(seal.open(altered, context), undefined, `byte ${i} altered`);
  }
  assert.equal(seal.open(sealed.subarray(0, sealed.length - 1), context), undefined, 'cut short');
  assert.equal(seal.open(sealed.subarray(0, sealOverheadBytes - 1), context), undefined, 'shorter than a seal');
  assert.equal(seal.open(new Uint8Array(7), context), undefined, 'seven bytes of garbage');
  assert.deepEqual(seal.open(seal.seal(new Uint8Array(0), context), context), Buffer.alloc(0));
});

test('no two messages sealed by one process, or by two, share a nonce', () => {
  const key = randomBytes(32);
  const nonces = new Set<string>();
  for (const seal of [new ClusterSeal(key), new ClusterSeal(key)]) {
    for (let i = 0; i < 1000; i++) nonces.add(seal.seal(Buffer.from('x'), sealContext('failure', 's', 's.failures')).subarray(0, 12).toString('hex'));
  }
  assert.equal(nonces.size, 2000);
});

test('a log message opens only in the stream and subject it was sealed for', () => {
  const seal = new ClusterSeal(randomBytes(32));
  const log = new LogSeal(seal, 'authd', 'authd.log');
  const message = log.close([Buffer.from('frames')]);
  assert.deepEqual(log.open(message), Buffer.from('frames'));
  assert.equal(new LogSeal(seal, 'other', 'other.log').open(message), undefined);
  assert.equal(new LogSeal(seal, 'authd', 'authd.failures').open(message), undefined);
  assert.deepEqual(log.open(log.close([])), Buffer.alloc(0), 'a barrier opens to nothing');
});

function organization(id: string, at: number): Organization {
  return { id, name: `org ${id}`, description: '', customData: null, status: 'ENABLED', createdAt: at, modifiedAt: at };
}

function message(log: LogSeal, record: LogRecord): Buffer {
  return log.close([encodeRecord(record)]);
}

test('a log message that does not open is passed over as an empty record: counted, the sequence advances, nothing else changes', () => {
  const seal = new ClusterSeal(randomBytes(32));
  const log = new LogSeal(seal, 'authd', 'authd.log');
  const rejected = new RejectedMessages(quiet);
  const state = new State();
  const replica = new Replica(state, log, rejected);
  assert.equal(replica.receive(1, message(log, { seq: 1, at: 1000, ops: [{ op: 'put', kind: 'organization', value: organization('org1', 1000) }] })), 1);

  const waiting = replica.applied(3);
  let woken = false;
  void waiting.then(() => { woken = true; });
  // Clear records (as an earlier version wrote them), another key's, records decided for another sequence, garbage.
  const forged: LogRecord = { seq: 2, at: 9_000_000, ops: [{ op: 'put', kind: 'organization', value: organization('forged', 9_000_000) }] };
  assert.equal(replica.receive(2, encodeRecord(forged)), 0);
  assert.equal(replica.receive(3, message(new LogSeal(new ClusterSeal(randomBytes(32)), 'authd', 'authd.log'), { ...forged, seq: 3 })), 0);
  assert.equal(replica.receive(4, message(log, forged)), 0, 'decided for 2, landed at 4: void');
  assert.equal(replica.receive(5, Buffer.from('garbage')), 0);
  assert.equal(rejected.counts.log, 3);
  assert.equal(rejected.counts.void, 1);
  assert.equal(state.lastSeq, 5);
  assert.equal(state.lastAt, 1000, 'the rejected messages\' times are not taken');
  assert.equal(state.organization('forged'), undefined);
  assert.deepEqual(state.counts(), { applications: 0, groups: 0, organizations: 1, users: 0 });
  assert.equal(state.snapshotSource().baseSeq, 5, 'a snapshot now replays from 6');

  // The next real message is no gap, and a waiter for a rejected sequence was told.
  assert.equal(replica.receive(6, message(log, { seq: 6, at: 2000, ops: [{ op: 'put', kind: 'organization', value: organization('org2', 2000) }] })), 1);
  assert.equal(state.organization('org2')?.name, 'org org2');
  return waiting.then(() => assert.equal(woken, true));
});

test('a log message that opens but is not records of one sequence is a bug of ours: it throws and is not applied', () => {
  const seal = new ClusterSeal(randomBytes(32));
  const log = new LogSeal(seal, 'authd', 'authd.log');
  const state = new State();
  const replica = new Replica(state, log, new RejectedMessages(quiet));
  assert.throws(() => replica.receive(1, log.close([Buffer.from([1, 2, 3, 4, 5, 6, 7])])), StreamMessageError);
  assert.throws(() => replica.receive(1, log.close([encodeRecord({ seq: 1, at: 1, ops: [] }), encodeRecord({ seq: 2, at: 1, ops: [] })])), StreamMessageError, 'records of two sequences');
  assert.equal(state.lastSeq, 0);
});

/** The parts sealedFile makes of a file of size bytes, and the file's bytes. */
async function sealedParts(seal: ClusterSeal, name: string, size: number): Promise<{ plain: Buffer; parts: Buffer[] }> {
  const dir = mkdtempSync(join(tmpdir(), 'authd-seal-'));
  try {
    const plain = randomBytes(size);
    const path = join(dir, 'snapshot');
    writeFileSync(path, plain);
    const parts: Buffer[] = [];
    for await (const part of sealedFile(path, seal, 'authd', name) as unknown as AsyncIterable<Uint8Array>) parts.push(Buffer.from(part));
    return { plain, parts };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Feeds bytes to an opener in pieces of a few sizes, as a download brings them; the bytes it opened. */
function openAll(opener: PartOpener, bytes: Buffer): Buffer {
  const out: Buffer[] = [];
  const pieces = [1, 4096, 131_072, 77_777];
  for (let at = 0, i = 0; at < bytes.length; i++) {
    const n = pieces[i % pieces.length]!;
    out.push(...opener.push(bytes.subarray(at, at + n)));
    at += n;
  }
  opener.end();
  return Buffer.concat(out);
}

test('a snapshot object opens part by part as it arrives; a part left out, moved, added or renamed does not', async () => {
  const seal = new ClusterSeal(randomBytes(32));
  const name = 'snapshot-0000000000000042.msgpack';
  const size = Math.floor(clusterSnapshotSealChunkBytes * 2.5);
  const { plain, parts } = await sealedParts(seal, name, size);
  assert.equal(parts.length, 3);
  const whole = Buffer.concat(parts);
  const opener = new PartOpener(seal, 'authd', name, whole.length);
  assert.equal(opener.plainSize, size);
  assert.deepEqual(openAll(opener, whole), plain);

  const refused = (bytes: Buffer, objectName = name): void => {
    assert.throws(() => openAll(new PartOpener(seal, 'authd', objectName, bytes.length), bytes), SnapshotSealError);
  };
  refused(Buffer.concat([parts[0]!, parts[1]!]), 'cut at a part: its last part is not marked last');
  refused(Buffer.concat([parts[1]!, parts[0]!, parts[2]!]));
  refused(Buffer.concat([parts[0]!, parts[0]!, parts[2]!]));
  refused(Buffer.concat([parts[0]!, parts[2]!]));
  refused(Buffer.concat([...parts, parts[2]!]));
  refused(whole, 'snapshot-0000000000000043.msgpack');
  assert.throws(() => openAll(new PartOpener(new ClusterSeal(randomBytes(32)), 'authd', name, whole.length), whole), SnapshotSealError);
  // A download that brings fewer bytes than the object's size says: the opener is never complete.
  const short = new PartOpener(seal, 'authd', name, whole.length);
  short.push(whole.subarray(0, whole.length - 10));
  assert.throws(() => short.end(), SnapshotSealError);
  for (const bytes of [0, 27]) assert.throws(() => new PartOpener(seal, 'authd', name, bytes), SnapshotSealError);

  // A file of exactly one part, and an empty one.
  for (const n of [clusterSnapshotSealChunkBytes, 0]) {
    const one = await sealedParts(seal, name, n);
    assert.equal(one.parts.length, 1);
    assert.deepEqual(openAll(new PartOpener(seal, 'authd', name, one.parts[0]!.length), one.parts[0]!), one.plain);
  }
});

test('rejected messages are counted by kind and logged at most once per interval and kind, with the count since', () => {
  const lines: Record<string, unknown>[] = [];
  const rejected = new RejectedMessages({ warn: (obj) => { lines.push(obj as Record<string, unknown>); } });
  for (let i = 0; i < 1000; i++) rejected.reject('log', { seq: i });
  rejected.reject('failure', { subject: 'authd.failures' });
  assert.deepEqual(rejected.counts, { log: 1000, failure: 1, snapshot: 0, status: 0, void: 0 });
  assert.equal(lines.length, 2, `one line per kind within ${clusterRejectedLogIntervalMs} ms`);
  assert.deepEqual([lines[0]!['kind'], lines[0]!['seq'], lines[0]!['rejected']], ['log', 0, 1]);
  assert.equal(lines[1]!['kind'], 'failure');
});
