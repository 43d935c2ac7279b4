// A node's copy of the cluster's state: opens the stream's messages and applies them in order through State.apply, and tells who waits when a sequence has been applied.

import type { LogRecord } from '../domain/entities.js';
import { decodeLog } from '../persist/codec.js';
import type { Replayable } from '../persist/replayable.js';
import type { RejectedMessages } from './rejected.js';
import type { LogSeal } from './seal.js';

/** A message that opened but is not one or more whole records of its own sequence: a bug of ours, never applied, the node stops. */
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

/** Whether data is a message in the form an earlier version wrote, unsealed: records of seq in clear. */
export function isUnsealedMessage(seq: number, data: Uint8Array): boolean {
  try {
    decodeMessage(seq, data);
    return true;
  } catch {
    return false;
  }
}

interface Waiter {
  readonly seq: number;
  readonly resolve: () => void;
}

export class Replica {
  /** Oldest wanted sequence first. */
  readonly #waiters: Waiter[] = [];

  constructor(private readonly state: Replayable, readonly seal: LogSeal, private readonly rejected: RejectedMessages) {}

  /** The last sequence applied: the state's. */
  get appliedSeq(): number {
    return this.state.lastSeq;
  }

  /**
   * Applies the message at seq; the number of ops it held. One already applied (a redelivery after a reconnect) is skipped; a gap means
   * the stream no longer holds what this node needs (purged below it), and throws. One that does not open under the server key
   * (not sealed by a node, or sealed for another sequence) is counted and passed over as an empty record.
   */
  receive(seq: number, data: Uint8Array): number {
    const lastSeq = this.state.lastSeq;
    if (seq <= lastSeq) return 0;
    if (seq !== lastSeq + 1) throw new StreamMessageError(seq, `expected ${lastSeq + 1}: the stream no longer holds the messages between`);
    const frames = this.seal.open(seq, data);
    if (frames === undefined) {
      this.rejected.reject('log', { seq, bytes: data.length });
      // Applied as a record with no op: every node rejects the same message, so their states stay equal, the next
      // message is no gap, a committer that met this sequence as its wrong last sequence goes on, and a snapshot's
      // base sequence passes it. at 0 leaves the state's time as it was.
      this.state.apply({ seq, at: 0, ops: [] });
      this.#wake();
      return 0;
    }
    let ops = 0;
    for (const record of decodeMessage(seq, frames)) {
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
