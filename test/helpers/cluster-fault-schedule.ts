// The seeded fault schedule of a cluster fault run: which process is paused or killed, when, and for how long, in two lanes (NATS servers, authd nodes).
//
// Every random choice of a run comes from one seed: the master generator hands each lane and each client a seed of
// its own, so that a lane's faults do not depend on how many choices the clients made before. A run replays from
// its seed: the same schedule and the same sequence of draws per client (what a draw lands on, such as which of
// the Users acknowledged so far, and the outcomes still depend on timing).

import { Prng } from '../../bench/lib/prng.js';

/** At most one NATS server and at most one authd node are faulted at a time; the two lanes overlap freely. */
export type FaultLane = 'nats' | 'node';
export type FaultKind = 'pause' | 'kill';
/** For NATS: the stream's leader or a follower, found when the fault starts. For nodes there is no leader. */
export type FaultAim = 'leader' | 'follower' | 'node';

export interface PlannedFault {
  readonly lane: FaultLane;
  /** Quiet time before this fault, after the previous one of its lane ended. */
  readonly gapMs: number;
  readonly kind: FaultKind;
  readonly aim: FaultAim;
  /** The node (node lane), or which of the followers (NATS lane, 0 or 1), or the server when no leader is known. */
  readonly pick: number;
  /** How long a pause lasts (SIGSTOP to SIGCONT), or how long a killed process stays down before its restart. */
  readonly durationMs: number;
}

export interface FaultSchedule {
  readonly seed: number;
  readonly nats: readonly PlannedFault[];
  readonly node: readonly PlannedFault[];
  /** Seeds of the clients' own generators. */
  readonly clientSeeds: readonly number[];
}

/** What one lane's faults look like; the run's length decides how many of them happen. */
export interface LaneShape {
  readonly gapMs: readonly [number, number];
  /**
   * The share of faults that follow the previous one at once (a gap of chainGapMs), while what it disturbed is still
   * catching up: a follower paused and then the leader killed leaves the cluster with a lagging member to answer.
   */
  readonly chainShare: number;
  readonly chainGapMs: readonly [number, number];
  readonly pauseMs: readonly [number, number];
  readonly downMs: readonly [number, number];
  /** The share of NATS faults aimed at the stream's leader. */
  readonly leaderShare: number;
  readonly killShare: number;
}

export const defaultLaneShape: LaneShape = {
  gapMs: [1_500, 5_000],
  chainShare: 0.3,
  chainGapMs: [100, 600],
  pauseMs: [2_000, 5_000],
  downMs: [1_000, 4_000],
  leaderShare: 0.5,
  killShare: 0.5,
};

/** More faults than any run of `durationMs` can use: a lane stops at the run's end. */
function planLane(lane: FaultLane, rng: Prng, durationMs: number, shape: LaneShape): PlannedFault[] {
  const faults: PlannedFault[] = [];
  for (let planned = 0; planned < durationMs; ) {
    const kind: FaultKind = rng.next() < shape.killShare ? 'kill' : 'pause';
    const aim: FaultAim = lane === 'node' ? 'node' : rng.next() < shape.leaderShare ? 'leader' : 'follower';
    const range = kind === 'pause' ? shape.pauseMs : shape.downMs;
    const gap = faults.length > 0 && rng.next() < shape.chainShare ? shape.chainGapMs : shape.gapMs;
    const fault: PlannedFault = {
      lane, kind, aim,
      gapMs: rng.int(gap[0], gap[1]),
      pick: rng.int(0, lane === 'node' ? 2 : 1),
      durationMs: rng.int(range[0], range[1]),
    };
    faults.push(fault);
    planned += fault.gapMs + fault.durationMs;
  }
  return faults;
}

export function planFaults(seed: number, durationMs: number, clients: number, shape: LaneShape = defaultLaneShape): FaultSchedule {
  const master = new Prng(seed);
  const natsSeed = master.int(0, 0xffffffff);
  const nodeSeed = master.int(0, 0xffffffff);
  const clientSeeds = Array.from({ length: clients }, () => master.int(0, 0xffffffff));
  return {
    seed,
    nats: planLane('nats', new Prng(natsSeed), durationMs, shape),
    node: planLane('node', new Prng(nodeSeed), durationMs, shape),
    clientSeeds,
  };
}

function formatFault(fault: PlannedFault): string {
  const target = fault.aim === 'node' ? `node ${fault.pick}` : fault.aim === 'leader' ? 'leader' : `follower ${fault.pick}`;
  const what = fault.kind === 'pause' ? `pause ${target} ${fault.durationMs} ms` : `kill ${target}, down ${fault.durationMs} ms`;
  return `+${fault.gapMs} ms ${what}`;
}

/** The schedule as printed at the start of a run and beside a violation. */
export function formatSchedule(schedule: FaultSchedule): string {
  return [
    `seed ${schedule.seed}`,
    `  nats lane: ${schedule.nats.map(formatFault).join('; ')}`,
    `  node lane: ${schedule.node.map(formatFault).join('; ')}`,
  ].join('\n');
}
