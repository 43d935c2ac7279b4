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

/** A msgpack map as decoded (mapsAsObjects): a plain object, not null, not an array. */
export function isObject(value: unknown): value is Record<string, unknown> {
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

// ---- log marks ----
//
// A segment starts with a header mark, written and fdatasynced on its own before any record, and each
// batch written after an fdatasync starts with a mark too. A mark carries the segment's random nonce and
// how many bytes of the segment had been fdatasynced when its batch was written. That lets recovery tell
// apart the two kinds of damage that look alike byte for byte:
//   - a write cut short or garbled by a power loss (the bytes were never confirmed durable, nothing in
//     them was acknowledged under FSYNC=always): a torn tail, cut off;
//   - damage to bytes that an fdatasync had covered (a later mark says so): corruption, never skipped.
// Without marks, a power loss that garbles the start of the last write while later sectors land would
// look like damage in the middle of the log and stop the service from starting. The nonce makes a mark
// unforgeable from inside a record (custom_data is stored as is): only the segment's own marks count.

/** Random bytes naming one segment; its marks carry them. */
export const walNonceBytes = 16;
/** A mark frame is a few dozen bytes; anything longer at a mark's signature is not one. */
const markPayloadBytesMax = 96;

export interface WalMark {
  readonly nonce: Uint8Array;
  /** Bytes of this segment that had been fdatasynced when the mark was written. */
  readonly syncedBytes: number;
}

/** The complete frame of a mark. */
export function encodeMark(nonce: Uint8Array, syncedBytes: number): Buffer {
  assert.equal(nonce.length, walNonceBytes, 'a log mark nonce has walNonceBytes bytes');
  return frame(packr.pack({ walMark: nonce, syncedBytes }));
}

function markOf(value: unknown): WalMark | undefined {
  if (!isObject(value) || !(value['walMark'] instanceof Uint8Array)) return undefined;
  const syncedBytes = value['syncedBytes'];
  if (value['walMark'].length !== walNonceBytes || !Number.isSafeInteger(syncedBytes) || (syncedBytes as number) < 0) return undefined;
  return { nonce: value['walMark'], syncedBytes: syncedBytes as number };
}

/** The nonce of the header mark at the start of a segment, or undefined (an older segment, or a damaged header). */
export function headerNonce(head: Uint8Array): Uint8Array | undefined {
  if (head.length < frameHeaderBytes) return undefined;
  const view = new DataView(head.buffer, head.byteOffset, head.byteLength);
  const length = view.getUint32(0, true);
  if (length === 0 || length > markPayloadBytesMax || frameHeaderBytes + length > head.length) return undefined;
  if (crc32c(head, frameHeaderBytes, frameHeaderBytes + length) !== view.getUint32(4, true)) return undefined;
  try {
    return markOf(packr.unpack(head.subarray(frameHeaderBytes, frameHeaderBytes + length)))?.nonce;
  } catch {
    return undefined;
  }
}

/** Whether buf holds a valid mark frame of any nonce after its first byte: the segment was written with marks. */
function anyMark(buf: Uint8Array): boolean {
  const bytes = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
  const prefix = markSignature(new Uint8Array(walNonceBytes)).subarray(0, -walNonceBytes);
  for (let hit = bytes.indexOf(prefix, 1); hit !== -1; hit = bytes.indexOf(prefix, hit + 1)) {
    const start = hit - frameHeaderBytes;
    if (start < 1) continue;
    const length = bytes.readUInt32LE(start);
    if (length < prefix.length || length > markPayloadBytesMax || hit + length > bytes.length) continue;
    if (crc32c(bytes, hit, hit + length) !== bytes.readUInt32LE(start + 4)) continue;
    try {
      if (markOf(packr.unpack(bytes.subarray(hit, hit + length))) !== undefined) return true;
    } catch {
      // not a mark after all
    }
  }
  return false;
}

/**
 * Best effort, for reports (--repair): the seqs of whole, valid record frames found anywhere in buf
 * from `from` on, even after damage. Records encode `seq` first, so their payloads share a prefix.
 */
export function scanRecordSeqs(buf: Uint8Array, from: number): number[] {
  const bytes = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
  const prefix = Buffer.from(packr.pack({ seq: 1, at: 0, ops: [] })).subarray(0, 7);
  const seqs: number[] = [];
  for (let hit = bytes.indexOf(prefix, from + frameHeaderBytes); hit !== -1; hit = bytes.indexOf(prefix, hit + 1)) {
    const start = hit - frameHeaderBytes;
    if (start < from) continue;
    const length = bytes.readUInt32LE(start);
    if (length === 0 || length > walRecordBytesMax || hit + length > bytes.length) continue;
    if (crc32c(bytes, hit, hit + length) !== bytes.readUInt32LE(start + 4)) continue;
    try {
      const value: unknown = packr.unpack(bytes.subarray(hit, hit + length));
      if (logRecordProblem(value) === undefined) seqs.push((value as LogRecord).seq);
    } catch {
      // not a record after all
    }
  }
  return seqs;
}

/** Enough bytes of a segment's start to hold its header mark. */
export const headerReadBytes = frameHeaderBytes + markPayloadBytesMax;

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && Buffer.compare(a, b) === 0;
}

/** The leading payload bytes every mark of this nonce shares: searched for, instead of trying every offset. */
function markSignature(nonce: Uint8Array): Buffer {
  const payload = packr.pack({ walMark: nonce, syncedBytes: 0 });
  const at = Buffer.from(payload).indexOf(Buffer.from(nonce));
  return Buffer.from(payload.subarray(0, at + nonce.length));
}

/**
 * The offset of a mark of this segment, after `damagedAt`, saying the bytes at `damagedAt` had been
 * fdatasynced before it was written; undefined if there is none. Linear: a native search for the
 * signature, then a checksum of a few dozen bytes per hit.
 */
function durabilityProof(buf: Uint8Array, damagedAt: number, nonce: Uint8Array): number | undefined {
  const bytes = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
  const signature = markSignature(nonce);
  for (let hit = bytes.indexOf(signature, damagedAt + 1); hit !== -1; hit = bytes.indexOf(signature, hit + 1)) {
    const start = hit - frameHeaderBytes;
    if (start <= damagedAt) continue;
    const length = bytes.readUInt32LE(start);
    if (length < signature.length || length > markPayloadBytesMax || hit + length > bytes.length) continue;
    if (crc32c(bytes, hit, hit + length) !== bytes.readUInt32LE(start + 4)) continue;
    let value: unknown;
    try {
      value = packr.unpack(bytes.subarray(hit, hit + length));
    } catch {
      continue;
    }
    const mark = markOf(value);
    if (mark !== undefined && sameBytes(mark.nonce, nonce) && mark.syncedBytes > damagedAt) return start;
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
  /** Where the valid records (and marks) end. */
  readonly validBytes: number;
  readonly end: LogEnd;
  /** The segment's nonce, from its header mark; undefined for a segment written before marks existed. */
  readonly nonce: Uint8Array | undefined;
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

/**
 * Sorts damage at offset into torn or corrupt. In a segment with marks, damage is torn unless a later
 * mark of the segment proves the damaged bytes had been fdatasynced (see the marks above). In an older
 * segment without them, only what a crash during the last write leaves is torn (classifyBadFrame).
 */
function classifyDamage(buf: Uint8Array, offset: number, payloadBytes: number | undefined, why: string, nonce: Uint8Array | undefined): LogEnd {
  if (nonce === undefined) {
    // A segment's header is synced before anything follows it: with marks after it, a bad header is
    // corruption, even if its damaged length now points past the end of the file.
    if (offset === 0 && !zerosFrom(buf, 0) && anyMark(buf)) return { kind: 'corrupt', offset, reason: `${why === '' ? 'a frame cut short' : why}, in the header of a segment that has marks after it` };
    return classifyBadFrame(buf, offset, payloadBytes, why);
  }
  const dropped = buf.length - offset;
  const what = why === '' ? 'a frame cut short' : why;
  if (zerosFrom(buf, offset)) return { kind: 'torn', offset, droppedBytes: dropped, reason: 'zero-filled tail' };
  const proof = durabilityProof(buf, offset, nonce);
  if (proof !== undefined) return { kind: 'corrupt', offset, reason: `${what}, in bytes that the mark at offset ${proof} shows had been fdatasynced` };
  return { kind: 'torn', offset, droppedBytes: dropped, reason: `${what}, in the last write, which no later mark shows was ever fdatasynced` };
}

/** Decodes a whole log file: the valid records in order and what stopped the decoding. */
export function decodeLog(buf: Uint8Array, file: string): DecodedLog {
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const records: LogRecord[] = [];
  const offsets: number[] = [];
  let offset = 0;
  let nonce: Uint8Array | undefined;
  const stop = (end: LogEnd): DecodedLog => ({ file, records, offsets, validBytes: offset, end, nonce });
  const damaged = (payloadBytes: number | undefined, why: string): DecodedLog => stop(classifyDamage(buf, offset, payloadBytes, why, nonce));
  while (offset < buf.length) {
    if (buf.length - offset < frameHeaderBytes) return damaged(undefined, '');
    const length = view.getUint32(offset, true);
    const crc = view.getUint32(offset + 4, true);
    const start = offset + frameHeaderBytes;
    const end = start + length;
    // A zero length is never written (an encoded record is at least a few bytes) and would otherwise
    // "match" because the crc of nothing is 0, letting zero fill pass as records.
    if (length === 0) return damaged(length, 'zero-length frame');
    if (length > walRecordBytesMax) return damaged(length, `frame length ${length} exceeds walRecordBytesMax`);
    if (end > buf.length) return damaged(length, '');
    if (crc32c(buf, start, end) !== crc) return damaged(length, 'checksum mismatch');
    // From here the bytes are exactly what was written, so a bad payload is corruption (or a bug), never a torn write.
    let value: unknown;
    try {
      value = packr.unpack(buf.subarray(start, end));
    } catch (err) {
      return stop({ kind: 'corrupt', offset, reason: `payload is not msgpack: ${(err as Error).message}` });
    }
    const mark = markOf(value);
    if (mark !== undefined) {
      if (offset === 0) nonce = mark.nonce;
      else if (nonce === undefined || !sameBytes(nonce, mark.nonce)) return stop({ kind: 'corrupt', offset, reason: 'a log mark that does not belong to this segment' });
      offset = end;
      continue;
    }
    const problem = logRecordProblem(value);
    if (problem !== undefined) return stop({ kind: 'corrupt', offset, reason: `not a log record: ${problem}` });
    records.push(value as LogRecord);
    offsets.push(offset);
    offset = end;
  }
  return stop({ kind: 'clean' });
}
