// The write path of cluster mode: decide against this node's state, publish to the stream expecting the sequence decided against, and answer once the stream stored it and this node applied it.
//
// No leader of our own: JetStream's expected last sequence is the arbiter. A node that decided against a state
// another node has since moved past gets a wrong-last-sequence answer, waits until it has applied what the other
// wrote, and decides again. Decisions waiting together are decided one after another (each sees the ones before
// it) and go in one message: group commit, as the embedded log does with its fsync.

import { randomBytes } from 'node:crypto';
import type { LogRecord } from '../domain/entities.js';
import { DomainError } from '../domain/errors.js';
import { clusterCommitAttemptsMax, clusterCommitBatchMax, unavailableRetryAfterS } from '../config/limits.js';
import type { Commits, Identity } from '../service/committer.js';
import { undoOps } from '../service/undo.js';
import type { MicrosClock } from '../store/clock.js';
import type { DecideContext, Decision } from '../store/decide.js';
import type { State } from '../store/state.js';
import { encodeRecord } from '../persist/codec.js';
import type { Replica } from './replica.js';
import { StreamUnavailableError, WrongLastSequenceError } from './stream-log.js';

/** What the committer needs of the stream (src/cluster/stream-log.ts, sealed by ClusterNode.writer). */
export interface StreamWriter {
  /** Appends the record frames, back to back, as one message right after expectedLastSeq; its sequence. */
  publish(frames: readonly Uint8Array[], expectedLastSeq: number, msgId: string): Promise<number>;
  /** The largest message the stream takes, in record bytes. */
  readonly maxPayloadBytes: number;
  /** The stream's last sequence now. */
  lastSeq(): Promise<number>;
}

type Decide = (state: State, ctx: DecideContext) => Decision<unknown>;

interface Waiting {
  readonly decide: Decide;
  readonly resolve: (result: unknown) => void;
  readonly reject: (err: unknown) => void;
}

type Outcome = { readonly ok: true; readonly result: unknown } | { readonly ok: false; readonly error: unknown };

export class ClusterCommitter implements Commits {
  readonly #queue: Waiting[] = [];
  #running = false;
  /** Message ids: this process's random prefix and a counter, unique across nodes and restarts. */
  readonly #idPrefix = randomBytes(9).toString('base64url');
  #messages = 0;
  /** Writes refused since start because the stream was unavailable or kept moving (metrics). */
  refused = 0;
  /** Batches decided again after another node wrote first (metrics). */
  conflicts = 0;

  constructor(
    private readonly state: State,
    private readonly replica: Replica,
    private readonly stream: StreamWriter,
    private readonly clock: MicrosClock,
    private readonly identity: Identity,
  ) {}

  commit<T>(decide: (state: State, ctx: DecideContext) => Decision<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ decide, resolve: resolve as (result: unknown) => void, reject });
      if (!this.#running) void this.#drain();
    });
  }

  async #drain(): Promise<void> {
    this.#running = true;
    try {
      while (this.#queue.length > 0) await this.#commitBatch(this.#queue.splice(0, clusterCommitBatchMax));
    } finally {
      this.#running = false;
    }
  }

  async #commitBatch(waiting: readonly Waiting[]): Promise<void> {
    let failure: unknown;
    let batch = waiting;
    for (let attempt = 1; attempt <= clusterCommitAttemptsMax; attempt++) {
      const base = this.state.lastSeq;
      const { frames, outcomes } = this.#decideAll(batch, base + 1);
      if (outcomes.length < batch.length) {
        // The message is full: the rest go first in the next one.
        this.#queue.unshift(...batch.slice(outcomes.length));
        batch = batch.slice(0, outcomes.length);
      }
      if (frames.length === 0) return settle(batch, outcomes);
      const msgId = `${this.#idPrefix}-${++this.#messages}`;
      try {
        const seq = await this.stream.publish(frames, base, msgId);
        await this.replica.applied(seq);
        return settle(batch, outcomes);
      } catch (err) {
        failure = err;
        if (!(err instanceof WrongLastSequenceError)) break;
        // Another node wrote first: decide again once this node has applied what the stream now holds.
        this.conflicts++;
        try {
          await this.replica.applied(await this.stream.lastSeq());
        } catch (infoErr) {
          failure = infoErr;
          break;
        }
      }
    }
    this.refused += batch.length;
    const why = failure instanceof StreamUnavailableError ? 'the cluster log is unavailable' : 'the cluster log kept moving';
    const refusal = new DomainError('storage_unavailable', `The service cannot make changes durable right now (${why}); retry later.`, { retryAfterS: unavailableRetryAfterS });
    for (const waiting of batch) waiting.reject(refusal);
  }

  /**
   * Each decision against the state as the ones before it left it, then the state put back as it was: the records
   * go to the stream, and come back into the state only through it, in the stream's order, like everyone else's.
   */
  #decideAll(batch: readonly Waiting[], seq: number): { frames: Buffer[]; outcomes: Outcome[] } {
    const frames: Buffer[] = [];
    const undos: LogRecord[] = [];
    const outcomes: Outcome[] = [];
    const base = this.state.lastSeq;
    const bytesMax = this.stream.maxPayloadBytes;
    let bytes = 0;
    for (const waiting of batch) {
      const now = this.clock.now();
      const ctx: DecideContext = { now, newId: this.identity.newId, newApikeyId: this.identity.newApikeyId, newNonce: this.identity.newNonce };
      let decision: Decision<unknown>;
      try {
        decision = waiting.decide(this.state, ctx);
      } catch (error) {
        outcomes.push({ ok: false, error });
        continue;
      }
      if (decision.ops.length === 0) {
        outcomes.push({ ok: true, result: decision.result });
        continue;
      }
      const record: LogRecord = { seq, at: now, ops: decision.ops };
      let frame: Buffer;
      try {
        frame = encodeRecord(record);
      } catch (error) {
        outcomes.push({ ok: false, error });
        continue;
      }
      if (frame.length > bytesMax) {
        outcomes.push({ ok: false, error: new DomainError('payload_too_large', `The change takes ${frame.length} bytes, more than the cluster's NATS servers take in one message (max_payload ${bytesMax}).`) });
        continue;
      }
      // Decided but not taken: it is decided again, first in the next message.
      if (bytes + frame.length > bytesMax) break;
      bytes += frame.length;
      outcomes.push({ ok: true, result: decision.result });
      undos.push({ seq: base, at: 0, ops: undoOps(this.state, decision.ops) });
      this.state.apply(record);
      frames.push(frame);
    }
    for (let i = undos.length - 1; i >= 0; i--) this.state.apply(undos[i]!);
    return { frames, outcomes };
  }
}

function settle(batch: readonly Waiting[], outcomes: readonly Outcome[]): void {
  for (let i = 0; i < batch.length; i++) {
    const outcome = outcomes[i]!;
    if (outcome.ok) batch[i]!.resolve(outcome.result);
    else batch[i]!.reject(outcome.error);
  }
}
