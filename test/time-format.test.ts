// Stored microsecond times render the same by calendar arithmetic as through Date, across the whole range the arithmetic covers.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { formatByDate, formatTimestamp } from '../src/domain/time.js';

test('every whole time from 1970 to 9999 renders as Date renders it', () => {
  fc.assert(fc.property(fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }), (n) => {
    const micros = n % 253_402_300_800_000_000;
    assert.equal(formatTimestamp(micros), formatByDate(micros));
  }), { numRuns: 20_000 });
});

test('edges: the epoch, leap days, century years, the last microsecond of 9999, and beyond it', () => {
  const at = (iso: string, fraction = 0): number => Date.parse(iso) * 1000 + fraction;
  const cases = [
    1, 999_999, at('1970-01-01T23:59:59Z', 999_999), at('2000-02-29T12:00:00Z', 1), at("1900-03-01T00:00:00Z"),
    at('2100-02-28T23:59:59Z', 5), at('2100-03-01T00:00:00Z'), at('2400-02-29T00:00:00Z', 123_456), at('2026-11-25T22:49:34Z', 42),
    253_402_300_799_999_999, 253_402_300_800_000_000, -1, 1.5,
  ];
  for (const micros of cases) assert.equal(formatTimestamp(micros), formatByDate(micros), String(micros));
  assert.equal(formatTimestamp(at('2024-02-29T01:02:03Z', 4)), '2024-02-29 01:02:03.000004+00:00');
  assert.equal(formatTimestamp(0), '');
});
