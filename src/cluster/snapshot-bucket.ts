// The cluster's Object Store bucket: the server key's fingerprint every node must share, and the newest snapshots, from which a node with none (or one the stream has moved past) starts.

import { createReadStream } from 'node:fs';
import { basename, join } from 'node:path';
import { Readable } from 'node:stream';
import type { NatsConnection } from '@nats-io/transport-node';
import { Objm, type ObjectStore } from '@nats-io/obj';
import { ConfigError } from '../config/config.js';
import { clusterBucketIdleMs, clusterSnapshotsKept } from '../config/limits.js';
import { parseSnapshotFileName, snapshotFileName, tmpSuffix } from '../persist/layout.js';
import type { ReadableFile, Storage, WritableFile } from '../persist/storage.js';
import { StreamUnavailableError, within } from './stream-log.js';

const keyFingerprintObject = 'key-fingerprint';

/** What promise answers, or StreamUnavailableError once it has brought nothing for idleMs. */
export function withinIdle<T>(promise: Promise<T>, idleMs: number, what: string): Promise<T> {
  return within(promise, idleMs, () => new StreamUnavailableError(`${what}: nothing from the cluster's bucket for ${idleMs} ms`));
}

export class SnapshotBucket {
  private constructor(private readonly bucket: ObjectStore) {}

  /** Opens the bucket `<stream>-cluster`, creating it with the stream's replicas if missing. */
  static async open(nc: NatsConnection, stream: string, replicas: number): Promise<SnapshotBucket> {
    return new SnapshotBucket(await new Objm(nc).create(`${stream}-cluster`, { storage: 'file', replicas }));
  }

  /** The first node records its key's fingerprint; every later one must have the same key. */
  async checkKey(fingerprint: string): Promise<void> {
    const held = await withinIdle(this.bucket.getBlob(keyFingerprintObject), clusterBucketIdleMs, 'reading the key fingerprint');
    if (held === null) {
      await this.bucket.putBlob({ name: keyFingerprintObject }, Buffer.from(fingerprint, 'latin1'));
      return;
    }
    const cluster = Buffer.from(held).toString('latin1');
    if (cluster !== fingerprint) {
      throw new ConfigError(`this node's server key (fingerprint ${fingerprint}) is not the cluster's (fingerprint ${cluster}): give every node the same KEY_FILE or SERVER_KEY`);
    }
  }

  /** Base sequences of the snapshots held, newest first. */
  async snapshotSeqs(): Promise<number[]> {
    const seqs: number[] = [];
    for (const info of await withinIdle(this.bucket.list(), clusterBucketIdleMs, 'listing the snapshots')) {
      const seq = parseSnapshotFileName(info.name);
      if (seq !== undefined && !info.deleted) seqs.push(seq);
    }
    return seqs.sort((a, b) => b - a);
  }

  /**
   * Puts the local snapshot file at path (of baseSeq) in the bucket, then drops all but the newest clusterSnapshotsKept;
   * the base sequences kept, newest first.
   */
  async put(path: string, baseSeq: number): Promise<number[]> {
    const data = Readable.toWeb(createReadStream(path)) as ReadableStream<Uint8Array>;
    await this.bucket.put({ name: snapshotFileName(baseSeq) }, data);
    const held = await this.snapshotSeqs();
    for (const old of held.slice(clusterSnapshotsKept)) await this.bucket.delete(snapshotFileName(old));
    return held.slice(0, clusterSnapshotsKept);
  }

  /**
   * The bucket's snapshot of baseSeq as a file to read front to back while it arrives, and its copy into dir under
   * its usual name: decoding and downloading overlap, where a download first and a load after would add the two.
   * Call keep() once the snapshot loaded (the copy is synced and named), or drop() if it did not.
   */
  async download(storage: Storage, dir: string, baseSeq: number): Promise<Download> {
    const name = snapshotFileName(baseSeq);
    const result = await withinIdle(this.bucket.get(name), clusterBucketIdleMs, `opening ${name}`);
    if (result === null) throw new Error(`the cluster bucket no longer holds ${name}`);
    const path = join(dir, name);
    return new Download(path, result.info.size, result.data, result.error, await storage.create(`${path}${tmpSuffix}`), storage, dir, clusterBucketIdleMs);
  }
}

/**
 * A snapshot arriving from the bucket: read by offset as its bytes come (forward only), and written to a local copy.
 * Its reads fail with StreamUnavailableError once nothing has arrived for idleMs, and the bucket's stream is cancelled.
 */
export class Download implements ReadableFile {
  /** Arrived and not yet read past, oldest first; #base is the offset of the first. */
  readonly #chunks: Uint8Array[] = [];
  #base = 0;
  #received = 0;
  #failure: Error | undefined;
  #ended = false;
  #wake: (() => void) | undefined;
  readonly #copied: Promise<void>;

  constructor(
    readonly path: string, readonly size: number, data: ReadableStream<Uint8Array>, error: Promise<Error | null>,
    private readonly copy: WritableFile, private readonly storage: Storage, private readonly dir: string, private readonly idleMs: number,
  ) {
    this.#copied = this.#pump(data, error);
  }

  async read(target: Uint8Array, length: number, position: number): Promise<number> {
    const end = Math.min(position + length, this.size);
    while (this.#received < end && this.#failure === undefined && !this.#ended) await new Promise<void>((resolve) => { this.#wake = resolve; });
    if (this.#failure !== undefined) throw this.#failure;
    if (position < this.#base) throw new Error(`read at ${position}, before what is kept (${this.#base})`);
    // Chunks wholly before position are done with.
    while (this.#chunks.length > 0 && this.#base + this.#chunks[0]!.length <= position) this.#base += this.#chunks.shift()!.length;
    let done = 0;
    let at = this.#base;
    for (const chunk of this.#chunks) {
      if (position + done >= end) break;
      const from = position + done - at;
      if (from < chunk.length) {
        const n = Math.min(chunk.length - from, end - position - done);
        target.set(chunk.subarray(from, from + n), done);
        done += n;
      }
      at += chunk.length;
    }
    return done;
  }

  async close(): Promise<void> {
    // The copy's fate is keep()'s or drop()'s.
  }

  /** The loaded snapshot's local copy, synced and named; its path. */
  async keep(): Promise<string> {
    await this.#copied;
    if (this.#failure !== undefined) throw this.#failure;
    await this.copy.sync();
    await this.copy.close();
    await this.storage.rename(this.copy.path, this.path);
    await this.storage.fsyncDir(this.dir);
    return this.path;
  }

  async drop(): Promise<void> {
    await this.#copied.catch(() => undefined);
    await this.copy.close().catch(() => undefined);
    await this.storage.unlink(this.copy.path).catch(() => undefined);
  }

  async #pump(data: ReadableStream<Uint8Array>, error: Promise<Error | null>): Promise<void> {
    const reader = data.getReader();
    try {
      for (;;) {
        const next = await withinIdle(reader.read(), this.idleMs, `downloading ${basename(this.path)} at byte ${this.#received}`);
        if (next.done) break;
        const chunk = next.value;
        this.#chunks.push(chunk);
        this.#received += chunk.length;
        this.#wake?.();
        await this.copy.write(chunk);
      }
      const failed = await error;
      if (failed != null) throw failed;
      if (this.#received !== this.size) throw new Error(`the bucket sent ${this.#received} of ${this.size} bytes`);
    } catch (err) {
      this.#failure = err instanceof Error ? err : new Error(String(err));
      await reader.cancel().catch(() => undefined);
    } finally {
      this.#ended = true;
      this.#wake?.();
    }
  }
}
