// Start-up recovery: newest valid snapshot -> replay the log after it -> repair a torn tail; falls back to older snapshots, never skips damage.
//
// Candidates are tried newest first: each snapshot, then "no snapshot" (replay from seq 1). A
// candidate fails if its snapshot is invalid or its log continuation has a gap; the next one is then
// tried on a fresh state. Damage inside a log segment (corruption, or a torn record anywhere but the
// end of the last segment) fails the whole recovery: every older candidate needs that segment too.

import type { LogRecord } from '../domain/entities.js';
import { decodeLog, type DecodedLog } from './codec.js';
import { classifyDir } from './layout.js';
import type { PersistLogger, Replayable } from './replayable.js';
import { readSnapshotChunks, SnapshotError } from './snapshot.js';
import type { Storage } from './storage.js';

export class RecoveryError extends Error {
  readonly code = 'recovery_failed';
  constructor(
    message: string,
    /** The file at fault, when there is one. */
    readonly file: string | undefined,
    readonly offset: number | undefined,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'RecoveryError';
  }
}

export interface RecoveryOptions<S extends Replayable> {
  readonly dir: string;
  readonly storage: Storage;
  readonly createState: () => S;
  readonly logger: PersistLogger;
}

export interface Recovered<S extends Replayable> {
  readonly state: S;
  /** First seq of the segment the log continues in, or undefined to start wal-<lastSeq + 1>.log. */
  readonly continueSegment: number | undefined;
  /** Base seq of the snapshot the state was built from, undefined if it was replayed from seq 1. */
  readonly snapshotBaseSeq: number | undefined;
  readonly recordsReplayed: number;
}

interface Segment {
  readonly firstSeq: number;
  readonly path: string;
}

interface Candidate {
  readonly baseSeq: number;
  /** undefined: start from an empty state at seq 0. */
  readonly path: string | undefined;
}

interface CandidateFailure {
  readonly file: string;
  readonly offset: number | undefined;
  readonly message: string;
}

export async function recover<S extends Replayable>(opts: RecoveryOptions<S>): Promise<Recovered<S>> {
  const { dir, storage, logger } = opts;
  const started = performance.now();
  const listing = classifyDir(dir, await storage.list(dir));
  for (const tmp of listing.tmps) {
    // A snapshot that never reached its rename: never valid, and its name would be reused.
    await storage.unlink(tmp);
    logger.info({ file: tmp }, 'removed a leftover temporary file');
  }
  const log = new SegmentLog(storage, listing.segments);
  const candidates: Candidate[] = [...listing.snapshots.map((s) => ({ baseSeq: s.baseSeq, path: s.path })), { baseSeq: 0, path: undefined }];
  // Every snapshot name is a promise that the state once reached its base seq durably. A fallback
  // that ends short of the newest one would quietly lose acknowledged changes, so it does not count.
  const newestBaseSeq = listing.snapshots[0]?.baseSeq ?? 0;
  const failures: CandidateFailure[] = [];
  for (const candidate of candidates) {
    const state = opts.createState();
    const outcome = (await loadCandidate(candidate, state, storage)) ?? (await replay(log, state, candidate.baseSeq));
    let failure = typeof outcome === 'number' ? undefined : outcome;
    if (failure === undefined && state.lastSeq < newestBaseSeq) {
      const message = `the log ends at seq ${state.lastSeq}, short of this snapshot's base seq ${newestBaseSeq}: acknowledged changes would be lost`;
      failure = { file: listing.snapshots[0]!.path, offset: undefined, message };
    }
    if (failure !== undefined) {
      failures.push(failure);
      logger.warn({ file: failure.file, offset: failure.offset ?? null, reason: failure.message }, candidate.path === undefined
        ? 'cannot rebuild the state from the log alone'
        : 'snapshot and log do not give a consistent state; trying an older snapshot');
      continue;
    }
    const continueSegment = await prepareLastSegment(log, state.lastSeq, storage, dir, logger);
    logger.info({
      snapshot: candidate.path ?? null, baseSeq: candidate.baseSeq, recordsReplayed: outcome, lastSeq: state.lastSeq,
      segments: listing.segments.length, ms: Math.round(performance.now() - started),
    }, 'recovered state from disk');
    return { state, continueSegment, snapshotBaseSeq: candidate.path === undefined ? undefined : candidate.baseSeq, recordsReplayed: outcome as number };
  }
  const first = failures[0]!;
  const all = failures.map((f) => `${f.file}${f.offset === undefined ? '' : ` at offset ${f.offset}`}: ${f.message}`).join('; ');
  throw new RecoveryError(`no snapshot together with the log gives a consistent state; refusing to start (${all})`, first.file, first.offset);
}

/**
 * Loads candidate's snapshot into state a chunk at a time; a failure if the snapshot is invalid, else
 * undefined. A state that took chunks of an invalid snapshot is left half-loaded: recover() drops it
 * and tries the next candidate on a fresh one.
 */
async function loadCandidate(candidate: Candidate, state: Replayable, storage: Storage): Promise<CandidateFailure | undefined> {
  if (candidate.path === undefined) return undefined;
  try {
    const snapshot = await readSnapshotChunks(storage, candidate.path, (kind, values) => state.loadSection(kind, values));
    state.finishLoad(snapshot.baseSeq);
    return undefined;
  } catch (err) {
    if (!(err instanceof SnapshotError)) throw err;
    return { file: err.file, offset: err.offset, message: err.reason };
  }
}

/** Applies every record after the state's lastSeq; the count applied, or a failure at a gap. */
async function replay(log: SegmentLog, state: Replayable, baseSeq: number): Promise<number | CandidateFailure> {
  let applied = 0;
  for (const segment of log.segmentsAfter(baseSeq)) {
    const decoded = await log.decode(segment);
    const { records, offsets } = decoded;
    for (let i = 0; i < records.length; i++) {
      const record = records[i]!;
      if (record.seq <= state.lastSeq) continue;
      if (record.seq !== state.lastSeq + 1) {
        return { file: segment.path, offset: offsets[i], message: `gap in the log: expected seq ${state.lastSeq + 1} (replaying from seq ${baseSeq + 1}), found ${record.seq}` };
      }
      state.apply(record);
      applied++;
    }
  }
  return applied;
}

/**
 * Cuts a torn tail off the last segment and says where the log continues. The last segment is
 * continued when its next seq is the state's; otherwise (an empty leftover, or a log that ends
 * before the snapshot) a new segment named after the state's next seq takes over as last.
 */
async function prepareLastSegment(log: SegmentLog, lastSeq: number, storage: Storage, dir: string, logger: PersistLogger): Promise<number | undefined> {
  const last = log.last;
  if (last === undefined) return undefined;
  const decoded = await log.decode(last);
  if (decoded.end.kind === 'torn') {
    const { offset, droppedBytes, reason } = decoded.end;
    logger.warn({ file: last.path, offset, droppedBytes, reason }, 'cutting off a torn record at the end of the log (a crash during its write)');
    const file = await storage.openAppend(last.path);
    try {
      await file.truncate(offset);
      // Durable before anything is appended behind it, or a crash could bring the torn bytes back.
      await file.datasync();
    } finally {
      await file.close();
    }
  }
  const lastRecord: LogRecord | undefined = decoded.records[decoded.records.length - 1];
  const nextSeq = lastRecord === undefined ? last.firstSeq : lastRecord.seq + 1;
  if (nextSeq === lastSeq + 1) return last.firstSeq;
  if (lastRecord === undefined) {
    // An empty segment whose name no longer fits; left in place it could sort after the new one.
    logger.warn({ file: last.path, lastSeq }, 'removing an empty log segment that does not continue the state');
    await storage.unlink(last.path);
    await storage.fsyncDir(dir);
  }
  return undefined;
}

/** The log segments, each decoded and checked at most once, whichever candidates need it. */
class SegmentLog {
  private readonly decoded = new Map<string, DecodedLog>();

  constructor(private readonly storage: Storage, private readonly segments: readonly Segment[]) {}

  get last(): Segment | undefined {
    return this.segments[this.segments.length - 1];
  }

  /** Segments that can hold records after baseSeq: the next one starts after baseSeq + 1, or it is the last. */
  segmentsAfter(baseSeq: number): Segment[] {
    return this.segments.filter((_, i) => i === this.segments.length - 1 || this.segments[i + 1]!.firstSeq > baseSeq + 1);
  }

  async decode(segment: Segment): Promise<DecodedLog> {
    const cached = this.decoded.get(segment.path);
    if (cached !== undefined) return cached;
    const decoded = decodeLog(await this.storage.readFile(segment.path), segment.path);
    this.check(segment, decoded);
    this.decoded.set(segment.path, decoded);
    return decoded;
  }

  /** Damage no candidate can get around; throws RecoveryError naming the file and offset. */
  private check(segment: Segment, decoded: DecodedLog): void {
    const { end, records, offsets } = decoded;
    const isLast = segment === this.last;
    if (end.kind === 'corrupt') {
      throw new RecoveryError(`log segment ${segment.path} is corrupt at offset ${end.offset} (${end.reason}); refusing to start rather than skip records`, segment.path, end.offset);
    }
    if (end.kind === 'torn' && !isLast) {
      throw new RecoveryError(`log segment ${segment.path} has a torn record at offset ${end.offset} (${end.reason}) but is not the last segment; refusing to start`, segment.path, end.offset);
    }
    let expected = segment.firstSeq;
    for (let i = 0; i < records.length; i++) {
      const seq = records[i]!.seq;
      if (seq !== expected) {
        throw new RecoveryError(`log segment ${segment.path} holds seq ${seq} at offset ${offsets[i]} where ${expected} belongs; refusing to start`, segment.path, offsets[i]);
      }
      expected++;
    }
    const index = this.segments.indexOf(segment);
    const next = this.segments[index + 1];
    if (next !== undefined && expected > next.firstSeq) {
      throw new RecoveryError(`log segment ${segment.path} runs to seq ${expected - 1}, into ${next.path}; refusing to start`, segment.path, offsets[offsets.length - 1]);
    }
  }
}
