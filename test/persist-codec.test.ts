// CRC32C vectors and log framing: round trip, size limit, torn tails at every byte, zero fill, and corruption with file and offset.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { crc32c } from '../src/persist/crc32c.js';
import { decodeLog, encodeRecord, frame, frameHeaderBytes, packr, RecordTooLargeError } from '../src/persist/codec.js';
import { walRecordBytesMax } from '../src/config/limits.js';
import type { LogRecord } from '../src/domain/entities.js';
import { putUser, record, user } from './helpers/persist-fixtures.js';

/** Bit-at-a-time CRC32C, the definition itself, to check the table-driven one against. */
function crc32cReference(data: Uint8Array): number {
  let c = 0xffffffff;
  for (const byte of data) {
    c ^= byte;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
  }
  return (c ^ 0xffffffff) >>> 0;
}

test('crc32c matches the published check value and the RFC 3720 vectors', () => {
  assert.equal(crc32c(Buffer.from('123456789')), 0xe3069283);
  assert.equal(crc32c(new Uint8Array(0)), 0);
  assert.equal(crc32c(new Uint8Array(32)), 0x8a9136aa);
  assert.equal(crc32c(new Uint8Array(32).fill(0xff)), 0x62a8ab43);
  assert.equal(crc32c(Uint8Array.from({ length: 32 }, (_, i) => i)), 0x46dd794e);
  assert.equal(crc32c(Uint8Array.from({ length: 32 }, (_, i) => 31 - i)), 0x113fdb5c);
});

test('crc32c agrees with the bitwise definition at every length and alignment, and chains', () => {
  const data = Uint8Array.from({ length: 300 }, (_, i) => (i * 7919 + 13) & 0xff);
  for (let start = 0; start < 9; start++) {
    for (let end = start; end <= data.length; end += 1 + (end % 5)) {
      assert.equal(crc32c(data, start, end), crc32cReference(data.subarray(start, end)), `range ${start}..${end}`);
    }
  }
  const whole = crc32c(data);
  for (const cut of [0, 1, 7, 8, 9, 150, 299, 300]) {
    assert.equal(crc32c(data, cut, data.length, crc32c(data, 0, cut)), whole, `chained at ${cut}`);
  }
});

function logOf(records: readonly LogRecord[]): { buf: Buffer; starts: number[] } {
  const frames = records.map((r) => encodeRecord(r));
  const starts: number[] = [];
  let at = 0;
  for (const f of frames) {
    starts.push(at);
    at += f.length;
  }
  return { buf: Buffer.concat(frames), starts };
}

const threeRecords = [
  record(1),
  record(2, putUser('a', 'Ann'), { op: 'del', kind: 'group', id: 'g1' }),
  record(3, { op: 'put', kind: 'meta', value: { baseApplication: 'app-1', defaultOrganization: 'org-1' } }),
];

test('records round-trip through frames with maps decoded as plain objects', () => {
  const { buf, starts } = logOf(threeRecords);
  const decoded = decodeLog(buf, 'wal-x.log');
  assert.deepEqual(decoded.records, threeRecords);
  assert.deepEqual(decoded.offsets, starts);
  assert.deepEqual(decoded.end, { kind: 'clean' });
  assert.equal(decoded.validBytes, buf.length);
  const op = decoded.records[1]!.ops[0]!;
  assert.equal(Object.getPrototypeOf(op), Object.prototype);
  // The frame header is exactly length and crc of the payload.
  const first = encodeRecord(threeRecords[0]!);
  assert.equal(first.readUInt32LE(0), first.length - frameHeaderBytes);
  assert.equal(first.readUInt32LE(4), crc32c(first, frameHeaderBytes));
});

test('an empty file decodes to no records and a clean end', () => {
  assert.deepEqual(decodeLog(Buffer.alloc(0), 'f').end, { kind: 'clean' });
});

test('a record over walRecordBytesMax is refused at encode time with a typed error', () => {
  const huge = record(1, { op: 'put', kind: 'user', value: user('big', 'big', { customData: { blob: 'x'.repeat(walRecordBytesMax) } }) });
  assert.throws(() => encodeRecord(huge), (err: unknown) => err instanceof RecordTooLargeError && err.code === 'record_too_large' && err.bytes > walRecordBytesMax);
});

test('a torn last record is detected at every byte offset and cut back to exactly the records before it', () => {
  const { buf, starts } = logOf(threeRecords);
  const lastStart = starts[2]!;
  for (let cut = lastStart + 1; cut < buf.length; cut++) {
    const decoded = decodeLog(buf.subarray(0, cut), 'wal-t.log');
    assert.deepEqual(decoded.records, threeRecords.slice(0, 2), `cut at ${cut}`);
    assert.equal(decoded.end.kind, 'torn', `cut at ${cut}`);
    if (decoded.end.kind !== 'torn') continue;
    assert.equal(decoded.end.offset, lastStart);
    assert.equal(decoded.end.droppedBytes, cut - lastStart);
    assert.equal(decoded.validBytes, lastStart);
  }
  // Cut exactly at a frame boundary there is nothing torn at all.
  assert.deepEqual(decodeLog(buf.subarray(0, lastStart), 'wal-t.log').end, { kind: 'clean' });
});

test('a last frame whose bytes did not all reach the disk (checksum mismatch ending at EOF) is a torn tail', () => {
  const { buf, starts } = logOf(threeRecords);
  const garbled = Buffer.from(buf);
  garbled[buf.length - 3] ^= 0x40;
  const decoded = decodeLog(garbled, 'wal-g.log');
  assert.equal(decoded.records.length, 2);
  assert.equal(decoded.end.kind, 'torn');
  assert.equal(decoded.end.kind === 'torn' && decoded.end.offset, starts[2]);
  // The same when the payload arrived as zeros behind a written header.
  const zeroed = Buffer.from(buf);
  zeroed.fill(0, starts[2]! + frameHeaderBytes);
  assert.equal(decodeLog(zeroed, 'wal-z.log').end.kind, 'torn');
});

test('zero fill after the last record is a torn tail covering every zero byte', () => {
  const { buf } = logOf(threeRecords);
  for (const zeros of [1, 7, 8, 9, 4096]) {
    const decoded = decodeLog(Buffer.concat([buf, Buffer.alloc(zeros)]), 'wal-0.log');
    assert.deepEqual(decoded.records, threeRecords);
    assert.deepEqual(decoded.end, { kind: 'torn', offset: buf.length, droppedBytes: zeros, reason: 'zero-filled tail' });
  }
});

test('a flipped bit in a middle record is corruption naming the file and that record offset', () => {
  const { buf, starts } = logOf(threeRecords);
  for (const at of [starts[1]! + 4, starts[1]! + frameHeaderBytes + 5, starts[2]! - 1]) {
    const damaged = Buffer.from(buf);
    damaged[at] ^= 0x01;
    const decoded = decodeLog(damaged, '/data/wal-0000000000000001.log');
    assert.equal(decoded.file, '/data/wal-0000000000000001.log');
    assert.deepEqual(decoded.records, threeRecords.slice(0, 1));
    assert.equal(decoded.end.kind, 'corrupt', `flip at ${at}`);
    assert.equal(decoded.end.kind === 'corrupt' && decoded.end.offset, starts[1]);
  }
});

test('zeros in the middle followed by real data are corruption, not a torn tail', () => {
  const { buf, starts } = logOf(threeRecords);
  const holed = Buffer.from(buf);
  holed.fill(0, starts[1]!, starts[2]!);
  const decoded = decodeLog(holed, 'f');
  assert.equal(decoded.end.kind, 'corrupt');
  assert.equal(decoded.end.kind === 'corrupt' && decoded.end.offset, starts[1]);
});

test('a checksummed payload that is not a well-formed LogRecord is corruption', () => {
  const good = encodeRecord(record(2));
  for (const bogus of [{ seq: 0, at: 1, ops: [] }, { seq: 1.5, at: 1, ops: [] }, { seq: 1, at: 'x', ops: [] }, { seq: 1, at: 1 }, [1, 2, 3], { seq: 1, at: 1, ops: [{ op: 'put', kind: 'planet', value: {} }] }]) {
    const decoded = decodeLog(Buffer.concat([frame(packr.pack(bogus)), good]), 'f');
    assert.equal(decoded.end.kind, 'corrupt', JSON.stringify(bogus));
    assert.equal(decoded.end.kind === 'corrupt' && decoded.end.offset, 0);
    assert.match(decoded.end.kind === 'corrupt' ? decoded.end.reason : '', /not a log record/);
  }
});
