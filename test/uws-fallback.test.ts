// The service refuses uWebSockets.js' slow pure-JS fallback unless the operator allows it, before touching any data.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

const main = new URL('../src/main.js', import.meta.url).pathname;

test('with the native binary unavailable the server refuses to start and creates no data directory', () => {
  const dir = mkdtempSync(join(tmpdir(), 'authd-uws-'));
  try {
    const run = spawnSync(process.execPath, [main], {
      env: { ...process.env, UWS_USE_FALLBACK: '1', PORT: '0', HOST: '127.0.0.1', DATA_DIR: join(dir, 'data'), KEY_FILE: join(dir, 'key'), LOG_LEVEL: 'silent' },
      encoding: 'utf8', timeout: 15_000,
    });
    assert.equal(run.status, 1);
    assert.match(run.stderr, /Refusing to start; set ALLOW_UWS_FALLBACK=1/);
    assert.equal(existsSync(join(dir, 'data')), false, 'no data directory may be bootstrapped');
    assert.equal(existsSync(join(dir, 'key')), false, 'no server key may be created');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
