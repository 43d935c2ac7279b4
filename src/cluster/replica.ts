// A node's copy of the cluster's state: applies the stream's messages in order through State.apply, and tells who waits when a sequence has been applied.

import type { LogRecord } from '../domain/entities.js';
import { decodeLog } from '../persist/codec.js';
import type { Replayable } from '../persist/replayable.js';

/** A message that is not one or more whole records of its own sequence: never applied, the node stops. */
export class StreamMessageError extends Error {
  readonly code = 'stream_message_invalid';
  constructor(readonly seq: number, reason: string) {
    super(`stream message ${seq}: ${reason}`);
    this.name = 'StreamMessageError';
  }
}

/**
 * The records of the message at seq: a message is records in the log's record encoding, back to back, every one
 * carrying the message's sequence. Throws StreamMessageError for anything else.
 */
export function decodeMessage(seq: number, data: Uint8Array): LogRecord[] {
  const decoded = decodeLog(data, `stream message ${seq}`);
  if (decoded.end.kind !== 'clean') throw new StreamMessageError(seq, decoded.end.reason);
  if (decoded.records.length === 0) throw new StreamMessageError(seq, 'no record in it');
  for (const record of decoded.records) {
    if (record.seq !== seq) throw new StreamMessageError(seq, `a record of seq ${record.seq} in it`);
  }
  return decoded.records;
}

interface Waiter {
  readonly seq: number;
  readonly resolve: () => void;
}

export class Replica {
  /** Oldest wanted sequence first. */
  readonly #waiters: Waiter[] = [];

  constructor(private readonly state: Replayable) {}

  /** The last sequence applied: the state's. */
  get appliedSeq(): number {
    return this.state.lastSeq;
  }

  /**
   * Applies the message at seq; the number of ops it held. One already applied (a redelivery after a reconnect) is skipped; a gap means
   * the stream no longer holds what this node needs (purged below it), and throws.
   */
  receive(seq: number, data: Uint8Array): number {
    const lastSeq = this.state.lastSeq;
    if (seq <= lastSeq) return 0;
    if (seq !== lastSeq + 1) throw new StreamMessageError(seq, `expected ${lastSeq + 1}: the stream no longer holds the messages between`);
    let ops = 0;
    for (const record of decodeMessage(seq, data)) {
      this.state.apply(record);
      ops += record.ops.length;
    }
    this.#wake();
    return ops;
  }

  /** Resolves once seq has been applied (at once if it has). */
  applied(seq: number): Promise<void> {
    if (seq <= this.state.lastSeq) return Promise.resolve();
    return new Promise((resolve) => {
      const waiters = this.#waiters;
      let at = waiters.length;
      while (at > 0 && waiters[at - 1]!.seq > seq) at--;
      waiters.splice(at, 0, { seq, resolve });
    });
  }

  #wake(): void {
    const lastSeq = this.state.lastSeq;
    let n = 0;
    while (n < this.#waiters.length && this.#waiters[n]!.seq <= lastSeq) n++;
    if (n === 0) return;
    for (const waiter of this.#waiters.splice(0, n)) waiter.resolve();
  }
}
