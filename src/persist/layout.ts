// The data directory layout: names of log segments, snapshots, their temporaries, the lock file and the key fingerprint.
//
//   <dir>/LOCK                                    flock(2)-locked by the process that has the directory open (lock.ts)
//   <dir>/wal-<first seq, 16 digits>.log          log segment; holds records first seq .. (next segment's first seq - 1)
//   <dir>/snapshot-<base seq, 16 digits>.msgpack  state after record <base seq>, plus possibly some later changes
//   <dir>/KEY-FINGERPRINT                         which server key the data was written with (key-fingerprint.ts)
//   <dir>/<name>.tmp                              a snapshot (or fingerprint) being written; removed at start-up
//
// Sixteen zero-padded digits make the name order the seq order and hold every safe integer seq we can reach.

import { join } from 'node:path';

const seqDigits = 16;
const segmentPattern = /^wal-(\d{16})\.log$/;
const snapshotPattern = /^snapshot-(\d{16})\.msgpack$/;

export const lockFileName = 'LOCK';
export const keyFingerprintFileName = 'KEY-FINGERPRINT';
export const tmpSuffix = '.tmp';

function pad(seq: number): string {
  return String(seq).padStart(seqDigits, '0');
}

export function segmentFileName(firstSeq: number): string {
  return `wal-${pad(firstSeq)}.log`;
}

export function snapshotFileName(baseSeq: number): string {
  return `snapshot-${pad(baseSeq)}.msgpack`;
}

/** The first seq of a segment file name, or undefined if name is not one. */
export function parseSegmentFileName(name: string): number | undefined {
  const m = segmentPattern.exec(name);
  return m === null ? undefined : Number(m[1]);
}

/** The base seq of a snapshot file name, or undefined if name is not one. */
export function parseSnapshotFileName(name: string): number | undefined {
  const m = snapshotPattern.exec(name);
  return m === null ? undefined : Number(m[1]);
}

export interface DirListing {
  /** Log segments by first seq, ascending. */
  readonly segments: ReadonlyArray<{ readonly firstSeq: number; readonly path: string }>;
  /** Snapshots by base seq, newest first. */
  readonly snapshots: ReadonlyArray<{ readonly baseSeq: number; readonly path: string }>;
  /** Leftover temporaries. */
  readonly tmps: readonly string[];
}

/** Sorts the names of a data directory into segments, snapshots and temporaries; anything else is ignored. */
export function classifyDir(dir: string, names: readonly string[]): DirListing {
  const segments: Array<{ firstSeq: number; path: string }> = [];
  const snapshots: Array<{ baseSeq: number; path: string }> = [];
  const tmps: string[] = [];
  for (const name of names) {
    const firstSeq = parseSegmentFileName(name);
    if (firstSeq !== undefined) segments.push({ firstSeq, path: join(dir, name) });
    const baseSeq = parseSnapshotFileName(name);
    if (baseSeq !== undefined) snapshots.push({ baseSeq, path: join(dir, name) });
    if (name.endsWith(tmpSuffix)) tmps.push(join(dir, name));
  }
  segments.sort((a, b) => a.firstSeq - b.firstSeq);
  snapshots.sort((a, b) => b.baseSeq - a.baseSeq);
  return { segments, snapshots, tmps };
}
