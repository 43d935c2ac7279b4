// The password-hashing worker pool: a bounded queue in two classes feeding worker threads, one job per worker at a time.
//
// argon2id is CPU-bound for tens of milliseconds; on the main thread it would stall every request.
// Each worker runs one job at a time, extra jobs wait in order, and past queueMax a job is refused at
// once (OverloadedError -> 503 + Retry-After) rather than letting latency grow without bound.
//
// A flood of bad logins must not make a legitimate one wait behind it. A verification says whose it is
// (HashTurn): one for an (account, address) pair known to be good (it succeeded lately and has not failed
// since, src/auth/limiter.ts) goes before every other, and when the queue is full it takes the place of
// the newest other one, which is refused instead. Every other verification (unknown accounts, failing
// pairs, first logins) waits in order, and one client address (within its caller's scope, as the limiter
// counts it) may hold at most hashQueueAddressShareMax of the queue with them, and one caller of POST
// /authenticate at most hashQueueCallerShareMax, whatever addresses it names: past either its next one is
// refused, whatever room the others leave. So a caller rotating ip_address cannot take the whole queue from
// the other callers and the admin API. The admin API's Basic callers (scope '') have no caller share: each is
// known by its TCP peer, which it cannot choose, and its address's share bounds it.
//
// A bcrypt verification (an imported hash) holds its worker, and its answer, until an argon2id
// verification of the current parameters would have ended (a running mean of those): an account whose
// hash is still bcrypt answers a wrong password as late as any other, so timing does not single out
// imported accounts. bcrypt slower than argon2id is not shortened: keep imported costs moderate.

import { randomBytes } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import {
  argon2HashBytes, argon2SaltBytes, hashQueueAddressShareMax, hashQueueCallerShareMax, hashRetryAfterS, hashWorkerStartFailuresMax, passwordBytesMax,
} from '../config/limits.js';
import { stacksOff } from '../domain/errors.js';
import type { HashJob, HashReply, WorkerMessage } from './hash-protocol.js';
import {
  argon2ParamsProblem,
  isBcryptHash,
  parseArgon2idHash,
  type Argon2Params,
  type Argon2idHashParts,
} from './password-hash-format.js';

export type { Argon2Params } from './password-hash-format.js';
export { isArgon2idHash, isBcryptHash, needsRehash, validatePasswordHash } from './password-hash-format.js';

/** Refused at once because the queue is full; the HTTP layer answers 503 with Retry-After. */
export class OverloadedError extends Error {
  readonly retryAfterS: number = hashRetryAfterS;
  constructor() {
    const limit = stacksOff();
    super('password hashing queue is full');
    Error.stackTraceLimit = limit;
    this.name = 'OverloadedError';
  }
}

/**
 * The one OverloadedError that the hot paths return instead of throwing (the Authenticator, then the HTTP
 * pipeline, which answers it as it answers a thrown one). A flood past a full queue sheds thousands of
 * requests a second, and a rejected promise or a throw through every layer costs each of them far more
 * than a returned value (under uWS every throw makes V8 build a message with the throw's source location,
 * as no native handler catches it). It holds nothing of any request.
 */
export const overloaded: OverloadedError = Object.freeze(new OverloadedError());

/** The job could not finish: its worker died, the pool closed, or the pool cannot start workers. */
export class HashPoolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'HashPoolError';
  }
}

/** Whose verification a job is: which class it waits in (see the top of this file). */
export interface HashTurn {
  /** The attempt's (account, address) pair succeeded lately and has not failed since. */
  readonly knownGood: boolean;
  /** The attempt's client address, as the limiter counts it (in its scope): bounds one address's share of the queue. */
  readonly address: string;
  /** The scope the address was named in (the limiter's Ticket.scope): bounds one caller's share of the queue; '' (a Basic caller of the admin API): none. */
  readonly caller: string;
}

interface PendingJob {
  readonly job: HashJob;
  readonly resolve: (value: string | boolean) => void;
  readonly reject: (err: Error) => void;
  /** Counted against this address's and this caller's shares (a job not known good): the turn. */
  readonly turn: HashTurn | undefined;
}

/** One job fewer held under key; a key that holds none has no entry. */
function giveBack(jobsBy: Map<string, number>, key: string): void {
  const held = (jobsBy.get(key) ?? 1) - 1;
  if (held === 0) jobsBy.delete(key);
  else jobsBy.set(key, held);
}

/** Weight of the newest argon2id job in the running mean that bcrypt verifications are held to. */
const argon2MsSmoothing = 0.1;

class Slot {
  worker: Worker;
  /** The current worker said it loaded; until then its death counts as a failure to start. */
  started = false;
  running: (PendingJob & { readonly id: number; readonly startedMs: number }) | null = null;
  constructor(startWorker: (slot: Slot) => Worker) {
    this.worker = startWorker(this);
  }
}

const workerUrl = new URL('./hash-worker.js', import.meta.url);

export class HashPool {
  readonly workerCount: number;
  private readonly queueMax: number;
  private readonly params: Argon2Params;
  private readonly slots: Slot[] = [];
  /** FIFO; shift() is O(n) but n <= queueMax (hundreds), cheaper than the argon2 run each entry waits for. */
  private readonly waiting: PendingJob[] = [];
  /** Known-good verifications (and the pool's own jobs): dispatched before any of `waiting`. */
  private readonly urgent: PendingJob[] = [];
  /** Jobs of `waiting` and running ones that came from it, by address; an address with none has no entry. */
  private readonly jobsByAddress = new Map<string, number>();
  private readonly addressJobsMax: number;
  /** The same by caller, for callers of POST /authenticate (scope other than ''). */
  private readonly jobsByCaller = new Map<string, number>();
  private readonly callerJobsMax: number;
  /** Running mean of an argon2id job of the pool's own params in a worker, from dispatch to answer. */
  private argon2JobMs = 0;
  private readonly hold: (ms: number, resume: () => void) => void;
  private running = 0;
  private nextJobId = 1;
  private startFailuresInARow = 0;
  private closed = false;
  private closing: Promise<void> | null = null;
  private broken: HashPoolError | null = null;
  private dummy: Promise<Argon2idHashParts> | null = null;
  private dummyMade: Argon2idHashParts | null = null;

  /** hold: how a bcrypt job's answer is held back (a timer; tests pass their own). */
  constructor(opts: { workers: number; queueMax: number; argon2: Argon2Params; hold?: (ms: number, resume: () => void) => void }) {
    if (!Number.isInteger(opts.workers) || opts.workers < 1) throw new RangeError('workers must be an integer >= 1');
    if (!Number.isInteger(opts.queueMax) || opts.queueMax < 1) throw new RangeError('queueMax must be an integer >= 1');
    // Our own hashes must pass the same limits as imported ones, or verifyPassword would refuse them.
    const problem = argon2ParamsProblem(opts.argon2);
    if (problem !== null) throw new RangeError(`argon2 ${problem}`);
    this.workerCount = opts.workers;
    this.queueMax = opts.queueMax;
    this.addressJobsMax = Math.max(1, Math.floor(opts.queueMax * hashQueueAddressShareMax));
    this.callerJobsMax = Math.max(this.addressJobsMax, Math.floor(opts.queueMax * hashQueueCallerShareMax));
    this.hold = opts.hold ?? ((ms, resume) => void setTimeout(resume, ms));
    this.params = { memoryKiB: opts.argon2.memoryKiB, iterations: opts.argon2.iterations, parallelism: opts.argon2.parallelism };
    for (let i = 0; i < opts.workers; i++) this.slots.push(new Slot((slot) => this.startWorker(slot)));
    this.dummyParts().catch(() => undefined); // made now so the first unknown-username login is not slower
  }

  /** Worker threads hashing (HASH_WORKERS). */
  get workers(): number {
    return this.slots.length;
  }

  /** Jobs waiting plus jobs running. */
  get queueDepth(): number {
    return this.waiting.length + this.urgent.length + this.running;
  }

  /** A job submitted now would be refused with OverloadedError: lets a caller shed at once, before it builds the job. */
  get full(): boolean {
    return this.queueDepth + 1 > this.queueMax;
  }

  /**
   * A verification for `turn` submitted now would be refused: the queue is full (and, for a known-good one,
   * holds no other to take the place of), or its address or its caller holds its whole share already.
   */
  refuses(turn: HashTurn | undefined): boolean {
    if (turn?.knownGood === true) return this.full && this.waiting.length === 0;
    if (this.full) return true;
    return turn !== undefined
      && ((this.jobsByAddress.get(turn.address) ?? 0) >= this.addressJobsMax
        || (turn.caller !== '' && (this.jobsByCaller.get(turn.caller) ?? 0) >= this.callerJobsMax));
  }

  /** Resolves once the dummy hash exists, i.e. a worker has started and hashed once: wait on it before serving. */
  async ready(): Promise<void> {
    await this.dummyParts();
  }

  /** A fresh argon2id PHC string of the current params with a random salt. */
  async hashPassword(password: string): Promise<string> {
    if (password.length === 0) throw new RangeError('password is empty');
    if (Buffer.byteLength(password, 'utf8') > passwordBytesMax) throw new RangeError('password is longer than passwordBytesMax');
    const value = await this.submit({
      kind: 'hashArgon2id', password, params: this.params, saltBytes: argon2SaltBytes, hashBytes: argon2HashBytes,
    });
    return value as string;
  }

  /** argon2id PHC or bcrypt; false for a wrong password and for a malformed hash (which still costs a dummy verify). turn: whose it is. */
  async verifyPassword(password: string, phc: string, turn?: HashTurn): Promise<boolean> {
    const parts = parseArgon2idHash(phc);
    if (parts !== null) return this.verifyArgon2id(password, parts, turn);
    if (isBcryptHash(phc)) return (await this.submit({ kind: 'verifyBcrypt', password, hash: phc }, { internal: false, turn })) as boolean;
    // A broken stored hash must not answer faster than a real one: that would tell it apart.
    return this.verifyDummy(password, turn);
  }

  /** Burns exactly the work of verifying against a real hash of the current params, then answers false. */
  async verifyDummy(password: string, turn?: HashTurn): Promise<false> {
    // Refuse before waiting for the dummy so an overloaded pool sheds unknown usernames as fast as known ones.
    if (this.refuses(turn)) throw new OverloadedError();
    // Once made, use the dummy without an await so the job enters the queue in call order, like a real verify.
    await this.verifyArgon2id(password, this.dummyMade ?? (await this.dummyParts()), turn);
    return false;
  }

  /** Terminates the workers; waiting and running jobs reject with HashPoolError. Idempotent. */
  close(): Promise<void> {
    if (this.closing !== null) return this.closing;
    this.closed = true;
    const err = new HashPoolError('hash pool closed');
    for (const pending of [...this.urgent.splice(0), ...this.waiting.splice(0)]) this.fail(pending, err);
    for (const slot of this.slots) {
      if (slot.running !== null) this.fail(slot.running, err);
      slot.running = null;
    }
    this.running = 0;
    this.closing = Promise.all(this.slots.map((slot) => slot.worker.terminate())).then(() => undefined);
    return this.closing;
  }

  private async verifyArgon2id(password: string, parts: Argon2idHashParts, turn: HashTurn | undefined): Promise<boolean> {
    const { memoryKiB, iterations, parallelism, salt, hash } = parts;
    const job: HashJob = { kind: 'verifyArgon2id', password, params: { memoryKiB, iterations, parallelism }, salt, hash };
    return (await this.submit(job, { internal: false, turn })) as boolean;
  }

  /** The dummy is a real hash of a random password nobody knows, made in a worker; rebuilt if making it failed. */
  private dummyParts(): Promise<Argon2idHashParts> {
    if (this.dummy === null) {
      const password = randomBytes(32).toString('base64url');
      const job: HashJob = { kind: 'hashArgon2id', password, params: this.params, saltBytes: argon2SaltBytes, hashBytes: argon2HashBytes };
      const made = this.submit(job, { internal: true }).then((phc) => {
        const parts = parseArgon2idHash(phc as string);
        if (parts === null) throw new HashPoolError('dummy hash is not a valid argon2id PHC string');
        this.dummyMade = parts;
        return parts;
      });
      made.catch(() => {
        if (this.dummy === made) this.dummy = null;
      });
      this.dummy = made;
    }
    return this.dummy;
  }

  /**
   * internal jobs (the dummy) skip the bound: they are few and the pool needs them to serve at all. A known-good
   * one that finds the queue full takes the place of the newest job that is not.
   */
  private submit(job: HashJob, opts: { internal: boolean; turn?: HashTurn | undefined } = { internal: false }): Promise<string | boolean> {
    if (this.closed) return Promise.reject(new HashPoolError('hash pool closed'));
    if (this.broken !== null) return Promise.reject(this.broken);
    const { turn } = opts;
    if (!opts.internal && this.refuses(turn)) return Promise.reject(new OverloadedError());
    const first = opts.internal || turn?.knownGood === true;
    if (turn?.knownGood === true && this.full && this.waiting.length > 0) this.fail(this.waiting.pop()!, new OverloadedError());
    return new Promise((resolve, reject) => {
      const counted = first ? undefined : turn;
      if (counted !== undefined) {
        this.jobsByAddress.set(counted.address, (this.jobsByAddress.get(counted.address) ?? 0) + 1);
        if (counted.caller !== '') this.jobsByCaller.set(counted.caller, (this.jobsByCaller.get(counted.caller) ?? 0) + 1);
      }
      (first ? this.urgent : this.waiting).push({ job, resolve, reject, turn: counted });
      this.dispatch();
    });
  }

  /** A job that ends, whatever its end: its address's and its caller's shares go back. */
  private ended(pending: PendingJob): void {
    const { turn } = pending;
    if (turn === undefined) return;
    giveBack(this.jobsByAddress, turn.address);
    if (turn.caller !== '') giveBack(this.jobsByCaller, turn.caller);
  }

  private fail(pending: PendingJob, err: Error): void {
    this.ended(pending);
    pending.reject(err);
  }

  private dispatch(): void {
    for (const slot of this.slots) {
      if (this.waiting.length + this.urgent.length === 0) return;
      if (slot.running !== null) continue;
      const pending = (this.urgent.shift() ?? this.waiting.shift()) as PendingJob;
      const id = this.nextJobId++;
      slot.running = { ...pending, id, startedMs: performance.now() };
      this.running++;
      // A busy worker keeps the process alive until its answer arrives; an idle one never does.
      slot.worker.ref();
      slot.worker.postMessage({ ...pending.job, id });
    }
  }

  /** Starts a worker for `slot`; its listeners check they still belong to the slot's current worker. */
  private startWorker(slot: Slot): Worker {
    const worker = new Worker(workerUrl);
    worker.unref();
    worker.on('message', (message: WorkerMessage) => {
      if (slot.worker !== worker) return;
      if ('ready' in message) {
        slot.started = true;
        this.startFailuresInARow = 0;
      } else {
        this.onReply(slot, message);
      }
    });
    // Without an 'error' listener a throw inside the worker would crash the main thread; 'exit' follows it.
    worker.on('error', () => undefined);
    worker.on('messageerror', () => void worker.terminate());
    worker.on('exit', () => {
      if (slot.worker === worker) this.onExit(slot);
    });
    return worker;
  }

  private onReply(slot: Slot, reply: HashReply): void {
    const running = slot.running;
    if (running === null || running.id !== reply.id) return; // not ours: a job close() already rejected
    const ms = performance.now() - running.startedMs;
    const { job } = running;
    if (job.kind === 'verifyBcrypt' && reply.ok && ms < this.argon2JobMs) {
      // Held as long as an argon2id verification takes: see the top of this file.
      this.hold(this.argon2JobMs - ms, () => {
        if (slot.running === running) this.answer(slot, running, reply);
      });
      return;
    }
    if (job.kind !== 'verifyBcrypt' && reply.ok && this.ownParams(job.params)) {
      this.argon2JobMs = this.argon2JobMs === 0 ? ms : this.argon2JobMs + (ms - this.argon2JobMs) * argon2MsSmoothing;
    }
    this.answer(slot, running, reply);
  }

  private answer(slot: Slot, running: PendingJob, reply: HashReply): void {
    this.finish(slot);
    this.ended(running);
    if (reply.ok) running.resolve(reply.value);
    else running.reject(new HashPoolError(reply.error));
    this.dispatch();
  }

  private ownParams(params: Argon2Params): boolean {
    return params.memoryKiB === this.params.memoryKiB && params.iterations === this.params.iterations && params.parallelism === this.params.parallelism;
  }

  /**
   * A worker died: fail its job (never retried: a job that kills workers must not kill them all), replace it,
   * carry on with the queue. Only workers that die before loading count toward giving up; a crash of a
   * working worker (OOM, native fault) is always repaired, so no request pattern can disable the pool.
   */
  private onExit(slot: Slot): void {
    if (this.closed) return;
    const running = slot.running;
    if (running !== null) {
      this.finish(slot);
      this.fail(running, new HashPoolError('hash worker exited during the job'));
    }
    if (!slot.started && ++this.startFailuresInARow >= hashWorkerStartFailuresMax) {
      this.breakPool();
      return;
    }
    slot.started = false;
    slot.worker = this.startWorker(slot);
    this.dispatch();
  }

  private finish(slot: Slot): void {
    slot.running = null;
    this.running--;
    slot.worker.unref();
  }

  private breakPool(): void {
    this.broken = new HashPoolError('hash workers cannot start; password hashing is unavailable');
    for (const pending of [...this.urgent.splice(0), ...this.waiting.splice(0)]) this.fail(pending, this.broken);
  }
}
