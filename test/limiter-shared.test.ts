// The limiter's side of failures shared across cluster nodes (issue 25): failedElsewhere counts like a local failure, the listener hears local failures only, a success still costs nothing.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BruteForceLimiter, type LimiterSettings } from '../src/auth/limiter.js';
import { bruteForceCountersMax } from '../src/config/limits.js';
import { clock, fail, keycloakLike } from './helpers/limiter-kit.js';

const settings = keycloakLike;
const noTarpit: LimiterSettings = { ...settings, tarpitStepMs: 0 };

/** Admits an attempt and hands it back uncounted: its delay, or why it was refused. */
function probe(limiter: BruteForceLimiter, account: string, address: string, scope = ''): number | 'account' | 'address' {
  const a = limiter.admit(account, address, scope);
  if (!a.admitted) return a.lockedBy;
  limiter.released(a.ticket);
  return a.delayMs;
}

test('failures counted elsewhere lock an account at the failure factor, for as long as local ones do', () => {
  const c = clock();
  const limiter = new BruteForceLimiter(noTarpit, c.now);
  for (let i = 0; i < 29; i++) limiter.failedElsewhere('u:victim@example.com', `198.51.100.${i}`);
  assert.equal(probe(limiter, 'u:victim@example.com', '203.0.113.1'), 0, 'open after 29');
  limiter.failedElsewhere('u:victim@example.com', '198.51.100.29');
  assert.equal(probe(limiter, 'u:victim@example.com', '203.0.113.1'), 'account', 'locked at 30');
  c.advance(59_999);
  assert.equal(probe(limiter, 'u:victim@example.com', '203.0.113.1'), 'account');
  c.advance(1);
  assert.equal(probe(limiter, 'u:victim@example.com', '203.0.113.1'), 0, 'open after the first step, 60 s');
  // The next step is twice as long, as for local failures.
  for (let i = 0; i < 30; i++) limiter.failedElsewhere('u:victim@example.com', `198.51.101.${i}`);
  c.advance(119_999);
  assert.equal(probe(limiter, 'u:victim@example.com', '203.0.113.1'), 'account');
  c.advance(1);
  assert.equal(probe(limiter, 'u:victim@example.com', '203.0.113.1'), 0);
});

test('failures counted elsewhere slow their address and tarpit their pair as local ones do', () => {
  const limiter = new BruteForceLimiter(settings, clock().now);
  limiter.failedElsewhere('u:someone@example.com', '192.0.2.7');
  assert.equal(probe(limiter, 'u:someone@example.com', '192.0.2.7'), 250, "the pair's tarpit");
  assert.equal(probe(limiter, 'u:someone@example.com', '192.0.2.8'), 0, 'another address: no tarpit');
  for (let i = 1; i < 100; i++) limiter.failedElsewhere(`u:nobody${i}@example.com`, '198.51.100.66');
  assert.deepEqual([0, 1, 2].map((i) => probe(limiter, `u:newcomer${i}@example.com`, '198.51.100.66')), [0, 0, 0], '99: not slowed');
  limiter.failedElsewhere('u:nobody100@example.com', '198.51.100.66');
  assert.deepEqual([0, 1, 2].map((i) => probe(limiter, `u:newcomer${i}@example.com`, '198.51.100.66')), [0, 250, 500], '100: one attempt per 250 ms');
});

test('local failures and failures elsewhere add up to one count', () => {
  const limiter = new BruteForceLimiter(noTarpit, clock().now);
  for (let i = 0; i < 15; i++) assert.ok(fail(limiter, 'u:mixed@example.com', `10.0.0.${i}`).admitted);
  for (let i = 0; i < 14; i++) limiter.failedElsewhere('u:mixed@example.com', `10.0.1.${i}`);
  assert.equal(probe(limiter, 'u:mixed@example.com', '203.0.113.1'), 0, '29: open');
  limiter.failedElsewhere('u:mixed@example.com', '10.0.1.14');
  assert.equal(probe(limiter, 'u:mixed@example.com', '203.0.113.1'), 'account', '30: locked');

  // An attempt admitted in this turn, not yet counted in flight, that fails after a failure elsewhere of its account: two.
  const pending = new BruteForceLimiter(noTarpit, clock().now);
  for (let i = 0; i < 28; i++) pending.failedElsewhere('u:race@example.com', `10.1.0.${i}`);
  const a = pending.admit('u:race@example.com', '10.2.0.1');
  assert.ok(a.admitted);
  pending.failedElsewhere('u:race@example.com', '10.1.0.28');
  pending.failed(a.ticket);
  assert.equal(probe(pending, 'u:race@example.com', '203.0.113.1'), 'account', '28 + 1 + 1 = 30: locked');
  // And with no failure before it: the local attempt's counter and the one made elsewhere are the same.
  const fresh = new BruteForceLimiter({ ...noTarpit, failureFactor: 2 }, clock().now);
  const b = fresh.admit('u:fresh@example.com', '10.3.0.1');
  assert.ok(b.admitted);
  fresh.failedElsewhere('u:fresh@example.com', '10.3.0.2');
  fresh.failed(b.ticket);
  assert.equal(probe(fresh, 'u:fresh@example.com', '203.0.113.1'), 'account', '1 + 1 = 2: locked');
});

test('the listener hears each local failure once, in the form failedElsewhere takes back, and nothing else', () => {
  const limiter = new BruteForceLimiter(noTarpit, clock().now);
  const heard: Array<[string, string]> = [];
  limiter.onFailure = (account, address) => heard.push([account, address]);
  fail(limiter, 'U:Victim@Example.com', '2001:db8:1:2:aaaa::1');
  fail(limiter, 'k:KeyId', '::ffff:198.51.100.3');
  assert.deepEqual(heard, [['u:victim@example.com', '2001:db8:1:2::/64'], ['k:keyid', '198.51.100.3']]);

  limiter.failedElsewhere('u:other@example.com', '192.0.2.1');
  const ok = limiter.admit('u:owner@example.com', '192.0.2.2');
  assert.ok(ok.admitted);
  limiter.succeeded(ok.ticket);
  const shed = limiter.admit('u:owner@example.com', '192.0.2.3');
  assert.ok(shed.admitted);
  limiter.released(shed.ticket);
  // A refused attempt (locked) is not a failure either.
  for (let i = 0; i < 30; i++) limiter.failedElsewhere('u:locked@example.com', `10.9.0.${i}`);
  assert.equal(fail(limiter, 'u:locked@example.com', '10.9.1.1').admitted, false);
  assert.equal(heard.length, 2, 'not told of failures elsewhere, successes, released or refused attempts');

  // What the listener gives counts on the same counters as the raw names on another node: the IPv6 /64 included.
  const other = new BruteForceLimiter(settings, clock().now);
  for (let i = 0; i < 30; i++) other.failedElsewhere(...heard[0]!);
  assert.equal(probe(other, 'u:VICTIM@example.com', '203.0.113.1'), 'account');
  for (let i = 0; i < 100; i++) other.failedElsewhere(`u:n${i}@example.com`, heard[0]![1]);
  assert.deepEqual([0, 1].map((i) => probe(other, `u:c${i}@example.com`, '2001:db8:1:2:bbbb::7')), [0, 250], 'the /64 is slowed');
});

// Issue 24: a success with no failure on record makes, writes and drops no counter; sharing must not change that.
test('with a listener set and failures elsewhere on record, a success with no failure of its own still makes no counter', () => {
  const limiter = new BruteForceLimiter(settings, clock().now);
  let told = 0;
  limiter.onFailure = () => { told++; };
  for (let i = 0; i < 1000; i++) {
    const a = limiter.admit(`k:key${i % 50}`, `10.0.${i >> 8}.${i & 255}`);
    assert.ok(a.admitted);
    limiter.succeeded(a.ticket);
  }
  assert.equal(limiter.size, 0);
  limiter.failedElsewhere('u:elsewhere@example.com', '192.0.2.200');
  assert.equal(limiter.size, 3, 'account, address and pair');
  for (let i = 0; i < 1000; i++) {
    const a = limiter.admit(`k:key${i % 50}`, `10.0.${i >> 8}.${i & 255}`);
    assert.ok(a.admitted);
    limiter.succeeded(a.ticket);
  }
  assert.equal(limiter.size, 3, 'still only the failure elsewhere');
  assert.equal(told, 0);
});

test('counters made by failures elsewhere are bounded like the rest, and a lockout reached elsewhere survives a flood', () => {
  const c = clock();
  const limiter = new BruteForceLimiter(noTarpit, c.now);
  for (let i = 0; i < 30; i++) limiter.failedElsewhere('u:target@example.com', `10.7.0.${i}`);
  for (let i = 0; i < 60_000; i++) limiter.failedElsewhere(`u:user${i}@example.com`, `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`);
  assert.ok(limiter.size <= bruteForceCountersMax, `${limiter.size} counters`);
  assert.equal(probe(limiter, 'u:target@example.com', '203.0.113.1'), 'account', 'kept aside and back, still locked');
});

// Issue 42: an address counts only within the caller that named it; a failure shared between nodes must keep its scope.
test('issue 42: a failure in a caller\'s scope is told with its scope, and counts elsewhere on that scope\'s counters only', () => {
  const heard: Array<[string, string]> = [];
  const here = new BruteForceLimiter(settings, clock().now);
  here.onFailure = (accountName, address) => heard.push([accountName, address]);
  assert.ok(fail(here, 'u:jane@example.com', '2001:DB8:1:2:3:4:5:6', 'ShopCaller1').admitted);
  assert.deepEqual(heard, [['u:jane@example.com', 'ShopCaller1\u00002001:db8:1:2::/64']], 'the scope as it is, the address as the counters use it');

  const there = new BruteForceLimiter(settings, clock().now);
  there.failedElsewhere(...heard[0]!);
  assert.equal(probe(there, 'u:jane@example.com', '2001:db8:1:2::9', 'ShopCaller1'), 250, "the pair's tarpit, in the shop's scope and /64");
  assert.equal(probe(there, 'u:jane@example.com', '2001:db8:1:2::9'), 0, 'not for a Basic caller from that address');
  assert.equal(probe(there, 'u:jane@example.com', '2001:db8:1:2::9', 'OtherCaller2'), 0, 'nor for another caller naming it');

  for (let i = 0; i < 100; i++) there.failedElsewhere(`u:nobody${i}@example.com`, 'ShopCaller1\u0000198.51.100.66');
  assert.deepEqual([0, 1, 2].map((i) => probe(there, `u:newcomer${i}@example.com`, '198.51.100.66', 'ShopCaller1')), [0, 250, 500], 'the address is slowed in its scope');
  assert.deepEqual([0, 1, 2].map((i) => probe(there, `u:stranger${i}@example.com`, '198.51.100.66', 'OtherCaller2')), [0, 0, 0], 'not in another caller\'s');
  assert.deepEqual([0, 1, 2].map((i) => probe(there, `u:admin${i}@example.com`, '198.51.100.66')), [0, 0, 0], 'nor for the admin API\'s Basic callers');

  // Account counters are not scoped: every caller's failures lock the account.
  const noTarpitThere = new BruteForceLimiter(noTarpit, clock().now);
  for (let i = 0; i < 30; i++) noTarpitThere.failedElsewhere('u:victim@example.com', `Caller${i % 3}\u0000198.51.100.${i}`);
  assert.equal(probe(noTarpitThere, 'u:victim@example.com', '203.0.113.1'), 'account');
});
