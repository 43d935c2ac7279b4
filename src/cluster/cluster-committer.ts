// The write path of cluster mode: decide against this node's state, publish to the stream expecting the sequence decided against, and answer once this node has applied its own message as valid.
//
// No leader of our own. The records of a message carry the sequence they were decided for (the one right after the
// state's last), and every node applies them only there (replica.ts): JetStream's expected last sequence keeps the
// others out, and a message it lets through elsewhere anyway is void everywhere. So a writer answers only once its
// reader has applied the very message it published, at the sequence it was decided for; if its own landed elsewhere
// (void) it decides again. A node that decided against a state another node has since moved past gets a
// wrong-last-sequence answer naming the stream's last sequence, waits until it has applied that, and decides again,
// unless a message of its own that it heard no acknowledgement for turns out applied: then that one is the answer.
// Where the leader acknowledged its message and its reader holds another, it answers 503, never deciding again. A
// refusal that rests on what this node may not have seen yet (404, 409, an unknown reference) is given only after
// catching up with the stream's leader once (a barrier). Decisions waiting together are decided one after another
// (each sees the ones before it) and go in one message: group commit, as the embedded log does with its fsync.

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

/** A message sealed for the stream, and the id (sealedMessageId) by which the replica tells it from any other. */
export interface SealedMessage {
  readonly payload: Uint8Array;
  readonly id: Uint8Array;
}

/** What the committer needs of the stream (src/cluster/stream-log.ts, sealed by ClusterNode.writer). */
export interface StreamWriter {
  /** The record frames, back to back, as one message; sealed once, so that every retry sends the same bytes. */
  seal(frames: readonly Uint8Array[]): SealedMessage;
  /** Appends the message right after expectedLastSeq: the sequence JetStream stored it at (once a quorum did). */
  publish(message: SealedMessage, expectedLastSeq: number, msgId: string): Promise<number>;
  /** The largest message the stream takes, in record bytes. */
  readonly maxPayloadBytes: number;
  /** A sequence the stream's leader gave after this call began: every write acknowledged before it is at or below. */
  barrier(): Promise<number>;
}

/** A refusal decided on this node's state that a node behind the others could give wrongly: checked again once caught up. */
function restsOnState(outcome: Outcome): boolean {
  if (outcome.ok || !(outcome.error instanceof DomainError)) return false;
  const { status, code } = outcome.error;
  return status === 404 || status === 409 || code === 'unknown_reference';
}

type Decide = (state: State, ctx: DecideContext) => Decision<unknown>;

interface Waiting {
  readonly decide: Decide;
  readonly resolve: (result: unknown) => void;
  readonly reject: (err: unknown) => void;
}

type Outcome = { readonly ok: true; readonly result: unknown } | { readonly ok: false; readonly error: unknown };

/** A message this batch published whose fate is not known yet: decided for seq, with the outcomes it stands for. */
interface Published {
  readonly seq: number;
  readonly id: Uint8Array;
  readonly outcomes: readonly Outcome[];
}

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
    /** Told when the stream's leader stored this node's message at a sequence where this node's reader holds another. */
    private readonly onDiverged: (seq: number) => void = () => undefined,
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
    let caughtUp = false;
    /** Messages of earlier attempts that may still turn out applied: an acknowledgement lost, a retry refused. */
    let published: Published[] = [];
    for (let attempt = 1; attempt <= clusterCommitAttemptsMax; attempt++) {
      const landed = this.#landed(published);
      if (landed === 'forgotten') {
        failure = new StreamUnavailableError('this node no longer remembers what became of its earlier message');
        break;
      }
      if (landed !== undefined) return settle(batch, landed.outcomes);
      published = published.filter((p) => p.seq > this.state.lastSeq);
      const base = this.state.lastSeq;
      const { frames, outcomes } = this.#decideAll(batch, base + 1);
      if (outcomes.length < batch.length) {
        // An earlier message of this batch that may still land holds the rest too: they cannot go apart now.
        if (published.length > 0) {
          failure = new StreamUnavailableError('an earlier message of this batch is still unaccounted for');
          break;
        }
        // The message is full: the rest go first in the next one.
        this.#queue.unshift(...batch.slice(outcomes.length));
        batch = batch.slice(0, outcomes.length);
      }
      try {
        if (!caughtUp && outcomes.some(restsOnState)) {
          // Another node may have written what this one has not applied yet: catch up with the leader, decide again.
          caughtUp = true;
          await this.replica.applied(await this.stream.barrier());
          continue;
        }
        if (frames.length === 0) return settle(batch, outcomes);
        const message = this.stream.seal(frames);
        published.push({ seq: base + 1, id: message.id, outcomes });
        const seq = await this.stream.publish(message, base, `${this.#idPrefix}-${++this.#messages}`);
        await this.replica.applied(seq);
        // Elsewhere than base + 1 the records are void; there, the leader stored this very message.
        if (seq !== base + 1) {
          this.conflicts++;
          continue;
        }
        const fate = this.replica.fateOf(seq, message.id);
        if (fate === 'applied') return settle(batch, outcomes);
        if (fate === 'other' || fate === 'unknown') {
          // The leader stored this message at seq, and this node's reader holds another there (a stream replica that
          // diverged) or no longer remembers: it may have taken effect, so it is neither answered nor decided again.
          failure = new StreamUnavailableError(`this node's reader does not hold message ${seq} as the stream's leader stored it`);
          if (fate === 'other') this.onDiverged(seq);
          break;
        }
        this.conflicts++;
      } catch (err) {
        failure = err;
        if (!(err instanceof WrongLastSequenceError)) break;
        // Another node wrote first: decide again once this node has applied what the leader says the stream holds.
        this.conflicts++;
        try {
          await this.replica.applied(err.lastSeq ?? await this.stream.barrier());
        } catch (barrierErr) {
          failure = barrierErr;
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
   * The earlier message of this batch that was applied after all (its outcomes are the answers); 'forgotten' when one
   * was decided for a sequence too old to remember; undefined when none was applied.
   */
  #landed(published: readonly Published[]): Published | 'forgotten' | undefined {
    for (const p of published) {
      if (p.seq > this.state.lastSeq) continue;
      const fate = this.replica.fateOf(p.seq, p.id);
      if (fate === 'applied') return p;
      if (fate === 'unknown') return 'forgotten';
    }
    return undefined;
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
