// Pins the verified-credential cache: hits, misses, version identity, expiry (idle and absolute, issue 24), eviction, and that it never holds a secret.

import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { describe, mock, test } from 'node:test';
import { inspect } from 'node:util';
import { VerifyCache } from '../src/auth/verify-cache.js';
import { verifyCacheIdleMsDefault, verifyCacheTtlMsDefault } from '../src/config/limits.js';

function makeCache(opts: { ttlMs?: number; idleMs?: number; entriesMax?: number } = {}): { cache: VerifyCache; clock: { ms: number } } {
  const clock = { ms: 1_000_000 };
  const cache = new VerifyCache({ ttlMs: opts.ttlMs ?? 60_000, idleMs: opts.idleMs, entriesMax: opts.entriesMax ?? 100, now: () => clock.ms });
  return { cache, clock };
}

/** A cache with the service's default policy, on a clock the test moves. */
function defaultCache(entriesMax = 100): { cache: VerifyCache; clock: { ms: number } } {
  return makeCache({ ttlMs: verifyCacheTtlMsDefault, idleMs: verifyCacheIdleMsDefault, entriesMax });
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

  // Issue 24: the TTL counted from the verification alone, so a user authenticating less than once a minute paid argon2 every time.
  test('an entry used every 50 s stays valid past 60 s (default policy)', () => {
    const { cache, clock } = defaultCache();
    assert.ok(verifyCacheIdleMsDefault > 50_000 && verifyCacheTtlMsDefault > 600_000, 'the defaults this test is about');
    const user = { id: 'u1' };
    cache.remember('u1', user, 'pw');
    for (let elapsed = 50_000; elapsed <= 600_000; elapsed += 50_000) {
      clock.ms += 50_000;
      assert.equal(cache.check('u1', user, 'pw'), true, `still remembered ${elapsed / 1000} s after the verification`);
    }
  });

  test('an idle entry expires after the idle time; each use starts it again (default policy)', () => {
    const { cache, clock } = defaultCache();
    const user = { id: 'u1' };
    cache.remember('u1', user, 'pw');
    clock.ms += verifyCacheIdleMsDefault - 1;
    assert.equal(cache.check('u1', user, 'pw'), true, 'used just before the idle time');
    clock.ms += verifyCacheIdleMsDefault - 1;
    assert.equal(cache.holds('u1', user), true, 'the use started the idle time again');
    clock.ms += verifyCacheIdleMsDefault - 1;
    assert.equal(cache.check('u1', user, 'pw'), true, 'holds() counts as a use too');
    clock.ms += verifyCacheIdleMsDefault;
    assert.equal(cache.holds('u1', user), false, 'unused for the idle time');
    assert.equal(cache.check('u1', user, 'pw'), false);
    assert.equal(cache.size, 0, 'and dropped');
  });

  test('a busy entry expires at the absolute maximum after its verification; only a new verification renews it (default policy)', () => {
    const { cache, clock } = defaultCache();
    const user = { id: 'u1' };
    const verifiedAt = clock.ms;
    cache.remember('u1', user, 'pw');
    const stepMs = verifyCacheIdleMsDefault / 2;
    while (clock.ms + stepMs < verifiedAt + verifyCacheTtlMsDefault) {
      clock.ms += stepMs;
      assert.equal(cache.check('u1', user, 'pw'), true, `${(clock.ms - verifiedAt) / 1000} s after the verification`);
    }
    clock.ms = verifiedAt + verifyCacheTtlMsDefault - 1;
    assert.equal(cache.check('u1', user, 'pw'), true, 'just before the maximum');
    clock.ms += 1;
    assert.equal(cache.holds('u1', user), false, 'at the maximum, however busy');
    assert.equal(cache.check('u1', user, 'pw'), false);
    cache.remember('u1', user, 'pw');
    clock.ms += verifyCacheTtlMsDefault - 1;
    assert.equal(cache.holds('u1', user), false, 'a fresh verification is still bound by the idle time');
  });

  test('a wrong secret does not keep an entry alive', () => {
    const { cache, clock } = makeCache({ ttlMs: 3_600_000, idleMs: 1000 });
    const user = { id: 'u1' };
    cache.remember('u1', user, 'pw');
    clock.ms += 900;
    assert.equal(cache.check('u1', user, 'guess'), false);
    clock.ms += 100;
    assert.equal(cache.check('u1', user, 'pw'), false, 'idle since the real use, whatever was guessed in between');
  });

  test('a full cache drops idle entries before it evicts a busy one', () => {
    const { cache, clock } = makeCache({ ttlMs: 3_600_000, idleMs: 1000, entriesMax: 4 });
    const v = {};
    for (const s of ['busy', 'b', 'c', 'd']) cache.remember(s, v, `p${s}`);
    clock.ms += 900;
    assert.equal(cache.check('busy', v, 'pbusy'), true);
    clock.ms += 100; // b, c and d have gone unused for the idle time; busy, the oldest verification, was used
    cache.remember('e', v, 'pe');
    assert.ok(cache.size <= 3, `idle ones were swept (${cache.size} entries)`);
    assert.equal(cache.check('busy', v, 'pbusy'), true, 'the busy entry was not evicted');
    assert.equal(cache.check('e', v, 'pe'), true);
  });

  test('entries past their TTL leave on the next verification, unlooked-up', () => {
    const { cache, clock } = makeCache({ ttlMs: 1000, idleMs: 1000, entriesMax: 100 });
    const v = {};
    for (let i = 0; i < 50; i++) cache.remember(`u${i}`, v, 'pw');
    clock.ms += 1000;
    cache.remember('new', v, 'pw');
    assert.equal(cache.size, 1);
  });

  test('by default it keeps time on the monotonic clock: the wall clock going back does not stretch an entry', () => {
    let monotonicMs = 5_000;
    const monotonic = mock.method(performance, 'now', () => monotonicMs);
    const wall = mock.method(Date, 'now', () => 1_700_000_000_000);
    try {
      const cache = new VerifyCache({ ttlMs: 3_600_000, idleMs: 600_000, entriesMax: 10 });
      const user = { id: 'u1' };
      cache.remember('u1', user, 'pw');
      wall.mock.mockImplementation(() => 1_700_000_000_000 - 7_200_000);
      monotonicMs += 600_000;
      assert.equal(cache.check('u1', user, 'pw'), false, 'idle by the monotonic clock, whatever the wall clock says');
    } finally {
      monotonic.mock.restore();
      wall.mock.restore();
    }
  });

  test('counts hits, idle and TTL expiries and evictions, each by the bound met first', () => {
    const { cache, clock } = makeCache({ ttlMs: 10_000, idleMs: 3000, entriesMax: 2 });
    const v = {};
    cache.remember('idle', v, 'p');
    cache.remember('busy', v, 'p');
    for (let i = 0; i < 3; i++) {
      clock.ms += 2500;
      assert.equal(cache.check('busy', v, 'p'), true);
    }
    assert.equal(cache.holds('busy', v), true);
    assert.equal(cache.check('busy', v, 'wrong'), false, 'a wrong secret is no hit');
    assert.equal(cache.check('idle', v, 'p'), false);
    clock.ms += 2500; // 10 s after its verification, 2.5 s after its last use: busy ran into its TTL
    assert.equal(cache.check('busy', v, 'p'), false);
    assert.deepEqual({ ...cache.counts }, { hits: 4, expiredIdle: 1, expiredTtl: 1, evicted: 0 });
    cache.remember('a', v, 'p');
    cache.remember('b', v, 'p');
    cache.remember('c', v, 'p');
    assert.equal(cache.counts.evicted, 1);
    cache.remember('d', {}, 'p');
    assert.equal(cache.check('d', v, 'p'), false, 'another version');
    assert.equal(cache.counts.expiredIdle + cache.counts.expiredTtl, 2, 'a changed User is no expiry');
  });

  test('idleMs 0 turns the cache off', () => {
    const { cache } = makeCache({ ttlMs: 60_000, idleMs: 0 });
    const user = {};
    cache.remember('u1', user, 'pw');
    assert.equal(cache.size, 0);
    assert.equal(cache.holds('u1', user), false);
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
