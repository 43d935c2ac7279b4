// --repair: makes a data directory that recovery refuses usable again: backs the damaged file up, cuts the log at the damage (or sets a bad snapshot aside), and reports exactly what was dropped.
//
// It repairs only what recovery itself names (file and offset), one step at a time, and runs recovery
// again after each step, so it never guesses: a corrupt log segment is copied to
// <name>.damaged-<time> and cut at the damaged frame, and every later segment (whose records would now
// follow a gap) is set aside whole under the same suffix; a snapshot that no consistent recovery can use
// is set aside. Nothing is deleted. The report lists every dropped byte range and the seqs of the whole
// records found in it, so an operator can see what was lost and restore it from elsewhere.

import { basename, join } from 'node:path';
import { repairStepsMax } from '../config/limits.js';
import { decodeLog, scanRecordSeqs } from './codec.js';
import { restrictDataDir } from './dir-mode.js';
import { classifyDir, parseSegmentFileName, parseSnapshotFileName } from './layout.js';
import { acquireLock } from './lock.js';
import { recover, RecoveryError } from './recovery.js';
import type { PersistLogger, Replayable } from './replayable.js';
import { NodeStorage, type Storage } from './storage.js';

export interface RepairAction {
  readonly kind: 'log_cut' | 'log_set_aside' | 'snapshot_set_aside';
  readonly file: string;
  /** Where the damage starts (log_cut); undefined when the whole file went. */
  readonly offset: number | undefined;
  /** The untouched original, next to it. */
  readonly backup: string;
  readonly droppedBytes: number;
  /** Whole, valid records found in what was dropped (best effort after damage). */
  readonly droppedRecords: { readonly count: number; readonly firstSeq: number | null; readonly lastSeq: number | null };
  /** For a snapshot: the seq its state was as of. */
  readonly snapshotBaseSeq?: number;
  /** What recovery said. */
  readonly reason: string;
}

export interface RepairReport {
  readonly actions: RepairAction[];
  /** The state recovery reaches now. */
  readonly lastSeq: number;
  readonly snapshotBaseSeq: number | undefined;
  /** Seqs a set-aside snapshot covered that the remaining log does not: changes that are gone. */
  readonly lostSeqs: { readonly from: number; readonly to: number } | undefined;
}

export interface RepairOptions<S extends Replayable> {
  readonly dir: string;
  readonly createState: () => S;
  readonly logger: PersistLogger;
  readonly storage?: Storage;
  /** The backup suffix's time; injectable for tests. */
  readonly now?: () => Date;
}

function seqSummary(seqs: readonly number[]): RepairAction['droppedRecords'] {
  if (seqs.length === 0) return { count: 0, firstSeq: null, lastSeq: null };
  return { count: seqs.length, firstSeq: Math.min(...seqs), lastSeq: Math.max(...seqs) };
}

/** Repairs dir until recovery accepts it; throws what recovery threw if a failure names no file to repair. */
export async function repairDataDir<S extends Replayable>(opts: RepairOptions<S>): Promise<RepairReport> {
  const storage = opts.storage ?? new NodeStorage();
  const { dir, logger } = opts;
  const stamp = (opts.now ?? (() => new Date()))().toISOString().replace(/[:.]/g, '-');
  const actions: RepairAction[] = [];
  const backupName = async (file: string): Promise<string> => {
    for (let n = 0; ; n++) {
      const candidate = `${file}.damaged-${stamp}${n === 0 ? '' : `-${n}`}`;
      if (!(await storage.exists(candidate))) return candidate;
    }
  };
  const setAside = async (file: string): Promise<string> => {
    const backup = await backupName(file);
    await storage.rename(file, backup);
    await storage.fsyncDir(dir);
    return backup;
  };

  restrictDataDir(dir, logger);
  const lock = await acquireLock(storage, dir);
  try {
    for (let step = 0; step < repairStepsMax; step++) {
      let failure: RecoveryError;
      try {
        const { state, snapshotBaseSeq } = await recover({ dir, storage, createState: opts.createState, logger });
        const aside = actions.filter((a) => a.kind === 'snapshot_set_aside' && (a.snapshotBaseSeq ?? 0) > state.lastSeq);
        const lostTo = Math.max(0, ...aside.map((a) => a.snapshotBaseSeq ?? 0));
        const report: RepairReport = {
          actions, lastSeq: state.lastSeq, snapshotBaseSeq,
          lostSeqs: lostTo > state.lastSeq ? { from: state.lastSeq + 1, to: lostTo } : undefined,
        };
        logger.info({ actions: actions.length, lastSeq: report.lastSeq, lostSeqs: report.lostSeqs ?? null }, actions.length === 0 ? 'repair: nothing to repair' : 'repair: recovery now accepts the data directory');
        return report;
      } catch (err) {
        if (!(err instanceof RecoveryError) || err.file === undefined) throw err;
        failure = err;
      }
      const file = failure.file!;
      const name = basename(file);
      if (join(dir, name) !== file) throw failure;
      const segmentSeq = parseSegmentFileName(name);
      const snapshotSeq = parseSnapshotFileName(name);
      if (segmentSeq !== undefined) {
        const bytes = await storage.readFile(file);
        const offset = failure.offset ?? 0;
        const backup = await backupName(file);
        const copy = await storage.create(backup);
        try {
          await copy.write(bytes);
          await copy.sync();
        } finally {
          await copy.close();
        }
        await storage.fsyncDir(dir);
        const cut = await storage.openAppend(file);
        try {
          await cut.truncate(offset);
          await cut.datasync();
        } finally {
          await cut.close();
        }
        const action: RepairAction = {
          kind: 'log_cut', file, offset, backup, droppedBytes: bytes.length - offset,
          droppedRecords: seqSummary(scanRecordSeqs(bytes, offset)), reason: failure.message,
        };
        actions.push(action);
        logger.warn({ ...action }, 'repair: cut the log segment at the damage (the original is kept as the backup)');
        // Records after the cut can no longer be replayed: their segments are set aside whole.
        const { segments } = classifyDir(dir, await storage.list(dir));
        for (const later of segments.filter((s) => s.firstSeq > segmentSeq)) {
          const laterBytes = await storage.readFile(later.path);
          const decoded = decodeLog(laterBytes, later.path);
          const seqs = [...decoded.records.map((r) => r.seq), ...scanRecordSeqs(laterBytes, decoded.validBytes + 1)];
          const laterBackup = await setAside(later.path);
          const laterAction: RepairAction = {
            kind: 'log_set_aside', file: later.path, offset: undefined, backup: laterBackup, droppedBytes: laterBytes.length,
            droppedRecords: seqSummary(seqs), reason: `follows the cut in ${name}`,
          };
          actions.push(laterAction);
          logger.warn({ ...laterAction }, 'repair: set a later log segment aside');
        }
      } else if (snapshotSeq !== undefined) {
        const bytes = await storage.readFile(file);
        const backup = await setAside(file);
        const action: RepairAction = {
          kind: 'snapshot_set_aside', file, offset: failure.offset, backup, droppedBytes: bytes.length,
          droppedRecords: seqSummary([]), snapshotBaseSeq: snapshotSeq, reason: failure.message,
        };
        actions.push(action);
        logger.warn({ ...action }, 'repair: set a snapshot aside');
      } else {
        throw failure;
      }
    }
    throw new Error(`repair gave up after ${repairStepsMax} steps; the data directory needs a closer look`);
  } finally {
    await lock.release();
  }
}

/** A few lines for a person: what was done and what is gone. */
export function describeRepair(report: RepairReport): string {
  if (report.actions.length === 0) return `nothing to repair: recovery accepts the data directory (state as of seq ${report.lastSeq})`;
  const lines = report.actions.map((a) => {
    const records = a.droppedRecords.count === 0 ? 'no whole records' : `${a.droppedRecords.count} whole records (seq ${a.droppedRecords.firstSeq}..${a.droppedRecords.lastSeq})`;
    switch (a.kind) {
      case 'log_cut': return `cut ${a.file} at offset ${a.offset}: dropped ${a.droppedBytes} bytes holding ${records}; original kept as ${a.backup}`;
      case 'log_set_aside': return `set ${a.file} aside (${a.reason}): ${a.droppedBytes} bytes holding ${records}; moved to ${a.backup}`;
      case 'snapshot_set_aside': return `set snapshot ${a.file} (state as of seq ${a.snapshotBaseSeq}) aside: ${a.reason}; moved to ${a.backup}`;
    }
  });
  lines.push(`recovery now starts with the state as of seq ${report.lastSeq}`);
  if (report.lostSeqs !== undefined) lines.push(`changes seq ${report.lostSeqs.from}..${report.lostSeqs.to} were only in a set-aside snapshot and are lost`);
  return lines.join('\n');
}
