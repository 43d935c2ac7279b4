// The power-loss model check, shared by the short suite (npm test) and the long run (npm run test:crash): seeded workloads on the real persistence over the power-loss storage double, crashed and recovered again and again.
//
// One case (one seed): open an empty data directory on PowerLossStorage; append seeded records
// (several ops each, across entity kinds, overwrites and deletes) over many event-loop turns while
// snapshots (and so segment rotations and clean-ups) happen on their own; crash at a seeded storage
// operation; keep the seeded crash image of the disk; recover from it; compare; repeat for a few
// rounds; end with a clean close and reopen. The check after every recovery:
//   acked <= lastSeq <= appended, and the state equals the model after exactly lastSeq records:
// so no acknowledged record is lost, nothing is there that was never appended, no record is applied
// twice or in part. A recovery that refuses to start is a failure too: a power loss damages only what
// was never fdatasynced, so there is always a consistent state to start from.

import type { EntityKind, LogRecord, Op } from '../../src/domain/entities.js';
import { openPersistence, type Persistence } from '../../src/persist/persistence.js';
import type { PersistLogger } from '../../src/persist/replayable.js';
import { FakeState } from './persist-fixtures.js';
import { PowerLossStorage, Rng, type CrashStats } from './fault-storage.js';

const silent: PersistLogger = { info: () => undefined, warn: () => undefined, error: () => undefined };

export interface PowerLossTotals {
  cases: number;
  crashes: number;
  /** Crashes that struck while recovery itself ran. */
  crashesDuringRecovery: number;
  recoveries: number;
  recordsAppended: number;
  recordsAcknowledged: number;
  /** Acknowledged records missing after a recovery: must stay 0. */
  lostAcknowledged: number;
  /** Records appended but never acknowledged that the recovery nonetheless kept (allowed). */
  unacknowledgedKept: number;
  crashStats: CrashStats;
  /** Where the crashes struck: storage operation and file, counted. */
  crashPoints: Map<string, number>;
}

export function emptyTotals(): PowerLossTotals {
  return {
    cases: 0, crashes: 0, crashesDuringRecovery: 0, recoveries: 0, recordsAppended: 0, recordsAcknowledged: 0,
    lostAcknowledged: 0, unacknowledgedKept: 0,
    crashStats: { applied: 0, dropped: 0, torn: 0, garbled: 0, dirOpsKept: 0, dirOpsLost: 0 },
    crashPoints: new Map(),
  };
}

export class PowerLossFailure extends Error {
  constructor(readonly seed: number, message: string) {
    super(`seed ${seed}: ${message} (replay: the same seed gives the same run)`);
    this.name = 'PowerLossFailure';
  }
}

const kinds: readonly EntityKind[] = ['organization', 'application', 'group', 'user'];
const idsPerKind = 6;

function randomOp(rng: Rng, seq: number): Op {
  const kind = rng.pick(kinds);
  const id = `${kind[0]}${rng.int(1, idsPerKind)}`;
  if (rng.chance(0.2)) return { op: 'del', kind, id };
  // Values vary in size so that frames straddle sector boundaries in every way.
  const value = { id, name: `${kind} ${id}`, v: seq, pad: 'x'.repeat(rng.int(0, rng.chance(0.1) ? 3000 : 120)) };
  return { op: 'put', kind, value } as unknown as Op;
}

function randomRecord(rng: Rng, seq: number): LogRecord {
  const ops: Op[] = [];
  for (let i = rng.int(1, 3); i > 0; i--) ops.push(randomOp(rng, seq));
  return { seq, at: 1_700_000_000_000_000 + seq, ops };
}

function modelAfter(history: readonly LogRecord[], seq: number): FakeState {
  const model = new FakeState();
  for (let i = 0; i < seq; i++) model.apply(history[i]!);
  return model;
}

interface Open {
  state: FakeState;
  persistence: Persistence;
}

/** Runs one seeded case; throws PowerLossFailure on any broken promise. */
export async function runPowerLossCase(seed: number, totals: PowerLossTotals, opts: { rounds?: number; opsPerRoundMax?: number } = {}): Promise<void> {
  const rng = new Rng(seed);
  const rounds = opts.rounds ?? rng.int(1, 3);
  const opsPerRoundMax = opts.opsPerRoundMax ?? 200;
  totals.cases++;
  /** history[i] is the record with seq i + 1 as last appended; lost records are overwritten by their seq's reuse. */
  const history: LogRecord[] = [];
  let acked = 0;
  let appended = 0;
  let root = `/pl/${seed}/r0`;
  let storage = new PowerLossStorage();
  await storage.mkdirp(root);

  const check = (state: FakeState, when: string): void => {
    const last = state.lastSeq;
    if (last < acked) {
      totals.lostAcknowledged += acked - last;
      throw new PowerLossFailure(seed, `${when}: recovered up to seq ${last} but seq ${acked} was acknowledged`);
    }
    if (last > appended) throw new PowerLossFailure(seed, `${when}: recovered seq ${last}, beyond the last appended ${appended}`);
    const expected = modelAfter(history, last).dump();
    const actual = state.dump();
    const differs = Object.keys(expected).filter((kind) => JSON.stringify(expected[kind]) !== JSON.stringify(actual[kind]));
    if (differs.length > 0) {
      const kind = differs[0]!;
      const e = new Map(expected[kind] as [string, unknown][]);
      const a = new Map(actual[kind] as [string, unknown][]);
      const ids = [...new Set([...e.keys(), ...a.keys()])].filter((id) => JSON.stringify(e.get(id)) !== JSON.stringify(a.get(id)));
      const show = (v: unknown): string => JSON.stringify(v)?.slice(0, 120) ?? 'absent';
      const detail = ids.slice(0, 3).map((id) => `${kind} ${id}: expected ${show(e.get(id))}, got ${show(a.get(id))}`).join('; ');
      throw new PowerLossFailure(seed, `${when}: the state after seq ${last} differs from the model (a partial, doubled or foreign change): ${detail}`);
    }
    totals.unacknowledgedKept += last - acked;
    history.length = last;
    appended = last;
    acked = last;
  };

  for (let round = 0; round <= rounds; round++) {
    const finalRound = round === rounds;
    let ackedAtCrash = acked;
    let image: PowerLossStorage | undefined;
    const nextRoot = `/pl/${seed}/r${round + 1}`;
    const crashStorage = storage;
    const crashRoot = root;
    // A slow disk in some rounds: fsyncs that take several turns let snapshots finish around them.
    const slow = rng.chance(0.3);
    crashStorage.plan.latencyTurns = slow ? (op) => (op === 'datasync' || op === 'sync' || op === 'write' ? rng.int(0, 3) : 0) : undefined;
    if (!finalRound) {
      crashStorage.crashAfter(rng.int(1, opsPerRoundMax));
      crashStorage.plan.onCrash = () => {
        ackedAtCrash = acked;
        image = crashStorage.crashImage(rng, crashRoot, nextRoot, totals.crashStats);
        const point = crashStorage.crashPoint.replace(/\d+/g, 'N');
        totals.crashPoints.set(point, (totals.crashPoints.get(point) ?? 0) + 1);
      };
    }
    let opened: Open | undefined;
    try {
      opened = await Promise.race([
        openPersistence({
          dir: root, fsync: 'always', createState: () => new FakeState(), logger: silent, storage,
          snapshotEveryRecords: rng.int(3, 20), snapshotEverySeconds: 3600,
        }),
        crashStorage.whenCrashed.then(() => undefined),
      ]);
    } catch (err) {
      throw new PowerLossFailure(seed, `round ${round}: recovery refused to start: ${(err as Error).message}`);
    }
    if (round > 0) totals.recoveries++;
    if (opened === undefined) {
      // The crash struck during recovery: nothing new was acknowledged; the next recovery must cope.
      totals.crashes++;
      totals.crashesDuringRecovery++;
      storage = image!;
      root = nextRoot;
      continue;
    }
    const { state, persistence } = opened;
    check(state, round === 0 ? 'first open' : `recovery after crash ${round}`);

    if (finalRound) {
      // A clean end: new records go on after the last recovery and survive a clean close.
      for (let i = 0; i < 3; i++) {
        const r = randomRecord(rng, state.lastSeq + 1);
        history[r.seq - 1] = r;
        appended = r.seq;
        const durable = persistence.append(r);
        state.apply(r);
        await durable;
        acked = r.seq;
      }
      await persistence.close();
      const again = await openPersistence({ dir: root, fsync: 'always', createState: () => new FakeState(), logger: silent, storage });
      check(again.state, 'reopen after a clean close');
      await again.persistence.close();
      return;
    }

    // The workload: records over many turns until the armed crash strikes (or the test pulls the plug).
    for (let turn = 0; turn < 250 && !crashStorage.crashed; turn++) {
      for (let i = rng.int(0, 3); i > 0 && !crashStorage.crashed; i--) {
        const r = randomRecord(rng, state.lastSeq + 1);
        history[r.seq - 1] = r;
        appended = r.seq;
        totals.recordsAppended++;
        const durable = persistence.append(r);
        state.apply(r);
        durable.then(() => {
          if (!crashStorage.crashed) {
            acked = Math.max(acked, r.seq);
            totals.recordsAcknowledged++;
          }
        }, () => undefined);
      }
      if (rng.chance(0.03)) persistence.snapshot().catch(() => undefined);
      await new Promise((resolve) => setImmediate(resolve));
    }
    crashStorage.crashNow();
    totals.crashes++;
    // Release the timers of the crashed instance (its storage never answers again, so this never settles).
    void persistence.close().catch(() => undefined);
    acked = ackedAtCrash;
    storage = image!;
    root = nextRoot;
  }
}

export function formatTotals(t: PowerLossTotals): string {
  const points = [...t.crashPoints.entries()].sort((a, b) => b[1] - a[1]).map(([p, n]) => `${p}: ${n}`).join(', ');
  const c = t.crashStats;
  return [
    `${t.cases} seeded cases, ${t.crashes} crashes (${t.crashesDuringRecovery} during recovery), ${t.recoveries} recoveries`,
    `${t.recordsAppended} records appended, ${t.recordsAcknowledged} acknowledged, ${t.lostAcknowledged} acknowledged records lost, ${t.unacknowledgedKept} unacknowledged kept`,
    `pending writes at the crashes: ${c.applied} applied, ${c.dropped} dropped, ${c.torn} cut short, ${c.garbled} garbled; directory changes ${c.dirOpsKept} kept, ${c.dirOpsLost} lost`,
    `crash points: ${points}`,
  ].join('\n');
}
