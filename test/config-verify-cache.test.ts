// Pins the verify cache's two settings: their defaults, environment and flag, the range, and that --help lists them.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, loadConfig, usage } from '../src/config/config.js';
import { verifyCacheIdleMsDefault, verifyCacheTtlMsDefault } from '../src/config/limits.js';

test('VERIFY_CACHE_TTL_MS and VERIFY_CACHE_IDLE_MS: defaults, environment, flags, range', () => {
  const defaults = loadConfig({}, []);
  assert.equal(defaults.verifyCacheTtlMs, verifyCacheTtlMsDefault);
  assert.equal(defaults.verifyCacheIdleMs, verifyCacheIdleMsDefault);
  assert.ok(verifyCacheIdleMsDefault < verifyCacheTtlMsDefault, 'the idle time is the tighter bound by default');
  const set = loadConfig({ VERIFY_CACHE_TTL_MS: '120000', VERIFY_CACHE_IDLE_MS: '30000' }, []);
  assert.equal(set.verifyCacheTtlMs, 120_000);
  assert.equal(set.verifyCacheIdleMs, 30_000);
  assert.equal(loadConfig({ VERIFY_CACHE_IDLE_MS: '30000' }, ['--verify-cache-idle-ms', '0']).verifyCacheIdleMs, 0, 'a flag wins; 0 is allowed');
  assert.throws(() => loadConfig({ VERIFY_CACHE_IDLE_MS: '-1' }, []), ConfigError);
  assert.throws(() => loadConfig({ VERIFY_CACHE_IDLE_MS: String(24 * 3600_000 + 1) }, []), ConfigError);
});

test('authd --help lists both settings with their defaults', () => {
  const help = usage();
  assert.match(help, new RegExp(`VERIFY_CACHE_TTL_MS .*\\(default: ${verifyCacheTtlMsDefault}\\)`));
  assert.match(help, new RegExp(`VERIFY_CACHE_IDLE_MS .*\\(default: ${verifyCacheIdleMsDefault}\\)`));
});
