// The clients of a cluster fault run: creates racing for emails of a small pool, name updates, a strong read on another node after each acknowledged write; and the observer that polls readiness and applied sequences.
//
// Requests go over plain fetch with a short timeout, so that a paused node costs a client a few seconds, not the
// run. What an answer means for the history: 200 is ok; a 4xx is a definite refusal; a refused connection is too
// (nothing was sent); a timeout, a cut connection or a 5xx on a write is indeterminate (the write may be stored).

import { Prng } from '../../bench/lib/prng.js';
import { History, type Operation, type Outcome, type UserView } from './cluster-history.js';
import { adminEmail, adminPassword, basicAuth } from './server.js';

const adminAuthorization = basicAuth(adminEmail, adminPassword);
const userPassword = 'faults-pass-7Wq!z';

export type HttpAnswer =
  | { readonly status: number; readonly json: unknown }
  | { readonly error: 'refused' | 'timeout' | 'cut'; readonly message: string };

function causeCode(error: unknown): string | undefined {
  const cause = (error as { cause?: { code?: unknown } }).cause;
  return typeof cause?.code === 'string' ? cause.code : undefined;
}

/** One request with the admin's credentials; never throws. */
export async function call(baseUrl: string, method: string, path: string, options: { body?: unknown; headers?: Record<string, string>; timeoutMs: number; credentials?: boolean }): Promise<HttpAnswer> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.credentials !== false) headers['authorization'] = adminAuthorization;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  try {
    const res = await fetch(`${baseUrl}${path}`, {
      method, headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      signal: AbortSignal.timeout(options.timeoutMs),
    });
    const text = await res.text();
    let json: unknown;
    try { json = JSON.parse(text); } catch { json = text; }
    return { status: res.status, json };
  } catch (error) {
    if (causeCode(error) === 'ECONNREFUSED') return { error: 'refused', message: 'connection refused' };
    const name = (error as { name?: string }).name;
    if (name === 'TimeoutError' || name === 'AbortError') return { error: 'timeout', message: `no answer within ${options.timeoutMs} ms` };
    return { error: 'cut', message: `${(error as Error).message}${causeCode(error) === undefined ? '' : ` (${causeCode(error)})`}` };
  }
}

function userOf(json: unknown): UserView | undefined {
  const user = (json as { service?: { result?: { user?: UserView } } }).service?.result?.user;
  return user === undefined ? undefined : { id: user.id, email: user.email, name: user.name };
}

function errorCode(json: unknown): string {
  return (json as { service?: { error?: { code?: string } } }).service?.error?.code ?? 'unknown';
}

/** The outcome of a write: a 5xx may come after the record was stored (a lost acknowledgement), so it is not a refusal. */
function writeOutcome(answer: HttpAnswer): Outcome {
  if ('error' in answer) return answer.error === 'refused' ? { type: 'failed', status: 0, code: 'connection_refused' } : { type: 'indeterminate', why: answer.message };
  const user = answer.status === 200 ? userOf(answer.json) : undefined;
  if (user !== undefined) return { type: 'ok', user };
  if (answer.status >= 500) return { type: 'indeterminate', why: `${answer.status} ${errorCode(answer.json)}`, status: answer.status };
  return { type: 'failed', status: answer.status, code: errorCode(answer.json) };
}

/** The outcome of a read: any answer but 200 is a definite "not this time", since a read changes nothing. */
function readOutcome(answer: HttpAnswer): Outcome {
  if ('error' in answer) return answer.error === 'refused' ? { type: 'failed', status: 0, code: 'connection_refused' } : { type: 'indeterminate', why: answer.message };
  const user = answer.status === 200 ? userOf(answer.json) : undefined;
  if (user !== undefined) return { type: 'ok', user };
  return { type: 'failed', status: answer.status, code: errorCode(answer.json) };
}

// ---- the workload ----

/** How many of the newest Users count as just created, for updates that follow creates closely. */
const recentUsers = 5;
/** A client that found its node down (connection refused) waits this long, rather than spinning on it. */
const downBackOffMs = 250;

async function backOffIfDown(outcome: Outcome): Promise<void> {
  if (outcome.type === 'failed' && outcome.code === 'connection_refused') await new Promise((r) => setTimeout(r, downBackOffMs));
}

/** What the clients share: where the nodes answer now, the email pool's frontier, the Users acknowledged so far. */
export interface Workload {
  readonly history: History;
  /** The node's current address (it changes when a node is restarted). */
  baseUrl(node: number): string;
  readonly nodeCount: number;
  readonly application: string;
  readonly requestTimeoutMs: number;
  /** Clients stop starting operations at this time (history time). */
  readonly endMs: number;
}

/**
 * The email pool: address k is `user<k>@faults.test`, every fourth one with a non-ASCII letter (`josé<k>`), so
 * that NFC and NFD spellings race too. New creates aim at the frontier (one past the highest address
 * acknowledged, and a few after it), so clients and nodes race for new addresses; some aim behind it and should
 * get 409.
 */
class EmailPool {
  frontier = 0;

  /** A plain create: mostly a new address near the frontier (clients collide now and then), sometimes an old one. */
  pick(rng: Prng): number {
    // As many draws whatever the frontier, so that a client's draws stay in step with its seed.
    const behind = rng.next() < 0.1;
    const ahead = rng.int(0, 7);
    const back = rng.next();
    return behind && this.frontier > 0 ? Math.floor(back * this.frontier) : this.frontier + ahead;
  }

  /** A raced create: the frontier itself or the next, which other clients are likely after too. */
  pickContended(rng: Prng): number {
    return this.frontier + rng.int(0, 1);
  }

  acknowledged(k: number): void {
    if (k >= this.frontier) this.frontier = k + 1;
  }
}

/** One spelling of address k: the same email key, in another letter case or normal form. */
function spelling(k: number, rng: Prng): string {
  const local = k % 4 === 0 ? `jos\u00e9${k}` : `user${k}`;
  const variants = [
    `${local}@faults.test`,
    `${local.toUpperCase()}@FAULTS.TEST`,
    `${local[0]!.toUpperCase()}${local.slice(1)}@Faults.Test`,
    `${local}@faults.test`.normalize('NFD'),
    `${local.toUpperCase()}@faults.test`.normalize('NFD'),
  ];
  return rng.pick(variants);
}

export class Clients {
  private readonly pool = new EmailPool();
  /** Acknowledged Users, by id, for updates to pick from. */
  private readonly users: string[] = [];
  private names = 0;
  private races = 0;

  constructor(private readonly work: Workload) {}

  /** Runs client c until the end time; its choices come from its own seed. */
  async run(c: number, seed: number): Promise<void> {
    const rng = new Prng(seed);
    while (this.work.history.now() < this.work.endMs) {
      const roll = rng.next();
      if (roll < 0.15) await this.race(c, rng);
      else if (roll < 0.45 || this.users.length === 0) await this.create(c, rng);
      else await this.update(c, rng);
    }
  }

  /** One new address sent to two or three nodes at once, each in a spelling drawn at random. */
  private async race(c: number, rng: Prng): Promise<void> {
    const k = this.pool.pickContended(rng);
    const nodes = [0, 1, 2].slice(0, this.work.nodeCount);
    for (let i = nodes.length - 1; i > 0; i--) {
      const j = rng.int(0, i);
      [nodes[i], nodes[j]] = [nodes[j]!, nodes[i]!];
    }
    const race = this.races++;
    const count = rng.int(2, nodes.length);
    // Every choice is drawn before the requests go out: their answers come back in an order timing decides.
    const creates = nodes.slice(0, count).map((node) => ({ node, email: spelling(k, rng), readNode: this.otherNode(node, rng) }));
    await Promise.all(creates.map(({ node, email, readNode }) => this.createOn(c, node, k, email, readNode, race)));
  }

  /** The node of the strong read after a write on `node`: any other. */
  private otherNode(node: number, rng: Prng): number {
    const others = Array.from({ length: this.work.nodeCount }, (_, i) => i).filter((i) => i !== node);
    return rng.pick(others);
  }

  private async createOn(c: number, node: number, k: number, email: string, readNode: number, race?: number): Promise<void> {
    const name = `c${c}-${this.names++}`;
    const op = this.work.history.begin({ client: c, node, kind: 'create', email, name, ...(race === undefined ? {} : { race }) });
    const answer = await call(this.work.baseUrl(node), 'POST', '/users/user', {
      body: { email, password: userPassword, name, applications: [this.work.application] }, timeoutMs: this.work.requestTimeoutMs,
    });
    await this.settle(op, writeOutcome(answer), readNode);
    await backOffIfDown(op.outcome);
    if (op.outcome.type === 'ok') {
      this.pool.acknowledged(k);
      this.users.push(op.outcome.user.id);
    }
  }

  private async create(c: number, rng: Prng): Promise<void> {
    const node = rng.int(0, this.work.nodeCount - 1);
    const k = this.pool.pick(rng);
    await this.createOn(c, node, k, spelling(k, rng), this.otherNode(node, rng));
  }

  private async update(c: number, rng: Prng): Promise<void> {
    const node = rng.int(0, this.work.nodeCount - 1);
    // Half the updates go to a User created moments ago, which the chosen node may not have applied yet.
    const userId = rng.next() < 0.5 ? rng.pick(this.users.slice(-recentUsers)) : rng.pick(this.users);
    const readNode = this.otherNode(node, rng);
    const name = `u${c}-${this.names++}`;
    const op = this.work.history.begin({ client: c, node, kind: 'update', userId, name });
    const answer = await call(this.work.baseUrl(node), 'PUT', `/users/user/${userId}`, { body: { name }, timeoutMs: this.work.requestTimeoutMs });
    await this.settle(op, writeOutcome(answer), readNode);
    await backOffIfDown(op.outcome);
  }

  /** Records the write's outcome; after an acknowledged one, reads the User strongly on another node. */
  private async settle(op: Operation, outcome: Outcome, node: number): Promise<void> {
    this.work.history.finish(op, outcome);
    if (outcome.type !== 'ok') return;
    const read = this.work.history.begin({ client: op.client, node, kind: 'read', userId: outcome.user.id });
    const answer = await call(this.work.baseUrl(node), 'GET', `/users/user/${outcome.user.id}`, {
      headers: { 'x-consistency': 'strong' }, timeoutMs: this.work.requestTimeoutMs,
    });
    this.work.history.finish(read, readOutcome(answer));
    await backOffIfDown(read.outcome);
  }
}

// ---- the observer ----

/** A stretch of polls in which one node answered ready while behind the most advanced node by more than the bound. */
export interface ReadinessEpisode {
  readonly node: number;
  readonly startMs: number;
  endMs: number;
  maxLag: number;
}

/** Counters that start from 0 in each process: summed over a node's restarts. */
class RestartingCounter {
  private settled = 0;
  private current = 0;
  private owner: unknown;

  observe(owner: unknown, value: number): void {
    if (owner !== this.owner) {
      this.settled += this.current;
      this.owner = owner;
    }
    this.current = value;
  }

  get total(): number {
    return this.settled + this.current;
  }
}

function metric(text: string, name: string): number | undefined {
  const match = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\d+(?:\\.\\d+)?)`, 'm').exec(text);
  return match === null ? undefined : Number(match[1]);
}

/**
 * Polls every node's /health/ready and /metrics (its applied stream sequence, its write conflicts and refusals)
 * and notes every stretch in which a node said ready while more than `lagMax` stream messages behind the most
 * advanced node's applied sequence.
 */
export class Observer {
  readonly episodes: ReadinessEpisode[] = [];
  readonly conflicts: RestartingCounter[];
  readonly refused: RestartingCounter[];
  /** Samples taken, and those in which the node answered ready. */
  samples = 0;
  readySamples = 0;
  private readonly open: (ReadinessEpisode | undefined)[];
  private stopped = false;

  constructor(
    private readonly history: History,
    private readonly nodeCount: number,
    /** The node's current address and process (a new process after a restart), or undefined while it is down or paused. */
    private readonly target: (node: number) => { baseUrl: string; process: unknown } | undefined,
    private readonly lagMax: number,
    private readonly intervalMs: number,
  ) {
    this.conflicts = Array.from({ length: nodeCount }, () => new RestartingCounter());
    this.refused = Array.from({ length: nodeCount }, () => new RestartingCounter());
    this.open = Array.from({ length: nodeCount }, () => undefined);
  }

  async run(): Promise<void> {
    while (!this.stopped) {
      await this.poll();
      await new Promise((r) => setTimeout(r, this.intervalMs));
    }
  }

  stop(): void {
    this.stopped = true;
  }

  private async sample(node: number): Promise<{ seq: number; ready: boolean } | undefined> {
    const target = this.target(node);
    if (target === undefined) return undefined;
    const timeoutMs = 1_000;
    const [metrics, ready] = await Promise.all([
      call(target.baseUrl, 'GET', '/metrics', { timeoutMs }),
      call(target.baseUrl, 'GET', '/health/ready', { timeoutMs, credentials: false }),
    ]);
    if ('error' in metrics || 'error' in ready || metrics.status !== 200 || typeof metrics.json !== 'string') return undefined;
    const seq = metric(metrics.json, 'authd_log_last_seq');
    if (seq === undefined) return undefined;
    this.conflicts[node]!.observe(target.process, metric(metrics.json, 'authd_cluster_write_conflicts_total') ?? 0);
    this.refused[node]!.observe(target.process, metric(metrics.json, 'authd_cluster_writes_refused_total') ?? 0);
    return { seq, ready: ready.status === 200 };
  }

  private async poll(): Promise<void> {
    const at = this.history.now();
    const samples = await Promise.all(Array.from({ length: this.nodeCount }, (_, node) => this.sample(node)));
    const highest = Math.max(0, ...samples.map((s) => s?.seq ?? 0));
    for (const [node, s] of samples.entries()) {
      if (s === undefined) continue;
      this.samples += 1;
      if (s.ready) this.readySamples += 1;
      const lag = highest - s.seq;
      const episode = this.open[node];
      if (s.ready && lag > this.lagMax) {
        if (episode === undefined) this.open[node] = { node, startMs: at, endMs: at, maxLag: lag };
        else {
          episode.endMs = at;
          episode.maxLag = Math.max(episode.maxLag, lag);
        }
      } else if (episode !== undefined) {
        this.episodes.push(episode);
        this.open[node] = undefined;
      }
    }
  }

  /** Every episode, the ones still open included. */
  allEpisodes(): ReadinessEpisode[] {
    return [...this.episodes, ...this.open.filter((e): e is ReadinessEpisode => e !== undefined)];
  }
}
