// One Jepsen-style run against a real cluster: three nats-servers (stream at R3), three authd nodes, clients, a seeded schedule of pauses and kills, and the invariants checked at the end.
//
// The run: start everything and wait until every node is ready; clients (cluster-fault-clients.ts) work for
// `durationMs` while two fault lanes (cluster-fault-schedule.ts) pause (SIGSTOP, SIGCONT) or kill (SIGKILL,
// restart on the same data) one NATS server and one authd node at a time; then, with every process running and
// every node ready, a strong listing on every node is checked against the history (cluster-history.ts).
// AUTHD_TEST_MAIN_JS runs the nodes from another build (test/helpers/server.ts).

import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { startNatsCluster, until, type NatsCluster } from './nats-cluster.js';
import { newServerDirs, ServerProcess } from './server.js';
import { baseApplicationId } from './http-fixtures.js';
import { call, Clients, Observer, type ReadinessEpisode } from './cluster-fault-clients.js';
import { defaultLaneShape, formatSchedule, planFaults, type FaultAim, type FaultKind, type FaultLane, type FaultSchedule, type LaneShape, type PlannedFault } from './cluster-fault-schedule.js';
import {
  checkHistory, countOperations, formatOperation, formatViolation, History, invariants,
  type CheckResult, type FinalStates, type Invariant, type Operation, type UserView,
} from './cluster-history.js';

const nodeCount = 3;
const natsCount = 3;
/** A node said ready while more stream messages than this behind the most advanced node: a readiness lie, if it lasts. */
export const readinessLagMax = 50;
/**
 * How long a node may stay ready while behind before it counts as a lie: longer than the longest pause, since a node
 * whose NATS server is paused cannot learn how far behind it is until the server comes back.
 */
export const readinessLieMs = 6_000;
const observeIntervalMs = 500;
/** After the faults, every node must be ready within this; a node that is not is a finding of its own. */
const finalReadyTimeoutMs = 60_000;
const finalReadTimeoutMs = 30_000;
/** The nodes' final listings are read again until they agree, so that a write still being retried can land. */
const finalReadRounds = 5;
const finalReadPauseMs = 2_000;
const restartAttemptsMax = 3;
const leaderLookupTimeoutMs = 1_000;

export interface FaultRunOptions {
  readonly seed: number;
  /** How long clients start operations. */
  readonly durationMs: number;
  readonly clients?: number;
  /** Per request: short, so a paused node stalls a client for no longer than this. */
  readonly requestTimeoutMs?: number;
  readonly shape?: LaneShape;
  readonly log?: (line: string) => void;
  /** When set, a run that finds a violation writes its history and every process's log below it. */
  readonly keepDir?: string;
}

export interface FaultRecord {
  readonly lane: FaultLane;
  readonly kind: FaultKind;
  /** What the fault hit: 'unknown' when the NATS lane aimed at the leader or a follower and no leader was known. */
  readonly aim: FaultAim | 'unknown';
  readonly target: number;
  readonly startMs: number;
  endMs: number;
  /** A killed node: from its restart to listening, and to its first ready answer. */
  restartMs?: number;
  readyMs?: number;
}

export interface FaultRunReport {
  readonly seed: number;
  readonly schedule: FaultSchedule;
  readonly operations: readonly Operation[];
  readonly faults: readonly FaultRecord[];
  readonly check: CheckResult;
  /** Wrong-last-sequence conflicts and writes refused 503, summed over the nodes (and their restarts) from /metrics. */
  readonly conflicts: number;
  readonly writesRefused: number;
  readonly readiness: { readonly samples: number; readonly readySamples: number; readonly episodes: readonly ReadinessEpisode[]; readonly lies: readonly ReadinessEpisode[] };
  /** Lines "Users sharing one email key" that the nodes logged when they started. */
  readonly sharedEmailWarnings: number;
  /** What kept the run from its checks (a node never ready again, a final listing never given). */
  readonly problems: readonly string[];
  readonly elapsedMs: number;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

/** The processes of one run and what the harness knows of them. */
class FaultCluster {
  readonly nodes: ServerProcess[] = [];
  /** Every node process started in this run, restarts included, for their logs. */
  readonly processes: ServerProcess[] = [];
  readonly nodeUp: boolean[] = Array.from({ length: nodeCount }, () => false);
  readonly natsUp: boolean[] = Array.from({ length: natsCount }, () => true);
  readonly stream = `faults${randomBytes(3).toString('hex')}`;

  private constructor(readonly nats: NatsCluster) {}

  static async start(): Promise<FaultCluster> {
    const cluster = new FaultCluster(await startNatsCluster({ servers: natsCount }));
    try {
      for (let i = 0; i < nodeCount; i++) await cluster.startNode(i);
      return cluster;
    } catch (error) {
      await cluster.dispose();
      throw error;
    }
  }

  private async startNode(i: number): Promise<void> {
    const first = this.nodes[0];
    const dirs = first === undefined ? newServerDirs() : { ...newServerDirs(), keyFile: first.dirs.keyFile };
    const node = await ServerProcess.start({
      dirs,
      env: { CLUSTER_NATS_SERVERS: this.nats.urls.join(','), CLUSTER_STREAM: this.stream, CLUSTER_REPLICAS: String(natsCount), NODE_ID: `node${i}` },
    });
    this.nodes[i] = node;
    this.processes.push(node);
    this.nodeUp[i] = true;
  }

  /** A killed node again on its data directory; a start that times out (catching up during a NATS fault) is tried again. */
  async restartNode(i: number): Promise<void> {
    const dead = this.nodes[i]!;
    for (let attempt = 1; ; attempt++) {
      try {
        const node = await dead.restart();
        this.nodes[i] = node;
        this.processes.push(node);
        this.nodeUp[i] = true;
        return;
      } catch (error) {
        if (attempt >= restartAttemptsMax) throw error;
      }
    }
  }

  async restartNats(i: number): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.nats.restart(i);
        this.natsUp[i] = true;
        return;
      } catch (error) {
        if (attempt >= restartAttemptsMax) throw error;
        await this.nats.kill(i);
      }
    }
  }

  /** The stream leader's server index, asked of a server that is running; undefined when none answers or none leads. */
  async streamLeader(): Promise<number | undefined> {
    const servers = this.nats.urls.filter((_, i) => this.natsUp[i]);
    let nc;
    try {
      nc = await connect({ servers, timeout: leaderLookupTimeoutMs, maxReconnectAttempts: 0 });
      const jsm = await jetstreamManager(nc, { timeout: leaderLookupTimeoutMs, checkAPI: false });
      const leader = (await jsm.streams.info(this.stream)).cluster?.leader;
      return leader === undefined || leader === '' ? undefined : this.nats.indexOf(leader);
    } catch {
      return undefined;
    } finally {
      await nc?.close().catch(() => undefined);
    }
  }

  async allReady(): Promise<boolean> {
    const answers = await Promise.all(this.nodes.map((node) => call(node.baseUrl, 'GET', '/health/ready', { timeoutMs: 2_000, credentials: false })));
    return answers.every((a) => 'status' in a && a.status === 200);
  }

  async waitReady(node: number, timeoutMs: number): Promise<boolean> {
    const deadline = performance.now() + timeoutMs;
    while (performance.now() < deadline) {
      const answer = await call(this.nodes[node]!.baseUrl, 'GET', '/health/ready', { timeoutMs: 2_000, credentials: false });
      if ('status' in answer && answer.status === 200) return true;
      await sleep(100);
    }
    return false;
  }

  /** Writes the history and every process's log below dir, for a violation's post-mortem. */
  keep(dir: string, operations: readonly Operation[]): void {
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'history.txt'), operations.map(formatOperation).join('\n') + '\n');
    for (const [k, proc] of this.processes.entries()) writeFileSync(join(dir, `authd-${k}.log`), proc.output());
    for (const [i, file] of this.nats.logFiles.entries()) {
      try { writeFileSync(join(dir, `nats-${i}.log`), readFileSync(file)); } catch { /* the log is gone */ }
    }
  }

  async dispose(): Promise<void> {
    for (const node of this.nodes) await node?.dispose();
    await this.nats.stop();
  }
}

/** Sleeps `gapMs` or until the end; false when the end came first. */
async function quietUntil(history: History, gapMs: number, endMs: number): Promise<boolean> {
  const wake = Math.min(history.now() + gapMs, endMs);
  await sleep(wake - history.now());
  return history.now() < endMs;
}

async function natsFault(cluster: FaultCluster, planned: PlannedFault, history: History): Promise<FaultRecord> {
  const leader = await cluster.streamLeader();
  let target: number;
  let aim: FaultRecord['aim'] = planned.aim;
  if (leader === undefined) {
    target = planned.pick % natsCount;
    aim = 'unknown';
  } else if (planned.aim === 'leader') {
    target = leader;
  } else {
    const followers = Array.from({ length: natsCount }, (_, i) => i).filter((i) => i !== leader);
    target = followers[planned.pick % followers.length]!;
  }
  const record: FaultRecord = { lane: 'nats', kind: planned.kind, aim, target, startMs: history.now(), endMs: Infinity };
  cluster.natsUp[target] = false;
  if (planned.kind === 'pause') {
    cluster.nats.pause(target);
    await sleep(planned.durationMs);
    cluster.nats.resume(target);
    cluster.natsUp[target] = true;
  } else {
    await cluster.nats.kill(target);
    await sleep(planned.durationMs);
    await cluster.restartNats(target);
  }
  record.endMs = history.now();
  return record;
}

async function nodeFault(cluster: FaultCluster, planned: PlannedFault, history: History): Promise<FaultRecord> {
  const target = planned.pick % nodeCount;
  const record: FaultRecord = { lane: 'node', kind: planned.kind, aim: 'node', target, startMs: history.now(), endMs: Infinity };
  const node = cluster.nodes[target]!;
  cluster.nodeUp[target] = false;
  if (planned.kind === 'pause') {
    node.pause();
    await sleep(planned.durationMs);
    node.resume();
    cluster.nodeUp[target] = true;
  } else {
    await node.kill();
    await sleep(planned.durationMs);
    const restarting = history.now();
    await cluster.restartNode(target);
    record.restartMs = history.now() - restarting;
    // The next fault of this lane waits for the node to be ready, so that no two nodes are out at once.
    if (await cluster.waitReady(target, finalReadyTimeoutMs)) record.readyMs = history.now() - restarting;
  }
  record.endMs = history.now();
  return record;
}

async function runLane(plan: readonly PlannedFault[], history: History, endMs: number, fault: (planned: PlannedFault) => Promise<FaultRecord>, out: FaultRecord[]): Promise<void> {
  for (const planned of plan) {
    if (!(await quietUntil(history, planned.gapMs, endMs))) return;
    out.push(await fault(planned));
  }
}

function parseUsers(json: unknown): Map<string, UserView> | undefined {
  const users = (json as { service?: { result?: { users?: UserView[] } } }).service?.result?.users;
  if (!Array.isArray(users)) return undefined;
  return new Map(users.map((u) => [u.id, { id: u.id, email: u.email, name: u.name }]));
}

/** A node's whole User list, read strongly; retried while the node cannot give a strong read yet. */
async function finalListing(cluster: FaultCluster, node: number): Promise<Map<string, UserView> | undefined> {
  const deadline = performance.now() + finalReadTimeoutMs;
  while (performance.now() < deadline) {
    const answer = await call(cluster.nodes[node]!.baseUrl, 'GET', '/users', { headers: { 'x-consistency': 'strong' }, timeoutMs: 10_000 });
    const users = 'status' in answer && answer.status === 200 ? parseUsers(answer.json) : undefined;
    if (users !== undefined) return users;
    await sleep(250);
  }
  return undefined;
}

function sameStates(states: FinalStates): boolean {
  const [first, ...rest] = states;
  if (first === undefined) return false;
  return rest.every((state) => state !== undefined && state.size === first.size &&
    [...first].every(([id, user]) => state.get(id)?.name === user.name && state.get(id)?.email === user.email));
}

async function finalStates(cluster: FaultCluster): Promise<FinalStates> {
  let states: FinalStates = [];
  for (let round = 0; round < finalReadRounds; round++) {
    states = await Promise.all(cluster.nodes.map((_, node) => finalListing(cluster, node)));
    if (sameStates(states)) return states;
    await sleep(finalReadPauseMs);
  }
  return states;
}

/** One run: start, work under faults, check. Never throws for a violation: the report holds them. */
export async function runFaultRun(options: FaultRunOptions): Promise<FaultRunReport> {
  const { seed, durationMs, clients: clientCount = 8, requestTimeoutMs = 4_000, shape = defaultLaneShape, log = () => undefined } = options;
  const started = performance.now();
  const schedule = planFaults(seed, durationMs, clientCount, shape);
  log(`fault run ${formatSchedule(schedule)}`);
  const cluster = await FaultCluster.start();
  try {
    await until(() => cluster.allReady(), finalReadyTimeoutMs, 'every node ready before the run');
    const application = await baseApplicationId(cluster.nodes[0]!.api());
    const history = new History();
    const endMs = history.now() + durationMs;
    const clients = new Clients({
      history, application, requestTimeoutMs, endMs, nodeCount,
      baseUrl: (node) => cluster.nodes[node]!.baseUrl,
    });
    const observer = new Observer(history, nodeCount, (node) => (cluster.nodeUp[node] ? { baseUrl: cluster.nodes[node]!.baseUrl, process: cluster.nodes[node] } : undefined), readinessLagMax, observeIntervalMs);
    const observing = observer.run();
    const faults: FaultRecord[] = [];
    // Settled, not all(): a lane that fails to restart its process ends the run only once the others stopped too.
    const settled = await Promise.allSettled([
      ...schedule.clientSeeds.map((clientSeed, c) => clients.run(c, clientSeed)),
      runLane(schedule.nats, history, endMs, (planned) => natsFault(cluster, planned, history), faults),
      runLane(schedule.node, history, endMs, (planned) => nodeFault(cluster, planned, history), faults),
    ]);
    const failure = settled.find((result): result is PromiseRejectedResult => result.status === 'rejected');
    if (failure !== undefined) {
      observer.stop();
      await observing;
      throw failure.reason;
    }

    const problems: string[] = [];
    const readyBy = performance.now() + finalReadyTimeoutMs;
    let ready = false;
    while (!ready && performance.now() < readyBy) {
      ready = await cluster.allReady();
      if (!ready) await sleep(250);
    }
    if (!ready) problems.push(`not every node was ready within ${finalReadyTimeoutMs} ms after the faults stopped`);
    observer.stop();
    await observing;
    const finals = await finalStates(cluster);
    const check = checkHistory(history.operations, finals);
    for (const [node, state] of finals.entries()) if (state === undefined) problems.push(`node ${node} gave no final strong listing within ${finalReadTimeoutMs} ms`);
    const episodes = observer.allEpisodes();
    const report: FaultRunReport = {
      seed, schedule, operations: history.operations, faults: faults.sort((a, b) => a.startMs - b.startMs), check,
      conflicts: observer.conflicts.reduce((sum, c) => sum + c.total, 0),
      writesRefused: observer.refused.reduce((sum, c) => sum + c.total, 0),
      readiness: { samples: observer.samples, readySamples: observer.readySamples, episodes, lies: episodes.filter((e) => e.endMs - e.startMs >= readinessLieMs) },
      sharedEmailWarnings: cluster.processes.reduce((sum, proc) => sum + proc.logLines().filter((l) => String(l['msg']).startsWith('Users sharing one email key')).length, 0),
      problems,
      elapsedMs: performance.now() - started,
    };
    if (options.keepDir !== undefined && (check.violations.length > 0 || problems.length > 0)) cluster.keep(join(options.keepDir, `seed-${seed}`), history.operations);
    return report;
  } finally {
    await cluster.dispose();
  }
}

// ---- figures ----

/** Violations by invariant, every invariant named (0 included). */
export function violationsByInvariant(report: FaultRunReport): Map<Invariant, number> {
  const counts = new Map<Invariant, number>(invariants.map((inv) => [inv, 0]));
  for (const v of report.check.violations) counts.set(v.invariant, counts.get(v.invariant)! + 1);
  return counts;
}

export function faultCounts(faults: readonly FaultRecord[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const f of faults) {
    const key = f.lane === 'nats' ? `nats ${f.kind} ${f.aim}` : `node ${f.kind}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return counts;
}

function formatCounts(counts: ReadonlyMap<string, number>): string {
  return [...counts].sort(([a], [b]) => a.localeCompare(b)).map(([key, n]) => `${key} ${n}`).join(', ');
}

function statusCount(operations: readonly Operation[], status: number): number {
  return operations.filter((op) => (op.outcome.type === 'failed' || op.outcome.type === 'indeterminate') && op.outcome.status === status).length;
}

/** The run's figures, and each violation with its operations, the seed and the schedule. */
export function formatRunReport(report: FaultRunReport): string {
  const restarts = report.faults.filter((f) => f.restartMs !== undefined);
  const slowestReady = Math.max(0, ...restarts.map((f) => f.readyMs ?? Infinity));
  const lines = [
    `seed ${report.seed}: ${report.operations.length} operations in ${(report.elapsedMs / 1000).toFixed(1)} s, ${report.faults.length} faults`,
    `  operations: ${formatCounts(countOperations(report.operations))}`,
    `  faults: ${formatCounts(faultCounts(report.faults))}`,
    `  answers 409: ${statusCount(report.operations, 409)}, 503: ${statusCount(report.operations, 503)}; write conflicts ${report.conflicts}, writes refused ${report.writesRefused} (nodes' /metrics)`,
    `  node restarts: ${restarts.length}, slowest to ready ${Number.isFinite(slowestReady) ? `${slowestReady.toFixed(0)} ms` : 'never'}`,
    `  readiness: ${report.readiness.readySamples}/${report.readiness.samples} samples ready; ready while more than ${readinessLagMax} behind: ${report.readiness.episodes.length} stretches, ${report.readiness.lies.length} of ${readinessLieMs} ms or more` +
      report.readiness.episodes.map((e) => `\n    node ${e.node} ${(e.startMs / 1000).toFixed(1)}-${(e.endMs / 1000).toFixed(1)} s, up to ${e.maxLag} behind`).join(''),
    `  stale refusals (update 404 after its User's create was acknowledged): ${report.check.staleRefusals.length}`,
    `  logged "Users sharing one email key": ${report.sharedEmailWarnings}`,
    `  violations: ${formatCounts(new Map([...violationsByInvariant(report)].map(([inv, n]) => [`${invariants.indexOf(inv) + 1}.${inv}`, n])))}`,
  ];
  for (const problem of report.problems) lines.push(`  PROBLEM: ${problem}`);
  if (report.check.violations.length > 0) {
    lines.push(`  VIOLATIONS (seed ${report.seed}, replay with --seed ${report.seed}):`);
    for (const v of report.check.violations.slice(0, 20)) lines.push(formatViolation(v).replace(/^/gm, '    '));
    if (report.check.violations.length > 20) lines.push(`    ... and ${report.check.violations.length - 20} more`);
    lines.push(formatSchedule(report.schedule).replace(/^/gm, '    '));
    lines.push(`    faults as run: ${report.faults.map((f) => `${f.lane} ${f.kind} ${f.aim} ${f.target} ${(f.startMs / 1000).toFixed(1)}-${(f.endMs / 1000).toFixed(1)} s`).join('; ')}`);
  }
  return lines.join('\n');
}
