// The write path: decide against current state, append the record, apply it, and resolve only once the record is durable.

import type { LogRecord } from '../domain/entities.js';
import type { State } from '../store/state.js';
import type { DecideContext, Decision } from '../store/decide.js';
import type { MicrosClock } from '../store/clock.js';

export interface RecordSink {
  /** Encodes synchronously (throwing leaves nothing behind); the promise settles when the record is durable. */
  append(record: LogRecord): Promise<void>;
}

export interface Identity {
  newId(): string;
  newApikeyId(): string;
  newNonce(): string;
}

export class Committer {
  constructor(
    private readonly state: State,
    private readonly sink: RecordSink,
    private readonly clock: MicrosClock,
    private readonly identity: Identity,
  ) {}

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
    const durable = this.sink.append(record);
    this.state.apply(record);
    return durable.then(() => decision.result);
  }
}
