// The write path: decide against current state, append the record, apply it, and resolve only once the record is durable.

import type { LogRecord, Op } from '../domain/entities.js';
import type { State } from '../store/state.js';
import type { DecideContext, Decision } from '../store/decide.js';
import type { MicrosClock } from '../store/clock.js';
import { undoOps } from './undo.js';

export interface RecordSink {
  /** Encodes synchronously (throwing leaves nothing behind); the promise settles when the record is durable. */
  append(record: LogRecord): Promise<void>;
  /** Registers who is told, synchronously, that records from firstLostSeq on were cut back (a failed write). */
  setLossListener?(listener: (firstLostSeq: number) => void): void;
}

/** A record applied in memory whose log write has not succeeded yet, and how to take it back out. */
interface NotDurable {
  readonly seq: number;
  readonly undo: readonly Op[];
}

/** Settled entries are dropped from the front lazily; the array is compacted once this many have piled up. */
const settledEntriesCompactMin = 1024;

/** Makes a decision durable: the embedded Committer below, or the cluster's (src/cluster/cluster-committer.ts). */
export interface Commits {
  /** Runs decide against the state and settles with its result once the change is durable (and applied here). */
  commit<T>(decide: (state: State, ctx: DecideContext) => Decision<T>): Promise<T>;
}

export interface Identity {
  newId(): string;
  newApikeyId(): string;
  newNonce(): string;
}

export class Committer implements Commits {
  /** Oldest first, from notDurableHead on. */
  private readonly notDurable: NotDurable[] = [];
  private notDurableHead = 0;

  constructor(
    private readonly state: State,
    private readonly sink: RecordSink,
    private readonly clock: MicrosClock,
    private readonly identity: Identity,
  ) {
    // Undo, not restart-from-log: a failed write (disk full) must not stop reads and authentication,
    // and the before-images are a few Map lookups per record, kept only until the record is durable.
    sink.setLossListener?.((firstLostSeq) => this.undoFrom(firstLostSeq));
  }

  /**
   * Decide and apply happen in one synchronous step, so no other request can slip between the checks
   * (uniqueness, delete rules) and the change. The caller's reply waits for durability; other readers
   * may see the change a moment earlier, as with Redis' appendfsync always.
   */
  commit<T>(decide: (state: State, ctx: DecideContext) => Decision<T>): Promise<T> {
    const now = this.clock.now();
    const ctx: DecideContext = {
      now,
      newId: this.identity.newId,
      newApikeyId: this.identity.newApikeyId,
      newNonce: this.identity.newNonce,
    };
    const decision = decide(this.state, ctx);
    if (decision.ops.length === 0) return Promise.resolve(decision.result);
    const record: LogRecord = { seq: this.state.lastSeq + 1, at: now, ops: decision.ops };
    const undo = undoOps(this.state, decision.ops);
    const durable = this.sink.append(record);
    this.state.apply(record);
    this.notDurable.push({ seq: record.seq, undo });
    return durable.then(() => {
      this.settled(record.seq);
      return decision.result;
    });
  }

  /** Records up to seq are durable: forget how to undo them. Durability comes in seq order. */
  private settled(seq: number): void {
    while (this.notDurableHead < this.notDurable.length && this.notDurable[this.notDurableHead]!.seq <= seq) this.notDurableHead++;
    if (this.notDurableHead >= settledEntriesCompactMin && this.notDurableHead * 2 >= this.notDurable.length) {
      this.notDurable.splice(0, this.notDurableHead);
      this.notDurableHead = 0;
    }
  }

  /** The log lost every record from firstLostSeq on: take them back out of memory, newest first. */
  private undoFrom(firstLostSeq: number): void {
    for (let i = this.notDurable.length - 1; i >= this.notDurableHead && this.notDurable[i]!.seq >= firstLostSeq; i--) {
      const { seq, undo } = this.notDurable[i]!;
      // The undo record leaves lastSeq at seq - 1, so the next commit reuses the lost seq, as the log expects.
      this.state.apply({ seq: seq - 1, at: 0, ops: undo });
      this.notDurable.length = i;
    }
  }
}
