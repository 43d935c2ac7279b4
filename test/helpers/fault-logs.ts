// Data directories with known contents on the in-memory storage double, for the torn-tail, bit-flip and repair tests: build one, damage a copy, recover it, compare with the model.

import { decodeLog, frameHeaderBytes } from '../../src/persist/codec.js';
import { openPersistence, type Persistence } from '../../src/persist/persistence.js';
import type { LogRecord, Op } from '../../src/domain/entities.js';
import { FakeState, RecordingLogger } from './persist-fixtures.js';
import { PowerLossStorage } from './fault-storage.js';

export const quietLogger = { info: () => undefined, warn: () => undefined, error: () => undefined };

/** Record seq: a put of a user whose size varies with seq, and every third one also deletes an older user. */
export function modelRecord(seq: number): LogRecord {
  const ops: Op[] = [{ op: 'put', kind: 'user', value: { id: `u${seq % 7}`, name: `user ${seq}`, note: 'n'.repeat((seq * 37) % 90) } as never }];
  if (seq % 3 === 0) ops.push({ op: 'del', kind: 'user', id: `u${(seq + 3) % 7}` });
  return { seq, at: 1_700_000_000_000_000 + seq, ops };
}

export function modelAfter(seq: number): FakeState {
  const model = new FakeState();
  for (let i = 1; i <= seq; i++) model.apply(modelRecord(i));
  return model;
}

export interface Built {
  readonly storage: PowerLossStorage;
  readonly dir: string;
  readonly persistence: Persistence;
  readonly state: FakeState;
}

/**
 * Records 1..records, each its own batch (awaited), unless `together` says how many of the last ones
 * go in one turn; snapshots after the seqs in snapshotsAfter. Left open: no final snapshot, like a crash.
 */
export async function buildLog(dir: string, records: number, opts: { snapshotsAfter?: readonly number[]; together?: number } = {}): Promise<Built> {
  const storage = new PowerLossStorage();
  await storage.mkdirp(dir);
  const { state, persistence } = await openPersistence({
    dir, fsync: 'always', createState: () => new FakeState(), logger: quietLogger, storage, snapshotEveryRecords: 1_000_000, snapshotEverySeconds: 3600,
  });
  const together = opts.together ?? 1;
  const pending: Promise<void>[] = [];
  for (let seq = 1; seq <= records; seq++) {
    const r = modelRecord(seq);
    const durable = persistence.append(r);
    state.apply(r);
    if (seq <= records - together) await durable;
    else pending.push(durable);
    if (opts.snapshotsAfter?.includes(seq)) await persistence.snapshot();
  }
  await Promise.all(pending);
  return { storage, dir, persistence, state };
}

let copies = 0;

/** A durable copy of a built directory under a fresh path, with `change` applied to its files. */
export function damagedCopy(built: Built, change: (files: Map<string, Uint8Array>, put: (name: string, data: Uint8Array) => void) => void): { storage: PowerLossStorage; dir: string } {
  const dir = `${built.dir}-copy${++copies}`;
  const storage = built.storage.clone(built.dir, dir);
  change(storage.files(dir), (name, data) => storage.putFile(`${dir}/${name}`, data));
  return { storage, dir };
}

/** Opens dir and returns the state and the log lines, or the error recovery refused with. */
export async function recoverCopy(copy: { storage: PowerLossStorage; dir: string }): Promise<{ state: FakeState; persistence: Persistence; logger: RecordingLogger } | { error: unknown; logger: RecordingLogger }> {
  const logger = new RecordingLogger();
  try {
    const { state, persistence } = await openPersistence({
      dir: copy.dir, fsync: 'always', createState: () => new FakeState(), logger, storage: copy.storage, snapshotEveryRecords: 1_000_000, snapshotEverySeconds: 3600,
    });
    return { state, persistence, logger };
  } catch (error) {
    return { error, logger };
  }
}

/** Where each record's frame starts and ends in a segment, and where its batch (its mark, if any) starts. */
export function frameMap(segment: Uint8Array): Array<{ seq: number; start: number; end: number }> {
  const decoded = decodeLog(segment, 'segment');
  return decoded.records.map((r, i) => {
    const start = decoded.offsets[i]!;
    const length = Buffer.from(segment.buffer, segment.byteOffset, segment.byteLength).readUInt32LE(start);
    return { seq: r.seq, start, end: start + frameHeaderBytes + length };
  });
}

/** A copy of bytes with one bit flipped (Uint8Array.from, not slice(): a Buffer's slice is a view, and the original must stay intact). */
export function flipped(bytes: Uint8Array, at: number, bit = 4): Uint8Array {
  const copy = Uint8Array.from(bytes);
  copy[at] ^= 1 << bit;
  return copy;
}
