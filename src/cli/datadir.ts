// Reading a data directory without changing it: recovery on a read-only storage, and `verify`, which checks every snapshot and log record.

import { existsSync, statSync } from 'node:fs';
import { entityKinds } from '../domain/entities.js';
import { decodeLog } from '../persist/codec.js';
import { classifyDir } from '../persist/layout.js';
import { recover, RecoveryError } from '../persist/recovery.js';
import type { PersistLogger } from '../persist/replayable.js';
import { readSnapshot, SnapshotError } from '../persist/snapshot.js';
import { NodeStorage, type ReadableFile, type Storage, type WritableFile } from '../persist/storage.js';
import { State } from '../store/state.js';
import { CommandError, type Output } from './command.js';

/**
 * The real file system for reads; every write is dropped. Recovery through it cuts no torn tail and
 * removes no temporary file, so a directory can be read while a server runs on it (the server may
 * append meanwhile: a record caught half-written reads as a torn tail and is simply left out).
 */
class ReadOnlyStorage implements Storage {
  private readonly fs = new NodeStorage();

  mkdirp(): Promise<void> { return Promise.resolve(); }
  list(dir: string): Promise<string[]> { return this.fs.list(dir); }
  exists(path: string): Promise<boolean> { return this.fs.exists(path); }
  readFile(path: string): Promise<Uint8Array> { return this.fs.readFile(path); }
  openRead(path: string): Promise<ReadableFile> { return this.fs.openRead(path); }
  openAppend(path: string): Promise<WritableFile> {
    const done = (): Promise<void> => Promise.resolve();
    return Promise.resolve({ path, write: done, datasync: done, sync: done, truncate: done, close: done });
  }
  create(path: string): Promise<WritableFile> { return Promise.reject(new Error(`read-only: will not create ${path}`)); }
  lockExclusive(path: string): Promise<undefined> { return Promise.reject(new Error(`read-only: will not lock ${path}`)); }
  rename(from: string): Promise<void> { return Promise.reject(new Error(`read-only: will not rename ${from}`)); }
  unlink(): Promise<void> { return Promise.resolve(); }
  fsyncDir(): Promise<void> { return Promise.resolve(); }
}

/** Collects what recovery reports, for verify to print (as warnings, not pino lines). */
class CollectingLogger implements PersistLogger {
  readonly warnings: string[] = [];
  info(): void {}
  warn(obj: object, msg?: string): void { this.warnings.push(`${msg ?? ''} ${JSON.stringify(obj)}`.trim()); }
  error(obj: object, msg?: string): void { this.warnings.push(`${msg ?? ''} ${JSON.stringify(obj)}`.trim()); }
}

export function requireDataDir(dir: string): void {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new CommandError(`no data directory at ${dir}`);
}

/** The state a server would start with, read without taking the lock or changing any file. */
export async function loadReadOnly(dir: string): Promise<State> {
  requireDataDir(dir);
  try {
    const { state } = await recover({ dir, storage: new ReadOnlyStorage(), createState: () => new State(), logger: new CollectingLogger() });
    return state;
  } catch (err) {
    if (err instanceof RecoveryError) throw new CommandError(`cannot read ${dir}: ${err.message}`, { cause: err });
    if ((err as { code?: string }).code === 'ENOENT') {
      throw new CommandError(`a file of ${dir} went away while it was read (a running server took a snapshot); run the command again`, { cause: err });
    }
    throw err;
  }
}

/**
 * Checks every snapshot (frames, checksums, counts) and every log record (frames, checksums, sequence
 * numbers within and across segments), then recovers the state as a start would. Prints what it saw;
 * answers the number of problems found (a torn tail at the very end is a warning: a start cuts it off).
 */
export async function verifyDataDir(dir: string, io: Output): Promise<number> {
  requireDataDir(dir);
  const storage = new NodeStorage();
  const listing = classifyDir(dir, await storage.list(dir));
  let problems = 0;
  const damage = (file: string, offset: number | undefined, why: string): void => {
    problems++;
    io.out(`DAMAGE ${file}${offset === undefined ? '' : ` at offset ${offset}`}: ${why}`);
  };

  for (const tmp of listing.tmps) io.out(`warning ${tmp}: an unfinished snapshot (removed at the next start)`);
  for (const s of listing.snapshots) {
    try {
      const snap = await readSnapshot(storage, s.path);
      const counts = entityKinds.filter((k) => k !== 'meta').map((k) => `${snap.counts[k]} ${k}s`).join(', ');
      io.out(`ok snapshot ${s.path}: base seq ${snap.baseSeq}, ${counts}, ${snap.bytes} bytes`);
    } catch (err) {
      if (!(err instanceof SnapshotError)) throw err;
      damage(err.file, err.offset, err.reason);
    }
  }

  let expected: number | undefined;
  let records = 0;
  for (let i = 0; i < listing.segments.length; i++) {
    const segment = listing.segments[i]!;
    const isLast = i === listing.segments.length - 1;
    const decoded = decodeLog(await storage.readFile(segment.path), segment.path);
    if (expected !== undefined && segment.firstSeq !== expected) {
      damage(segment.path, 0, `starts at seq ${segment.firstSeq} but the previous segment ends before seq ${expected}`);
    }
    let seq = segment.firstSeq;
    for (let r = 0; r < decoded.records.length; r++) {
      if (decoded.records[r]!.seq !== seq) {
        damage(segment.path, decoded.offsets[r], `holds seq ${decoded.records[r]!.seq} where ${seq} belongs`);
        seq = decoded.records[r]!.seq;
      }
      seq++;
    }
    // Past a corrupt record the segment's last seq is unknown: the next segment's start cannot be judged.
    expected = decoded.end.kind === 'corrupt' ? undefined : seq;
    records += decoded.records.length;
    const range = decoded.records.length === 0 ? 'no records' : `seq ${segment.firstSeq}..${seq - 1}, ${decoded.records.length} records`;
    const end = decoded.end;
    if (end.kind === 'corrupt') damage(segment.path, end.offset, `corrupt record (${end.reason}); ${range} before it`);
    else if (end.kind === 'torn' && !isLast) damage(segment.path, end.offset, `torn record in a segment that is not the last (${end.reason})`);
    else if (end.kind === 'torn') io.out(`warning ${segment.path} at offset ${end.offset}: torn last record, ${end.droppedBytes} bytes (${end.reason}); a start cuts it off`);
    if (end.kind === 'clean' || (end.kind === 'torn' && isLast)) io.out(`ok log ${segment.path}: ${range}`);
  }

  // The checks above see each file alone; recovery sees whether snapshots and log give one consistent state.
  const logger = new CollectingLogger();
  try {
    const recovered = await recover({ dir, storage: new ReadOnlyStorage(), createState: () => new State(), logger });
    const counts = recovered.state.counts();
    io.out(`state: last seq ${recovered.state.lastSeq} (snapshot ${recovered.snapshotBaseSeq ?? 'none'} + ${recovered.recordsReplayed} records replayed); ` +
      `${counts.organizations} organizations, ${counts.applications} applications, ${counts.groups} groups, ${counts.users} users`);
    // Each file may be sound and still not fit the others (a log that ends short of a snapshot).
    for (const w of logger.warnings.filter((x) => x.includes('trying an older snapshot'))) {
      if (problems === 0) damage(dir, undefined, `a start would fall back to an older snapshot: ${w}`);
      else io.out(`note: a start would fall back to an older snapshot: ${w}`);
    }
  } catch (err) {
    if (!(err instanceof RecoveryError)) throw err;
    damage(err.file ?? dir, err.offset, err.message);
  }
  io.out(`${listing.snapshots.length} snapshots, ${listing.segments.length} log segments, ${records} records; ${problems === 0 ? 'no damage found' : `${problems} problems found`}`);
  return problems;
}
