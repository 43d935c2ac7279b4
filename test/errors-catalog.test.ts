// The error catalog and the README agree: every code is documented with its status, and nothing else is.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { errorCatalog } from '../src/domain/errors.js';

test('README lists every error code with its HTTP status, and only those', () => {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  const rows = new Map<string, number>();
  for (const m of readme.matchAll(/^\| `([a-z_]+)` \| (\d{3}) \|/gm)) rows.set(m[1]!, Number(m[2]));
  for (const [code, { status }] of Object.entries(errorCatalog)) {
    assert.equal(rows.get(code), status, `README row for ${code}`);
  }
  assert.deepEqual([...rows.keys()].sort(), Object.keys(errorCatalog).sort());
});
