// Record framing shared by the log and snapshots: [u32 LE length][u32 LE crc32c][msgpack payload], and the log-file decoder that tells a torn tail from corruption.

import assert from 'node:assert/strict';
import { Packr } from 'msgpackr';
import { entityKinds, type EntityKind, type LogRecord } from '../domain/entities.js';
import { walRecordBytesMax } from '../config/limits.js';
import { crc32c } from './crc32c.js';

export const frameHeaderBytes = 8;

// The length field is a u32; a limit past it would wrap silently instead of being refused.
assert.ok(walRecordBytesMax > 0 && walRecordBytesMax < 2 ** 32, 'walRecordBytesMax must fit the u32 frame length');

/**
 * One encoder/decoder for everything persisted. useRecords:false because msgpackr's records share
 * structure definitions across values: a frame must decode on its own, after a crash cut off whatever
 * came before or after it. mapsAsObjects: entities are plain objects, never Maps.
 */
export const packr = new Packr({ useRecords: false, mapsAsObjects: true });

/** A record whose encoding exceeds walRecordBytesMax; thrown before anything is queued, so nothing is left behind. */
export class RecordTooLargeError extends Error {
  readonly code = 'record_too_large';
  constructor(readonly bytes: number, readonly limitBytes: number) {
    super(`log record of ${bytes} bytes exceeds walRecordBytesMax (${limitBytes})`);
    this.name = 'RecordTooLargeError';
  }
}

/** A new buffer holding payload behind its frame header. */
export function frame(payload: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(frameHeaderBytes + payload.length);
  out.writeUInt32LE(payload.length, 0);
  out.writeUInt32LE(crc32c(payload), 4);
  out.set(payload, frameHeaderBytes);
  return out;
}

/** The complete frame of one log record. Throws RecordTooLargeError. */
export function encodeRecord(record: LogRecord): Buffer {
  const payload = packr.pack(record);
  if (payload.length > walRecordBytesMax) throw new RecordTooLargeError(payload.length, walRecordBytesMax);
  return frame(payload);
}

const kindSet: ReadonlySet<string> = new Set<string>(entityKinds);

export function isEntityKind(value: unknown): value is EntityKind {
  return typeof value === 'string' && kindSet.has(value);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Why value is not a well-formed LogRecord, or undefined if it is. Checks shape, not entity contents. */
export function logRecordProblem(value: unknown): string | undefined {
  if (!isObject(value)) return 'record is not a map';
  if (!Number.isSafeInteger(value['seq']) || (value['seq'] as number) <= 0) return 'seq is not a positive integer';
  if (typeof value['at'] !== 'number' || !Number.isFinite(value['at'])) return 'at is not a number';
  const ops = value['ops'];
  if (!Array.isArray(ops)) return 'ops is not an array';
  for (let i = 0; i < ops.length; i++) {
    const op: unknown = ops[i];
    if (!isObject(op) || !isEntityKind(op['kind'])) return `ops[${i}] has no valid kind`;
    if (op['op'] === 'put') {
      if (!isObject(op['value'])) return `ops[${i}] put has no value`;
    } else if (op['op'] === 'del') {
      if (typeof op['id'] !== 'string') return `ops[${i}] del has no id`;
    } else {
      return `ops[${i}] is neither put nor del`;
    }
  }
  return undefined;
}

/** How decoding a log file stopped. Offsets are byte offsets into the file. */
export type LogEnd =
  | { readonly kind: 'clean' }
  /** The last write was cut short by a crash: cutting the file at `offset` leaves exactly the whole records. */
  | { readonly kind: 'torn'; readonly offset: number; readonly droppedBytes: number; readonly reason: string }
  /** A bad frame with real data after it: never skipped, the operator must look. */
  | { readonly kind: 'corrupt'; readonly offset: number; readonly reason: string };

export interface DecodedLog {
  readonly file: string;
  /** The whole, valid records before whatever stopped decoding, in file order. */
  readonly records: LogRecord[];
  /** offsets[i] is where records[i]'s frame starts. */
  readonly offsets: number[];
  /** Where the valid records end. */
  readonly validBytes: number;
  readonly end: LogEnd;
}

function zerosFrom(buf: Uint8Array, offset: number): boolean {
  for (let i = offset; i < buf.length; i++) if (buf[i] !== 0) return false;
  return true;
}

/**
 * Sorts a bad frame at offset into torn or corrupt. Torn means what a crash during the last write
 * leaves: a header or payload cut short at the end of the file, a last frame whose bytes did not
 * all reach the disk, or file-system zero fill. Anything followed by other data is corruption.
 * A flipped bit in the length of the very last complete records that makes it point past the end of
 * the file cannot be told from a torn write; the records it hides were the newest, and no format
 * without a separate commit pointer can do better.
 */
function classifyBadFrame(buf: Uint8Array, offset: number, payloadBytes: number | undefined, why: string): LogEnd {
  const dropped = buf.length - offset;
  if (zerosFrom(buf, offset)) return { kind: 'torn', offset, droppedBytes: dropped, reason: 'zero-filled tail' };
  if (payloadBytes === undefined) return { kind: 'torn', offset, droppedBytes: dropped, reason: 'frame header cut short' };
  const frameEnd = offset + frameHeaderBytes + payloadBytes;
  if (frameEnd > buf.length) {
    return { kind: 'torn', offset, droppedBytes: dropped, reason: `frame claims ${frameEnd - buf.length} bytes past the end of the file` };
  }
  if (frameEnd === buf.length) return { kind: 'torn', offset, droppedBytes: dropped, reason: `last frame: ${why}` };
  return { kind: 'corrupt', offset, reason: why };
}

/** Decodes a whole log file: the valid records in order and what stopped the decoding. */
export function decodeLog(buf: Uint8Array, file: string): DecodedLog {
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const records: LogRecord[] = [];
  const offsets: number[] = [];
  let offset = 0;
  const stop = (end: LogEnd): DecodedLog => ({ file, records, offsets, validBytes: offset, end });
  while (offset < buf.length) {
    if (buf.length - offset < frameHeaderBytes) return stop(classifyBadFrame(buf, offset, undefined, ''));
    const length = view.getUint32(offset, true);
    const crc = view.getUint32(offset + 4, true);
    const start = offset + frameHeaderBytes;
    const end = start + length;
    // A zero length is never written (an encoded record is at least a few bytes) and would otherwise
    // "match" because the crc of nothing is 0, letting zero fill pass as records.
    if (length === 0) return stop(classifyBadFrame(buf, offset, length, 'zero-length frame'));
    if (length > walRecordBytesMax) return stop(classifyBadFrame(buf, offset, length, `frame length ${length} exceeds walRecordBytesMax`));
    if (end > buf.length) return stop(classifyBadFrame(buf, offset, length, ''));
    if (crc32c(buf, start, end) !== crc) return stop(classifyBadFrame(buf, offset, length, 'checksum mismatch'));
    // From here the bytes are exactly what was written, so a bad payload is corruption (or a bug), never a torn write.
    let value: unknown;
    try {
      value = packr.unpack(buf.subarray(start, end));
    } catch (err) {
      return stop({ kind: 'corrupt', offset, reason: `payload is not msgpack: ${(err as Error).message}` });
    }
    const problem = logRecordProblem(value);
    if (problem !== undefined) return stop({ kind: 'corrupt', offset, reason: `not a log record: ${problem}` });
    records.push(value as LogRecord);
    offsets.push(offset);
    offset = end;
  }
  return stop({ kind: 'clean' });
}
