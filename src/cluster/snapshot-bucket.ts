// The cluster's Object Store bucket: which server key the cluster's nodes share, and the newest snapshots, from which a node with none (or one the stream has moved past) starts; both sealed under that key (src/cluster/seal.ts).

import { open as openFile, type FileHandle } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import { Objm, type ObjectStore } from '@nats-io/obj';
import { ConfigError } from '../config/config.js';
import { clusterBucketIdleMs, clusterSnapshotSealChunkBytes, clusterSnapshotsKept } from '../config/limits.js';
import { parseSnapshotFileName, snapshotFileName, tmpSuffix } from '../persist/layout.js';
import type { ReadableFile, Storage, WritableFile } from '../persist/storage.js';
import { sealContext, sealOverheadBytes, type ClusterSeal } from './seal.js';
import { StreamUnavailableError, within } from './stream-log.js';

/** The server key's fingerprint in clear (for a refusal to name both keys), then the same sealed: only a node with the key makes one. */
const keyCheckObject = 'key-check';
/** Where an earlier version, which sealed nothing, kept the key's fingerprint, in clear: the sign of a cluster it wrote. */
const unsealedKeyObject = 'key-fingerprint';
const fingerprintPattern = /^[0-9a-f]{32}$/;
const fingerprintChars = 32;
const sealedPartBytes = clusterSnapshotSealChunkBytes + sealOverheadBytes;

/** What promise answers, or StreamUnavailableError once it has brought nothing for idleMs. */
export function withinIdle<T>(promise: Promise<T>, idleMs: number, what: string): Promise<T> {
  return within(promise, idleMs, () => new StreamUnavailableError(`${what}: nothing from the cluster's bucket for ${idleMs} ms`));
}

/** The stream or bucket was written by an earlier version that sealed nothing: this version does not read it, not even in part. */
export class UnsealedClusterError extends ConfigError {
  constructor(readonly stream: string, found: string) {
    super(`the cluster on stream ${stream} (bucket ${stream}-cluster) was written by an earlier version that sealed nothing (${found}); `
      + 'this version reads only sealed messages and snapshots: move its state into a new stream as docs/operations.md says ("Sealing an existing cluster")');
    this.name = 'UnsealedClusterError';
  }
}

/** A snapshot object, or a part of it, that does not open under this node's key: forged, altered, cut short, or out of order. */
export class SnapshotSealError extends Error {
  constructor(readonly object: string, reason: string) {
    super(`${object} in the cluster bucket ${reason}`);
    this.name = 'SnapshotSealError';
  }
}

/** The associated data of part index of a snapshot object: the object's name (its base sequence), the index, and whether it is the last. */
function partContext(stream: string, name: string, index: number, last: boolean): Buffer {
  return sealContext('snapshot', stream, name, index, last ? 'last' : 'more');
}

export class SnapshotBucket {
  private constructor(private readonly bucket: ObjectStore, private readonly seal: ClusterSeal, readonly stream: string) {}

  /** Opens the bucket `<stream>-cluster`, creating it with the stream's replicas if missing. */
  static async open(nc: NatsConnection, stream: string, replicas: number, seal: ClusterSeal): Promise<SnapshotBucket> {
    return new SnapshotBucket(await new Objm(nc).create(`${stream}-cluster`, { storage: 'file', replicas }), seal, stream);
  }

  /**
   * The first node records its key (sealed); every later one must have the same key. A cluster an earlier version
   * wrote (its key's fingerprint in clear, or a first message in the stream that is not sealed: streamUnsealed) is
   * refused with UnsealedClusterError, before this node reads any of it.
   */
  async checkKey(fingerprint: string, streamUnsealed: () => Promise<boolean>): Promise<void> {
    const held = await withinIdle(this.bucket.getBlob(keyCheckObject), clusterBucketIdleMs, 'reading the key check');
    if (held !== null) return this.#verifyKey(fingerprint, Buffer.from(held));
    const unsealed = await withinIdle(this.bucket.info(unsealedKeyObject), clusterBucketIdleMs, 'reading the bucket');
    if (unsealed !== null && !unsealed.deleted) throw new UnsealedClusterError(this.stream, `object ${unsealedKeyObject} in the bucket`);
    if (await streamUnsealed()) throw new UnsealedClusterError(this.stream, 'the stream\'s first message');
    const clear = Buffer.from(fingerprint, 'latin1');
    await this.bucket.putBlob({ name: keyCheckObject }, Buffer.concat([clear, this.seal.seal(clear, this.#keyContext(fingerprint))]));
  }

  /** Base sequences of the snapshots held, newest first. */
  async snapshotSeqs(): Promise<number[]> {
    return (await this.snapshots()).seqs;
  }

  /**
   * Base sequences of the snapshots a node put, newest first, and the names of the snapshot objects no node put (their
   * description is not this bucket's sealed tag for their name): those are never downloaded, kept or counted on, so an
   * object someone else puts cannot steer which snapshots are kept or how far the stream is purged.
   */
  async snapshots(): Promise<{ seqs: number[]; foreign: string[] }> {
    const seqs: number[] = [];
    const foreign: string[] = [];
    for (const info of await withinIdle(this.bucket.list(), clusterBucketIdleMs, 'listing the snapshots')) {
      const seq = parseSnapshotFileName(info.name);
      if (seq === undefined || info.deleted) continue;
      const tag = Buffer.from(info.description ?? '', 'base64url');
      if (this.seal.open(tag, this.#nameContext(info.name)) === undefined) foreign.push(info.name);
      else seqs.push(seq);
    }
    return { seqs: seqs.sort((a, b) => b - a), foreign };
  }

  /**
   * Puts the local snapshot file at path (of baseSeq) in the bucket, sealed, then drops all but the newest
   * clusterSnapshotsKept; the base sequences kept, newest first.
   */
  async put(path: string, baseSeq: number): Promise<number[]> {
    const name = snapshotFileName(baseSeq);
    const tag = this.seal.seal(new Uint8Array(0), this.#nameContext(name)).toString('base64url');
    await this.bucket.put({ name, description: tag }, sealedFile(path, this.seal, this.stream, name));
    const held = await this.snapshotSeqs();
    for (const old of held.slice(clusterSnapshotsKept)) await this.bucket.delete(snapshotFileName(old));
    return held.slice(0, clusterSnapshotsKept);
  }

  /**
   * The bucket's snapshot of baseSeq as a file to read front to back while it arrives (each sealed part opened as it
   * comes), and its copy, in the local snapshot format, into dir under its usual name: decoding and downloading overlap,
   * where a download first and a load after would add the two. Call keep() once the snapshot loaded (the copy is synced
   * and named), or drop() if it did not. A part that does not open fails the reads with a SnapshotSealError.
   */
  async download(storage: Storage, dir: string, baseSeq: number): Promise<Download> {
    const name = snapshotFileName(baseSeq);
    const result = await withinIdle(this.bucket.get(name), clusterBucketIdleMs, `opening ${name}`);
    if (result === null) throw new Error(`the cluster bucket no longer holds ${name}`);
    const opener = new PartOpener(this.seal, this.stream, name, result.info.size);
    const path = join(dir, name);
    return new Download(path, result.info.size, result.data, result.error, await storage.create(`${path}${tmpSuffix}`), storage, dir, clusterBucketIdleMs, opener);
  }

  /** What a snapshot object's description seals (nothing) for: its name in this bucket. */
  #nameContext(name: string): Buffer {
    return sealContext('snapshot', this.stream, name, 'name');
  }

  #keyContext(fingerprint: string): Buffer {
    return sealContext('key', this.stream, keyCheckObject, fingerprint);
  }

  #verifyKey(fingerprint: string, held: Buffer): void {
    const cluster = held.subarray(0, fingerprintChars).toString('latin1');
    const named = fingerprintPattern.test(cluster);
    if (named && cluster !== fingerprint) {
      throw new ConfigError(`this node's server key (fingerprint ${fingerprint}) is not the cluster's (fingerprint ${cluster}): give every node the same KEY_FILE or SERVER_KEY`);
    }
    const opened = named ? this.seal.open(held.subarray(fingerprintChars), this.#keyContext(fingerprint)) : undefined;
    if (opened === undefined || opened.toString('latin1') !== fingerprint) {
      throw new ConfigError(`the key check of bucket ${this.stream}-cluster (object ${keyCheckObject}) does not open under this node's server key (fingerprint ${fingerprint}): `
        + 'it was not written by a node with this key. If every node has the same key, remove the object for the first node to record the key again');
    }
  }
}

/**
 * The local snapshot file at path as the bucket holds it: parts of clusterSnapshotSealChunkBytes (the last one
 * shorter), each sealed for the object's name, its index and whether it is the last, so that a part left out, cut
 * short, moved, or taken from another object does not open.
 */
export function sealedFile(path: string, seal: ClusterSeal, stream: string, name: string): ReadableStream<Uint8Array> {
  let file: FileHandle | undefined;
  let size = 0;
  let position = 0;
  let index = 0;
  const close = async (): Promise<void> => {
    const open = file;
    file = undefined;
    await open?.close();
  };
  return new ReadableStream<Uint8Array>({
    async start() {
      file = await openFile(path, 'r');
      size = (await file.stat()).size;
    },
    async pull(controller) {
      try {
        const length = Math.min(clusterSnapshotSealChunkBytes, size - position);
        const plain = Buffer.allocUnsafe(length);
        for (let done = 0; done < length;) {
          const { bytesRead } = await file!.read(plain, done, length - done, position + done);
          if (bytesRead === 0) throw new Error(`${path} ended at byte ${position + done} of ${size}`);
          done += bytesRead;
        }
        position += length;
        const last = position === size;
        controller.enqueue(seal.seal(plain, partContext(stream, name, index++, last)));
        if (last) {
          controller.close();
          await close();
        }
      } catch (err) {
        await close().catch(() => undefined);
        throw err;
      }
    },
    cancel: close,
  });
}

/** Opens a sealed snapshot object's parts in order as its bytes arrive; throws SnapshotSealError at the first that does not open. */
export class PartOpener {
  /** The snapshot's own size: the object's, less each part's seal. */
  readonly plainSize: number;
  readonly #parts: number;
  readonly #lastPartBytes: number;
  #index = 0;
  #pending: Uint8Array[] = [];
  #pendingBytes = 0;

  constructor(private readonly seal: ClusterSeal, private readonly stream: string, private readonly name: string, sealedSize: number) {
    this.#parts = Math.max(1, Math.ceil(sealedSize / sealedPartBytes));
    this.#lastPartBytes = sealedSize - (this.#parts - 1) * sealedPartBytes;
    if (!Number.isSafeInteger(sealedSize) || this.#lastPartBytes < sealOverheadBytes) throw new SnapshotSealError(name, `is ${sealedSize} bytes: not a sealed snapshot`);
    this.plainSize = sealedSize - this.#parts * sealOverheadBytes;
  }

  /** The parts these bytes complete, opened (none while a part is still arriving). */
  push(bytes: Uint8Array): Buffer[] {
    this.#pending.push(bytes);
    this.#pendingBytes += bytes.length;
    const opened: Buffer[] = [];
    for (;;) {
      if (this.#index === this.#parts) {
        if (this.#pendingBytes > 0) throw new SnapshotSealError(this.name, 'holds more bytes than its size says');
        return opened;
      }
      const last = this.#index === this.#parts - 1;
      const partBytes = last ? this.#lastPartBytes : sealedPartBytes;
      if (this.#pendingBytes < partBytes) return opened;
      const part = this.#take(partBytes);
      const plain = this.seal.open(part, partContext(this.stream, this.name, this.#index, last));
      if (plain === undefined) throw new SnapshotSealError(this.name, `does not open under this node's server key (part ${this.#index} of ${this.#parts})`);
      opened.push(plain);
      this.#index++;
    }
  }

  /** Throws unless every part arrived and opened. */
  end(): void {
    if (this.#index !== this.#parts) throw new SnapshotSealError(this.name, `ended after ${this.#index} of its ${this.#parts} parts`);
  }

  #take(n: number): Uint8Array {
    const first = this.#pending[0]!;
    let part: Uint8Array;
    if (first.length >= n) {
      part = first.subarray(0, n);
      if (first.length === n) this.#pending.shift();
      else this.#pending[0] = first.subarray(n);
    } else {
      const joined = Buffer.concat(this.#pending);
      part = joined.subarray(0, n);
      this.#pending = joined.length > n ? [joined.subarray(n)] : [];
    }
    this.#pendingBytes -= n;
    return part;
  }
}

/**
 * A snapshot arriving from the bucket: read by offset as its bytes come (forward only), and written to a local copy.
 * Its reads fail with StreamUnavailableError once nothing has arrived for idleMs, and the bucket's stream is cancelled.
 * With an opener, what arrives is sealed parts: the reads and the copy see what they open to, and size is that.
 */
export class Download implements ReadableFile {
  readonly size: number;
  /** Arrived (opened) and not yet read past, oldest first; #base is the offset of the first. */
  readonly #chunks: Uint8Array[] = [];
  #base = 0;
  #received = 0;
  #arrived = 0;
  #failure: Error | undefined;
  #ended = false;
  #wake: (() => void) | undefined;
  readonly #copied: Promise<void>;

  constructor(
    readonly path: string, private readonly arrivingSize: number, data: ReadableStream<Uint8Array>, error: Promise<Error | null>,
    private readonly copy: WritableFile, private readonly storage: Storage, private readonly dir: string, private readonly idleMs: number,
    private readonly opener?: PartOpener,
  ) {
    this.size = opener?.plainSize ?? arrivingSize;
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
        const next = await withinIdle(reader.read(), this.idleMs, `downloading ${basename(this.path)} at byte ${this.#arrived}`);
        if (next.done) break;
        this.#arrived += next.value.length;
        const chunks = this.opener === undefined ? [next.value] : this.opener.push(next.value);
        for (const chunk of chunks) {
          this.#chunks.push(chunk);
          this.#received += chunk.length;
        }
        this.#wake?.();
        for (const chunk of chunks) await this.copy.write(chunk);
      }
      const failed = await error;
      if (failed != null) throw failed;
      this.opener?.end();
      if (this.#arrived !== this.arrivingSize) throw new Error(`the bucket sent ${this.#arrived} of ${this.arrivingSize} bytes`);
    } catch (err) {
      this.#failure = err instanceof Error ? err : new Error(String(err));
      await reader.cancel().catch(() => undefined);
    } finally {
      this.#ended = true;
      this.#wake?.();
    }
  }
}
