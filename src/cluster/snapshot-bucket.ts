// The cluster's Object Store bucket: the server key's fingerprint every node must share, and the newest snapshots, from which a node with none (or one the stream has moved past) starts.

import { createReadStream } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import type { NatsConnection } from '@nats-io/transport-node';
import { Objm, type ObjectStore } from '@nats-io/obj';
import { ConfigError } from '../config/config.js';
import { clusterSnapshotsKept } from '../config/limits.js';
import { parseSnapshotFileName, snapshotFileName, tmpSuffix } from '../persist/layout.js';
import type { Storage } from '../persist/storage.js';

const keyFingerprintObject = 'key-fingerprint';

export class SnapshotBucket {
  private constructor(private readonly bucket: ObjectStore) {}

  /** Opens the bucket `<stream>-cluster`, creating it with the stream's replicas if missing. */
  static async open(nc: NatsConnection, stream: string, replicas: number): Promise<SnapshotBucket> {
    return new SnapshotBucket(await new Objm(nc).create(`${stream}-cluster`, { storage: 'file', replicas }));
  }

  /** The first node records its key's fingerprint; every later one must have the same key. */
  async checkKey(fingerprint: string): Promise<void> {
    const held = await this.bucket.getBlob(keyFingerprintObject);
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
    for (const info of await this.bucket.list()) {
      const seq = parseSnapshotFileName(info.name);
      if (seq !== undefined && !info.deleted) seqs.push(seq);
    }
    return seqs.sort((a, b) => b - a);
  }

  /** Puts the local snapshot file at path (of baseSeq) in the bucket, then drops all but the newest clusterSnapshotsKept. */
  async put(path: string, baseSeq: number): Promise<void> {
    const data = Readable.toWeb(createReadStream(path)) as ReadableStream<Uint8Array>;
    await this.bucket.put({ name: snapshotFileName(baseSeq) }, data);
    for (const old of (await this.snapshotSeqs()).slice(clusterSnapshotsKept)) await this.bucket.delete(snapshotFileName(old));
  }

  /** Copies the bucket's snapshot of baseSeq into dir under its usual name, durably; its path. */
  async fetch(storage: Storage, dir: string, baseSeq: number): Promise<string> {
    const name = snapshotFileName(baseSeq);
    const result = await this.bucket.get(name);
    if (result === null) throw new Error(`the cluster bucket no longer holds ${name}`);
    const path = join(dir, name);
    const tmp = `${path}${tmpSuffix}`;
    const file = await storage.create(tmp);
    try {
      for await (const chunk of result.data) await file.write(chunk);
      const error = await result.error;
      if (error != null) throw error;
      await file.sync();
    } finally {
      await file.close();
    }
    await storage.rename(tmp, path);
    await storage.fsyncDir(dir);
    return path;
  }
}
