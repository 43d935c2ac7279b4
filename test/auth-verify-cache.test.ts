// Pins the verified-credential cache: hits, misses, version identity, expiry, eviction, and that it never holds a secret.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { inspect } from 'node:util';
import { VerifyCache } from '../src/auth/verify-cache.js';

function makeCache(opts: { ttlMs?: number; entriesMax?: number } = {}): { cache: VerifyCache; clock: { ms: number } } {
  const clock = { ms: 1_000_000 };
  const cache = new VerifyCache({ ttlMs: opts.ttlMs ?? 60_000, entriesMax: opts.entriesMax ?? 100, now: () => clock.ms });
  return { cache, clock };
}

describe('VerifyCache', () => {
  test('hit for the remembered secret and version; miss for another secret or subject', () => {
    const { cache } = makeCache();
    const user = { id: 'u1' };
    cache.remember('u1', user, 's3cret!');
    assert.equal(cache.check('u1', user, 's3cret!'), true);
    assert.equal(cache.check('u1', user, 's3cret?'), false);
    assert.equal(cache.check('u1', user, ''), false);
    assert.equal(cache.check('u2', user, 's3cret!'), false);
    assert.equal(cache.check('u1', user, 's3cret!'), true, 'a wrong guess does not evict the entry');
  });

  test('a new version object misses even with equal contents, and the entry is forgotten', () => {
    const { cache } = makeCache();
    const before = { id: 'u1', status: 'ENABLED' };
    cache.remember('u1', before, 'pw');
    assert.equal(cache.check('u1', { ...before }, 'pw'), false);
    assert.equal(cache.size, 0);
    assert.equal(cache.check('u1', before, 'pw'), false, 'forgotten at once, not just skipped');
  });

  test('holds: a verification remembered for this very version and unexpired, whatever the secret', () => {
    const { cache, clock } = makeCache({ ttlMs: 1000 });
    const user = { id: 'u1' };
    assert.equal(cache.holds('u1', user), false);
    cache.remember('u1', user, 'pw');
    assert.equal(cache.holds('u1', user), true);
    assert.equal(cache.holds('u1', { ...user }), false, 'another version');
    clock.ms += 1000;
    assert.equal(cache.holds('u1', user), false, 'expired');
    const off = makeCache({ ttlMs: 0 }).cache;
    off.remember('u1', user, 'pw');
    assert.equal(off.holds('u1', user), false, 'a cache turned off holds nothing');
  });

  test('entries expire after ttlMs', () => {
    const { cache, clock } = makeCache({ ttlMs: 1000 });
    const user = {};
    cache.remember('u1', user, 'pw');
    clock.ms += 999;
    assert.equal(cache.check('u1', user, 'pw'), true);
    clock.ms += 1;
    assert.equal(cache.check('u1', user, 'pw'), false);
    assert.equal(cache.size, 0);
  });

  test('past entriesMax the oldest entry goes; remembering again makes an entry young', () => {
    const { cache } = makeCache({ entriesMax: 2 });
    const v = {};
    cache.remember('a', v, 'pa');
    cache.remember('b', v, 'pb');
    cache.remember('a', v, 'pa'); // now b is the oldest
    cache.remember('c', v, 'pc');
    assert.equal(cache.size, 2);
    assert.equal(cache.check('b', v, 'pb'), false);
    assert.equal(cache.check('a', v, 'pa'), true);
    assert.equal(cache.check('c', v, 'pc'), true);
  });

  test('forget and clear', () => {
    const { cache } = makeCache();
    const v = {};
    cache.remember('a', v, 'pa');
    cache.remember('b', v, 'pb');
    cache.forget('a');
    assert.equal(cache.check('a', v, 'pa'), false);
    assert.equal(cache.size, 1);
    cache.clear();
    assert.equal(cache.size, 0);
    assert.equal(cache.check('b', v, 'pb'), false);
  });

  test('entriesMax 0 remembers nothing', () => {
    const cache = new VerifyCache({ ttlMs: 1000, entriesMax: 0 });
    cache.remember('a', {}, 'pa');
    assert.equal(cache.size, 0);
  });

  test('never stores the secret: no field, however deep, holds it', () => {
    const { cache } = makeCache();
    const secret = 'plaintext-secret-ünïcode';
    const version = { id: 'u1' };
    cache.remember('u1', version, secret);
    const needleUtf8 = Buffer.from(secret, 'utf8');
    const needleUtf16 = Buffer.from(secret, 'utf16le');
    const seen = new Set<unknown>();
    const visit = (value: unknown): void => {
      if (value === null || (typeof value !== 'object' && typeof value !== 'string')) return;
      if (typeof value === 'string') {
        assert.ok(!value.includes(secret), 'a string field holds the secret');
        return;
      }
      if (seen.has(value)) return;
      seen.add(value);
      if (ArrayBuffer.isView(value)) {
        const bytes = Buffer.from(value.buffer, value.byteOffset, value.byteLength);
        assert.equal(bytes.indexOf(needleUtf8), -1, 'a buffer holds the secret');
        assert.equal(bytes.indexOf(needleUtf16), -1, 'a buffer holds the secret');
        return;
      }
      if (value instanceof Map) for (const [k, v] of value) { visit(k); visit(v); }
      for (const key of Reflect.ownKeys(value)) visit((value as Record<PropertyKey, unknown>)[key]);
    };
    visit(cache);
    assert.ok(!inspect(cache, { depth: Infinity, showHidden: true }).includes(secret));
    assert.equal(cache.check('u1', version, secret), true, 'and still recognises it');
  });
});
