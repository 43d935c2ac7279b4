// A read from the cluster's bucket that stops bringing bytes fails as unavailable (and a starting node tries again),
// instead of holding the node's start for ever.

import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { Download, withinIdle } from '../src/cluster/snapshot-bucket.js';
import { StreamUnavailableError } from '../src/cluster/stream-log.js';
import { tmpSuffix } from '../src/persist/layout.js';
import { readSnapshotFile, SnapshotError } from '../src/persist/snapshot.js';
import { NodeStorage } from '../src/persist/storage.js';

const idleMs = 100;

/** A stream that brings `first` and then nothing, like an object read whose consumer was left waiting; it tells when it is cancelled. */
function stallingStream(first: Uint8Array): { readonly data: ReadableStream<Uint8Array>; readonly cancelled: () => boolean } {
  let cancelled = false;
  const data = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(first);
    },
    cancel() {
      cancelled = true;
    },
  });
  return { data, cancelled: () => cancelled };
}

async function stalledDownload(size: number, first: Uint8Array): Promise<{ download: Download; cancelled: () => boolean; dir: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'authd-bucket-'));
  const storage = new NodeStorage();
  const path = join(dir, 'snapshot-0000000000000010.msgpack');
  const { data, cancelled } = stallingStream(first);
  const never = new Promise<Error | null>(() => {});
  const download = new Download(path, size, data, never, await storage.create(`${path}${tmpSuffix}`), storage, dir, idleMs);
  return { download, cancelled, dir };
}

test('a snapshot download that stops bringing bytes fails its read as unavailable and cancels the bucket\'s stream', { timeout: 10_000 }, async () => {
  const { download, cancelled, dir } = await stalledDownload(1000, new Uint8Array(100));
  try {
    // What arrived is read; the rest never comes.
    const target = new Uint8Array(1000);
    assert.equal(await download.read(target, 100, 0), 100);
    await assert.rejects(download.read(target, 900, 100), (err: unknown) => {
      assert.ok(err instanceof StreamUnavailableError, String(err));
      assert.match(err.message, /snapshot-0000000000000010\.msgpack at byte 100: nothing from the cluster's bucket for 100 ms/);
      return true;
    });
    assert.equal(cancelled(), true);
    await download.drop();
    assert.equal(existsSync(`${download.path}${tmpSuffix}`), false, 'the partial copy is removed');
    await assert.rejects(download.keep());
    assert.equal(existsSync(download.path), false, 'a stalled download is never kept');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a stalled download is told apart from an invalid snapshot: the load\'s error carries the stall', { timeout: 10_000 }, async () => {
  const { download, dir } = await stalledDownload(1000, new Uint8Array(0));
  try {
    await assert.rejects(readSnapshotFile(download, () => {}), (err: unknown) => {
      assert.ok(err instanceof SnapshotError, String(err));
      assert.ok(err.cause instanceof StreamUnavailableError, String(err.cause));
      return true;
    });
    await download.drop();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('withinIdle answers what its promise answers, and fails as unavailable when nothing comes', { timeout: 10_000 }, async () => {
  assert.equal(await withinIdle(Promise.resolve(7), idleMs, 'a quick read'), 7);
  await assert.rejects(withinIdle(Promise.reject(new Error('refused')), idleMs, 'a refused read'), /refused/);
  await assert.rejects(withinIdle(new Promise(() => {}), idleMs, 'listing the snapshots'), (err: unknown) => {
    assert.ok(err instanceof StreamUnavailableError);
    assert.equal(err.message, 'listing the snapshots: nothing from the cluster\'s bucket for 100 ms');
    return true;
  });
});
