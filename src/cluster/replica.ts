// A node's copy of the cluster's state: opens the stream's messages and applies them in order through State.apply, remembers what became of the latest ones, and tells who waits when a sequence has been applied.
//
// A message's records carry the sequence they were decided for: the one right after the stream's last as the
// deciding node had applied it (cluster-committer.ts). JetStream is asked to store a message only there (an expected
// last sequence), but a server may let one through elsewhere (nats-server 2.9.10 has, during leader changes). Such a
// message is void: passed over as a record with no op, on every node alike and on every replay, so one of two
// conflicting writes never takes effect, and the writer, which learns its message's fate here, decides again
// instead of answering.

import { clusterFatesKept, sealNonceBytes } from '../config/limits.js';
import type { LogRecord } from '../domain/entities.js';
import { decodeLog } from '../persist/codec.js';
import type { Replayable } from '../persist/replayable.js';
import type { RejectedMessages } from './rejected.js';
import { sealedMessageId, type LogSeal } from './seal.js';

/** A message that opened but is not one or more whole records of one sequence: a bug of ours, never applied, the node stops. */
export class StreamMessageError extends Error {
  readonly code = 'stream_message_invalid';
  constructor(readonly seq: number, reason: string) {
    super(`stream message ${seq}: ${reason}`);
    this.name = 'StreamMessageError';
  }
}

/**
 * The records of a message (its frames, opened), all of one sequence: the one they were decided for. Throws
 * StreamMessageError for anything else; `seq` names the message in the error.
 */
export function decodeRecords(seq: number, frames: Uint8Array): LogRecord[] {
  const decoded = decodeLog(frames, `stream message ${seq}`);
  if (decoded.end.kind !== 'clean') throw new StreamMessageError(seq, decoded.end.reason);
  const first = decoded.records[0];
  if (first === undefined) throw new StreamMessageError(seq, 'no record in it');
  for (const record of decoded.records) {
    if (record.seq !== first.seq) throw new StreamMessageError(seq, `records of seq ${first.seq} and ${record.seq} in it`);
  }
  return decoded.records;
}

/** The records of a message in clear at seq (as `authctl cluster init` reads its own, and as an earlier version wrote every message). */
export function decodeMessage(seq: number, data: Uint8Array): LogRecord[] {
  const records = decodeRecords(seq, data);
  if (records[0]!.seq !== seq) throw new StreamMessageError(seq, `records of seq ${records[0]!.seq} in it`);
  return records;
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

/**
 * What became of the message at a sequence: its records applied; void (decided for another sequence); a barrier
 * (a message with no record); rejected (it does not open under the server key). The last three change nothing.
 */
export type MessageFate = 'applied' | 'void' | 'barrier' | 'rejected';
const fates: readonly MessageFate[] = ['applied', 'void', 'barrier', 'rejected'];

/** What the committer learns of its message at a sequence: its fate, `other` (another message is there), or `unknown` (forgotten). */
export type OwnFate = MessageFate | 'other' | 'unknown';

interface Waiter {
  readonly seq: number;
  readonly resolve: () => void;
}

export class Replica {
  /** Oldest wanted sequence first. */
  readonly #waiters: Waiter[] = [];
  /** The latest clusterFatesKept messages, by seq modulo the size: their sequence, id (sealed nonce, three words) and fate. */
  readonly #fateSeqs = new Float64Array(clusterFatesKept).fill(-1);
  readonly #fateIds = new Int32Array(clusterFatesKept * 3);
  readonly #fates = new Uint8Array(clusterFatesKept);

  constructor(private readonly state: Replayable, readonly seal: LogSeal, private readonly rejected: RejectedMessages) {}

  /** The last sequence applied: the state's. */
  get appliedSeq(): number {
    return this.state.lastSeq;
  }

  /**
   * Applies the message at seq; the number of ops it held. One already applied (a redelivery after a reconnect) is
   * skipped; a gap means the stream no longer holds what this node needs (purged below it), and throws. A message
   * that does not open under the server key, a barrier, and one decided for another sequence are passed over as a
   * record with no op: every node does the same with the same message, so their states stay equal, the next message
   * is no gap, and a snapshot's base sequence passes it.
   */
  receive(seq: number, data: Uint8Array): number {
    const lastSeq = this.state.lastSeq;
    if (seq <= lastSeq) return 0;
    if (seq !== lastSeq + 1) throw new StreamMessageError(seq, `expected ${lastSeq + 1}: the stream no longer holds the messages between`);
    const frames = this.seal.open(data);
    let fate: MessageFate;
    let ops = 0;
    if (frames === undefined) {
      this.rejected.reject('log', { seq, bytes: data.length });
      fate = 'rejected';
    } else if (frames.length === 0) {
      fate = 'barrier';
    } else {
      const records = decodeRecords(seq, frames);
      if (records[0]!.seq !== seq) {
        this.rejected.reject('void', { seq, decidedFor: records[0]!.seq });
        fate = 'void';
      } else {
        for (const record of records) {
          this.state.apply(record);
          ops += record.ops.length;
        }
        fate = 'applied';
      }
    }
    // at 0 leaves the state's time as it was.
    if (fate !== 'applied') this.state.apply({ seq, at: 0, ops: [] });
    this.#remember(seq, data, fate);
    this.#wake();
    return ops;
  }

  /**
   * What became of the message with this id (sealed bytes' sealedMessageId) at seq, once seq is applied: its fate,
   * `other` when another message took seq, `unknown` when seq is not applied or too old to remember.
   */
  fateOf(seq: number, id: Uint8Array): OwnFate {
    const slot = seq % clusterFatesKept;
    if (seq > this.state.lastSeq || this.#fateSeqs[slot] !== seq) return 'unknown';
    const ids = this.#fateIds;
    const view = Buffer.from(id.buffer, id.byteOffset, id.byteLength);
    const same = ids[slot * 3] === view.readInt32LE(0) && ids[slot * 3 + 1] === view.readInt32LE(4) && ids[slot * 3 + 2] === view.readInt32LE(8);
    return same ? fates[this.#fates[slot]!]! : 'other';
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

  #remember(seq: number, data: Uint8Array, fate: MessageFate): void {
    const slot = seq % clusterFatesKept;
    this.#fateSeqs[slot] = seq;
    // A message too short to hold an id (it did not open anyway) is remembered with none: no writer's id matches it.
    const id = data.length >= sealNonceBytes ? sealedMessageId(data) : new Uint8Array(sealNonceBytes);
    const view = Buffer.from(id.buffer, id.byteOffset, id.byteLength);
    this.#fateIds[slot * 3] = view.readInt32LE(0);
    this.#fateIds[slot * 3 + 1] = view.readInt32LE(4);
    this.#fateIds[slot * 3 + 2] = view.readInt32LE(8);
    this.#fates[slot] = fates.indexOf(fate);
  }

  #wake(): void {
    const lastSeq = this.state.lastSeq;
    let n = 0;
    while (n < this.#waiters.length && this.#waiters[n]!.seq <= lastSeq) n++;
    if (n === 0) return;
    for (const waiter of this.#waiters.splice(0, n)) waiter.resolve();
  }
}
