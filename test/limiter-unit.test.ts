// The brute-force limiter on a fake clock: reservations before evaluation, Keycloak-like lockout steps, per-address lockouts, the tarpit, the owner's exemption from a spray, expiry and bounds.

import assert from 'node:assert/strict';
import { isIPv6 } from 'node:net';
import { test } from 'node:test';
import { addressKey, BruteForceLimiter, type Admission } from '../src/auth/limiter.js';
import { bruteForceAddressBacklogMs, bruteForceCountersMax } from '../src/config/limits.js';
import { trustedPairRecordBytes } from '../src/auth/trusted-pairs.js';
import { clock, fail, keycloakLike } from './helpers/limiter-kit.js';

test('200 concurrent wrong passwords against one account: at most the failure factor are admitted for evaluation', () => {
  const limiter = new BruteForceLimiter(keycloakLike, clock().now);
  // All 200 arrive before any is evaluated: each is admitted or refused synchronously.
  const admissions = Array.from({ length: 200 }, (_, i) => limiter.admit('u:victim@example.com', `198.51.100.${i % 250}`));
  const admitted = admissions.filter((a) => a.admitted);
  assert.equal(admitted.length, 30);
  for (const a of admitted) if (a.admitted) limiter.failed(a.ticket);
  assert.equal(limiter.admit('u:victim@example.com', '203.0.113.1').admitted, false, 'locked once they have failed');
  // From one address too (the pair's own count does not add to it).
  const single = new BruteForceLimiter(keycloakLike, clock().now);
  assert.equal(Array.from({ length: 200 }, () => single.admit('u:victim@example.com', '192.0.2.7')).filter((a) => a.admitted).length, 30);
});

test('lockouts grow by the wait increment per failure factor, up to the max wait, and admit another factor after each', () => {
  const c = clock();
  const limiter = new BruteForceLimiter({ ...keycloakLike, tarpitStepMs: 0 }, c.now);
  const waits: number[] = [];
  for (let step = 1; step <= 18; step++) {
    for (let i = 0; i < 30; i++) assert.equal(fail(limiter, 'u:a@example.com', `10.0.${step}.${i}`).admitted, true, `step ${step}, attempt ${i}`);
    // Locked now: find when it opens again, to the second.
    let waited = 0;
    for (let probe = limiter.admit('u:a@example.com', '10.9.9.9'); ; probe = limiter.admit('u:a@example.com', '10.9.9.9')) {
      if (probe.admitted) {
        // Open again: hand the probe back without counting it.
        limiter.released(probe.ticket);
        break;
      }
      c.advance(1000);
      waited += 1000;
    }
    waits.push(waited);
  }
  assert.deepEqual(waits.slice(0, 5), [60_000, 120_000, 180_000, 240_000, 300_000]);
  assert.ok(waits.slice(14).every((w) => w === 15 * 60_000), `capped at 15 min: ${waits.slice(14)}`);
});

/** Admits an attempt and hands it back uncounted: its delay, or 'refused'. */
function turn(limiter: BruteForceLimiter, account: string, address: string): number | 'refused' {
  const a = limiter.admit(account, address);
  if (!a.admitted) return 'refused';
  limiter.released(a.ticket);
  return a.delayMs;
}

// Issue 23, part 3 ("address lockout as a weapon"): 100 guesses for accounts that do not exist locked out everyone at that address.
test('an address that fails against many accounts is slowed, never locked: its attempts are spaced, one per step, and a trusted pair there is exempt', () => {
  const c = clock();
  const limiter = new BruteForceLimiter(keycloakLike, c.now);
  const admin = limiter.admit('u:admin@example.com', '198.51.100.66');
  assert.ok(admin.admitted);
  limiter.succeeded(admin.ticket);
  for (let i = 0; i < 100; i++) assert.ok(fail(limiter, `u:nobody${i}@example.com`, '198.51.100.66').admitted);
  // A newcomer at that address is let through in turn: one attempt per 250 ms, no refusal.
  assert.deepEqual([0, 1, 2].map((i) => turn(limiter, `u:newcomer${i}@example.com`, '198.51.100.66')), [0, 250, 500]);
  assert.equal(turn(limiter, 'u:admin@example.com', '198.51.100.66'), 0, 'the admin who succeeded there is not slowed');
  assert.equal(turn(limiter, 'u:newcomer0@example.com', '198.51.100.67'), 0, 'another address is not slowed');
  // Only a line longer than the backlog is refused, like a wrong password; the admin still gets through.
  const turns: Array<number | 'refused'> = [];
  for (let i = 0; i < 200; i++) turns.push(turn(limiter, `u:queued${i}@example.com`, '198.51.100.66'));
  const refusedAt = turns.indexOf('refused');
  assert.equal(refusedAt, bruteForceAddressBacklogMs / 250 - 2, `${turns.slice(0, 4)} ... refused at ${refusedAt}`);
  const refused = limiter.admit('u:queued@example.com', '198.51.100.66');
  assert.deepEqual(refused.admitted ? 'admitted' : refused.lockedBy, 'address');
  assert.equal(turn(limiter, 'u:admin@example.com', '198.51.100.66'), 0, 'the admin is exempt from the line too');
  // The spacing doubles per factor reached, up to the tarpit's cap; waiting out the line opens it again.
  c.advance(bruteForceAddressBacklogMs + 1000);
  for (let i = 0; i < 100; i++) fail(limiter, `u:more${i}@example.com`, '198.51.100.66');
  c.advance(bruteForceAddressBacklogMs + 1000);
  assert.deepEqual([turn(limiter, 'u:x@example.com', '198.51.100.66'), turn(limiter, 'u:y@example.com', '198.51.100.66')], [0, 500]);
});

test('the tarpit: each failure of an (account, address) pair doubles the delay before its next attempt, up to the cap; a success resets it', () => {
  const limiter = new BruteForceLimiter(keycloakLike, clock().now);
  const delays: number[] = [];
  for (let i = 0; i < 8; i++) {
    const a = limiter.admit('u:t@example.com', '192.0.2.1');
    assert.ok(a.admitted);
    delays.push(a.delayMs);
    limiter.failed(a.ticket);
  }
  assert.deepEqual(delays, [0, 250, 500, 1000, 2000, 4000, 5000, 5000]);
  const other = limiter.admit('u:t@example.com', '192.0.2.2');
  assert.ok(other.admitted && other.delayMs === 0, 'another address is not slowed by this pair');
  limiter.released(other.ticket);
  const ok = limiter.admit('u:t@example.com', '192.0.2.1');
  assert.ok(ok.admitted);
  limiter.succeeded(ok.ticket);
  const after = limiter.admit('u:t@example.com', '192.0.2.1');
  assert.ok(after.admitted && after.delayMs === 0);
});

test('a spray from other addresses locks the account, but not for the owner at an address that succeeded before', () => {
  const c = clock();
  const limiter = new BruteForceLimiter({ ...keycloakLike, tarpitStepMs: 0 }, c.now);
  const home = limiter.admit('u:owner@example.com', '203.0.113.10');
  assert.ok(home.admitted);
  limiter.succeeded(home.ticket);
  for (let i = 0; i < 300; i++) fail(limiter, 'u:owner@example.com', `198.51.100.${i % 200}`);
  assert.equal(limiter.admit('u:owner@example.com', '198.51.100.250').admitted, false, 'the account is locked for everyone else');
  const owner = limiter.admit('u:owner@example.com', '203.0.113.10');
  assert.ok(owner.admitted, 'the owner gets in from home at once');
  limiter.succeeded(owner.ticket);
  // From a new address the owner waits out the lockout, which never exceeds the max wait.
  assert.equal(limiter.admit('u:owner@example.com', '192.0.2.200').admitted, false);
  c.advance(15 * 60_000);
  const away = limiter.admit('u:owner@example.com', '192.0.2.200');
  assert.ok(away.admitted, 'at most the max wait later');
  limiter.succeeded(away.ticket);
});

test('the exemption covers only a few guesses, even concurrent ones, and still counts them on the account', () => {
  const limiter = new BruteForceLimiter({ ...keycloakLike, tarpitStepMs: 0 }, clock().now);
  const first = limiter.admit('u:owner@example.com', '203.0.113.10');
  assert.ok(first.admitted);
  limiter.succeeded(first.ticket);
  // 200 concurrent guesses from the trusted address: no more than the account's factor in all.
  const admissions = Array.from({ length: 200 }, () => limiter.admit('u:owner@example.com', '203.0.113.10'));
  assert.equal(admissions.filter((a) => a.admitted).length, 30);
  for (const a of admissions) if (a.admitted) limiter.failed(a.ticket);
  assert.equal(limiter.admit('u:owner@example.com', '203.0.113.10').admitted, false, 'five failures end the exemption; the account is locked');
});

test('counters expire after the failure reset time, and the table never grows past its bound', () => {
  const c = clock();
  const limiter = new BruteForceLimiter({ ...keycloakLike, tarpitStepMs: 0 }, c.now);
  for (let i = 0; i < 30; i++) fail(limiter, 'u:x@example.com', `10.1.0.${i}`);
  c.advance(15 * 60_000);
  assert.ok(fail(limiter, 'u:x@example.com', '10.1.1.1').admitted, 'after the lockout, more attempts');
  c.advance(12 * 3600_000);
  // Forgotten: a full factor again.
  let admitted = 0;
  for (let i = 0; i < 40; i++) if (fail(limiter, 'u:x@example.com', `10.2.0.${i}`).admitted) admitted++;
  assert.equal(admitted, 30);

  const big = new BruteForceLimiter({ ...keycloakLike, tarpitStepMs: 0 }, c.now);
  for (let i = 0; i < 60_000; i++) fail(big, `u:user${i}@example.com`, `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`);
  assert.ok(big.size <= bruteForceCountersMax, `${big.size} counters`);
});

test('addresses count by IPv4, by the /64 of IPv6, IPv4-mapped as IPv4, names as lowercase text', () => {
  assert.equal(addressKey('203.0.113.9'), '203.0.113.9');
  assert.equal(addressKey('2001:db8:1:2:aaaa::1'), '2001:db8:1:2::/64');
  assert.equal(addressKey('2001:0db8:0001:0002:ffff:ffff:ffff:ffff'), '2001:db8:1:2::/64');
  assert.equal(addressKey('[2001:db8:1:2::5]'), '2001:db8:1:2::/64');
  assert.equal(addressKey('::ffff:198.51.100.3'), '198.51.100.3');
  assert.equal(addressKey('Proxy.Example'), 'proxy.example');
});

// Issue 23, finding 1: every IPv4 client written in full form, and ::1, shared the one bucket 0:0:0:0::/64.
test('an IPv4-mapped address counts as its IPv4 address in every textual form, and ::1 as itself', () => {
  for (const form of ['::ffff:127.0.0.2', '0000:0000:0000:0000:0000:ffff:7f00:0002', '::ffff:7f00:2', '0:0:0:0:0:FFFF:127.0.0.2', '[::ffff:7f00:2]']) {
    assert.equal(addressKey(form), '127.0.0.2', form);
  }
  assert.equal(addressKey('::1'), '::1');
  assert.equal(addressKey('0000:0000:0000:0000:0000:0000:0000:0001'), '::1');
  assert.equal(addressKey('::2'), '0:0:0:0::/64');
  assert.notEqual(addressKey('0000:0000:0000:0000:0000:ffff:7f00:0002'), addressKey('0000:0000:0000:0000:0000:ffff:7f00:0003'));
  assert.notEqual(addressKey('::ffff:7f00:1'), addressKey('::1'));
});

test('zero factors turn the lockouts off; a released attempt counts for nothing', () => {
  const limiter = new BruteForceLimiter({ ...keycloakLike, failureFactor: 0, addressFailureFactor: 0, tarpitStepMs: 0 }, clock().now);
  for (let i = 0; i < 500; i++) assert.ok(fail(limiter, 'u:y@example.com', '192.0.2.9').admitted);
  const on = new BruteForceLimiter({ ...keycloakLike, tarpitStepMs: 0 }, clock().now);
  for (let i = 0; i < 500; i++) {
    const a = on.admit('u:z@example.com', '192.0.2.9');
    assert.ok(a.admitted);
    on.released(a.ticket);
  }
  // Nor does it leave counters behind (a flood of shed attempts must not fill the table), unless they hold failures.
  assert.equal(on.size, 0);
  for (let i = 0; i < 500; i++) {
    const a = on.admit(`u:shed-${i}@example.com`, `198.51.100.${i % 250}`);
    assert.ok(a.admitted);
    on.released(a.ticket);
  }
  assert.equal(on.size, 0);
  fail(on, 'u:z@example.com', '192.0.2.9');
  const held = on.size;
  const a = on.admit('u:z@example.com', '192.0.2.9');
  assert.ok(a.admitted);
  on.released(a.ticket);
  assert.equal(on.size, held, 'the failure is still counted');
  for (let i = 0; i < 29; i++) fail(on, 'u:z@example.com', '192.0.2.9');
  assert.equal(on.admit('u:z@example.com', '192.0.2.10').admitted, false, 'locked at 30 failures: the released attempt wiped none of them');
});

test('acquire: concurrent right passwords all get a slot in turn; concurrent wrong ones still evaluate only the allowance', async () => {
  const limiter = new BruteForceLimiter({ ...keycloakLike, tarpitStepMs: 0 }, clock().now);
  let evaluated = 0;
  const attempt = async (right: boolean, i: number): Promise<boolean> => {
    const a = await limiter.acquire('u:service@example.com', `10.3.0.${i % 200}`);
    if (!a.admitted) return false;
    evaluated++;
    await new Promise((resolve) => setImmediate(resolve)); // the evaluation takes a while
    if (right) limiter.succeeded(a.ticket);
    else limiter.failed(a.ticket);
    return right;
  };
  const rights = await Promise.all(Array.from({ length: 200 }, (_, i) => attempt(true, i)));
  assert.equal(rights.filter(Boolean).length, 200, 'a busy service account is never locked out by its own concurrency');
  evaluated = 0;
  const other = new BruteForceLimiter({ ...keycloakLike, tarpitStepMs: 0 }, clock().now);
  const wrongs = await Promise.all(Array.from({ length: 200 }, async (_, i) => {
    const a = await other.acquire('u:service@example.com', `10.4.0.${i % 200}`);
    if (!a.admitted) return 'refused';
    evaluated++;
    await new Promise((resolve) => setImmediate(resolve));
    other.failed(a.ticket);
    return 'failed';
  }));
  assert.equal(evaluated, 30);
  assert.equal(wrongs.filter((w) => w === 'refused').length, 170);
});

test('standing: a pair that succeeded may pass again without a decision only while no decision would weigh anything', () => {
  const c = clock();
  const limiter = new BruteForceLimiter({ ...keycloakLike, addressFailureFactor: 3 }, c.now);
  const succeed = (account: string, address: string): Admission & { admitted: true } => {
    const a = limiter.admit(account, address);
    assert.ok(a.admitted);
    limiter.succeeded(a.ticket);
    return a;
  };
  const owner = succeed('u:owner@example.com', '192.0.2.1');
  assert.equal(limiter.standing(owner.ticket), true);

  // The pair's own failure: its next attempt would be tarpitted.
  fail(limiter, 'u:owner@example.com', '192.0.2.1');
  assert.equal(limiter.standing(owner.ticket), false);
  c.advance(12 * 3600_000);
  const again = succeed('u:owner@example.com', '192.0.2.1');
  assert.equal(limiter.standing(again.ticket), true);

  // Its address slowed by failures against other accounts: the pair succeeded there, so it is exempt.
  for (let i = 0; i < 3; i++) fail(limiter, `u:other-${i}@example.com`, '192.0.2.1');
  assert.equal(limiter.standing(again.ticket), true);

  // Its account locked by a spray from elsewhere.
  const sprayed = succeed('u:sprayed@example.com', '192.0.2.2');
  for (let i = 0; i < 30; i++) fail(limiter, 'u:sprayed@example.com', `198.51.100.${i}`);
  assert.equal(limiter.standing(sprayed.ticket), false);

  // A counter made since for a key the ticket found none for: it could be locked unseen.
  const clean = succeed('u:clean@example.com', '192.0.2.4');
  assert.equal(limiter.standing(clean.ticket), true);
  fail(limiter, 'u:clean@example.com', '198.51.100.77');
  assert.equal(limiter.standing(clean.ticket), false);

  // Its counters pushed out of a full table by failures elsewhere (successes make none): a new counter for the same key could be locked unseen.
  fail(limiter, 'u:quiet@example.com', '192.0.2.3');
  c.advance(1000);
  const quiet = succeed('u:quiet@example.com', '192.0.2.3');
  assert.equal(limiter.standing(quiet.ticket), true);
  for (let i = 0; i < 40_000; i++) fail(limiter, `u:user${i}@example.com`, `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`);
  assert.equal(limiter.standing(quiet.ticket), false);
});

// Issue 24: every attempt made three counters, success or not, so distinct traffic filled the table and paid an eviction per request.
test('a success with no failure on record makes, writes and drops no counter; an attempt still being evaluated is counted in flight', () => {
  const limiter = new BruteForceLimiter(keycloakLike, clock().now);
  for (let i = 0; i < 1000; i++) {
    const a = limiter.admit(`k:key${i % 50}`, `10.0.${i >> 8}.${i & 255}`);
    assert.ok(a.admitted);
    limiter.succeeded(a.ticket);
  }
  assert.equal(limiter.size, 0);
  // Admitted and not settled in the same turn (a hash to wait for): counted as soon as anything else is asked.
  const first = limiter.admit('u:slow@example.com', '192.0.2.50');
  assert.equal(limiter.size, 0, 'not yet: it may be settled before anyone asks');
  const second = limiter.admit('u:other@example.com', '192.0.2.51');
  assert.ok(first.admitted && second.admitted);
  assert.equal(limiter.size, 3, "the first attempt's counters, in flight");
  limiter.succeeded(first.ticket);
  limiter.succeeded(second.ticket);
  assert.equal(limiter.size, 0, 'blank once settled: dropped');
  // A failure is recorded on all three.
  fail(limiter, 'u:slow@example.com', '192.0.2.50');
  assert.equal(limiter.size, 3);
});

test('a table full of counters in use still takes new ones, and stays within its bound plus the counters in use', () => {
  const limiter = new BruteForceLimiter({ ...keycloakLike, tarpitStepMs: 0 }, clock().now);
  // 40 attempts held in flight, their counters the oldest in the table.
  const held = Array.from({ length: 40 }, (_, i) => limiter.admit(`u:held${i}@example.com`, `192.0.2.${i}`));
  for (let i = 0; i < 60_000; i++) fail(limiter, `u:user${i}@example.com`, `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`);
  assert.ok(limiter.size <= bruteForceCountersMax + 3 * held.length, `${limiter.size} counters`);
  for (const a of held) if (a.admitted) limiter.failed(a.ticket);
  assert.equal(limiter.admit('u:held0@example.com', '192.0.2.0').admitted, true);
});

// Issue 23, part 3: a counter pushed out of the full table came back blank, so the account's next lockout was the first step again.
test('counters pushed out by a flood keep their lockout and slowing steps', () => {
  const c = clock();
  const limiter = new BruteForceLimiter(keycloakLike, c.now);
  for (let step = 1; step <= 2; step++) {
    for (let i = 0; i < 30; i++) fail(limiter, 'u:target@example.com', `10.7.${step}.${i}`);
    c.advance(step * 60_000);
  }
  for (let i = 0; i < 100; i++) fail(limiter, `u:nobody${i}@example.com`, '198.51.100.9');
  // A flood of fresh counters (accounts, addresses and pairs of logins that succeed) pushes both out of the table.
  for (let i = 0; i < 40_000; i++) {
    const a = limiter.admit(`u:flood${i}@example.com`, `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`);
    if (a.admitted) limiter.succeeded(a.ticket);
  }
  assert.ok(limiter.size <= bruteForceCountersMax);
  c.advance(bruteForceAddressBacklogMs + 1000);
  for (let i = 0; i < 30; i++) fail(limiter, 'u:target@example.com', `10.8.0.${i}`);
  c.advance(2 * 60_000 + 1000);
  assert.equal(turn(limiter, 'u:target@example.com', '10.9.0.1'), 'refused', 'the third lockout step (3 min), not the first again');
  c.advance(60_000);
  assert.equal(turn(limiter, 'u:target@example.com', '10.9.0.1'), 0);
  assert.deepEqual([turn(limiter, 'u:a@example.com', '198.51.100.9'), turn(limiter, 'u:b@example.com', '198.51.100.9')], [0, 250], 'the address is still slowed');
});

test('trusted: a pair is known good after a success until it fails; the trusted pairs survive in an export under the same key', () => {
  const c = clock();
  const limiter = new BruteForceLimiter(keycloakLike, c.now);
  const ok = limiter.admit('u:owner@example.com', '203.0.113.10');
  assert.ok(ok.admitted);
  assert.equal(limiter.trusted(ok.ticket), false, 'not before a success');
  limiter.succeeded(ok.ticket);
  const again = limiter.admit('u:owner@example.com', '203.0.113.10');
  assert.ok(again.admitted);
  assert.equal(limiter.trusted(again.ticket), true);
  limiter.failed(again.ticket);
  const after = limiter.admit('u:owner@example.com', '203.0.113.10');
  assert.ok(after.admitted);
  assert.equal(limiter.trusted(after.ticket), false, 'not after a failure');
  limiter.succeeded(after.ticket);

  const exported = limiter.exportTrusted();
  assert.equal(exported.length, trustedPairRecordBytes, 'one pair');
  const restarted = new BruteForceLimiter(keycloakLike, c.now);
  assert.equal(restarted.importTrusted(exported), 1);
  // Exported by a limiter with a random key, imported by one with another: not found.
  for (let i = 0; i < 30; i++) fail(restarted, 'u:owner@example.com', `198.51.100.${i}`);
  assert.equal(turn(restarted, 'u:owner@example.com', '203.0.113.10'), 'refused', 'another trust key finds no pair');

  const key = Buffer.alloc(8, 7);
  const first = new BruteForceLimiter(keycloakLike, c.now);
  first.useTrustKey(key);
  const home = first.admit('u:owner@example.com', '203.0.113.10');
  assert.ok(home.admitted);
  first.succeeded(home.ticket);
  const second = new BruteForceLimiter(keycloakLike, c.now);
  second.useTrustKey(key);
  assert.equal(second.importTrusted(first.exportTrusted()), 1);
  for (let i = 0; i < 30; i++) fail(second, 'u:owner@example.com', `198.51.100.${i}`);
  for (let i = 0; i < 100; i++) fail(second, `u:nobody${i}@example.com`, '203.0.113.10');
  assert.equal(turn(second, 'u:owner@example.com', '198.51.100.200'), 'refused', 'the account is locked');
  assert.equal(turn(second, 'u:owner@example.com', '203.0.113.10'), 0, 'but not for the pair trusted before the restart');
  assert.equal(second.exportTrusted().length, trustedPairRecordBytes);
});

/** The address key as it was computed before the plain-form reader: node's isIPv6, then split and join (the model for the test below). */
function addressKeyModel(raw: string): string {
  const text = raw.trim().toLowerCase().slice(0, 256);
  if (!text.includes(':')) return text;
  const unbracketed = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  if (!isIPv6(unbracketed)) return text;
  const parse = (part: string): number[] => (part === '' ? [] : part.split(':').flatMap((piece) => {
    if (!piece.includes('.')) return [parseInt(piece, 16)];
    const [a, b, c, d] = piece.split('.').map(Number) as [number, number, number, number];
    return [(a << 8) | b, (c << 8) | d];
  }));
  const gap = unbracketed.indexOf('::');
  const groups = gap === -1 ? parse(unbracketed) : (() => {
    const left = parse(unbracketed.slice(0, gap));
    const right = parse(unbracketed.slice(gap + 2));
    return [...left, ...Array<number>(8 - left.length - right.length).fill(0), ...right];
  })();
  let zerosFirst = 0;
  while (zerosFirst < 8 && groups[zerosFirst] === 0) zerosFirst++;
  if (zerosFirst === 5 && groups[5] === 0xffff) return `${groups[6]! >> 8}.${groups[6]! & 255}.${groups[7]! >> 8}.${groups[7]! & 255}`;
  if (zerosFirst === 7 && groups[7] === 1) return '::1';
  return `${groups.slice(0, 4).map((g) => g.toString(16)).join(':')}::/64`;
}

// Issue 24: every IPv6 address was read with node's regular expression and split into arrays, per attempt.
test('address keys of IPv6 text, valid or not, are those of node\'s isIPv6 and a full parse (seeded random texts)', () => {
  let seed = 2424;
  const random = (n: number): number => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed % n; };
  const pick = (alphabet: string): string => alphabet[random(alphabet.length)]!;
  const group = (): string => Array.from({ length: 1 + random(5) }, () => pick('0123456789abcdefABCDEF')).join('');
  const texts: string[] = ['::', '::1', '1::', '::ffff:102:304', '::ffff:1.2.3.4', '[2001:db8::1]', 'fe80::1%eth0', '1:2:3:4:5:6:7::', '::2:3:4:5:6:7:8', '1:2:3:4:5:6:7:8::'];
  for (let i = 0; i < 20_000; i++) {
    if (random(3) === 0) {
      texts.push(Array.from({ length: random(40) }, () => pick('0123456789abcdefABCDEF:::::.%[] ')).join(''));
      continue;
    }
    const groups = Array.from({ length: 1 + random(9) }, group);
    if (random(2) === 0) groups.splice(random(groups.length + 1), 0, '');
    if (random(8) === 0) groups[groups.length - 1] = '192.0.2.1';
    texts.push(groups.join(':').replace(/^:(?!:)/, '::').replace(/(?<!:):$/, '::'));
  }
  for (const text of texts) assert.equal(addressKey(text), addressKeyModel(text), `seed 2424: ${JSON.stringify(text)}`);
  assert.ok(texts.filter((t) => addressKey(t).endsWith('::/64')).length > 2000, 'many valid ones among them');
});

// Issue 42, finding 2: an address named by a caller of POST /authenticate reached the pairs of the admin API's Basic callers.
test('issue 42: counters, pairs and trust are per (scope, address): a caller naming the admin\'s address reaches none of the admin\'s', () => {
  const limiter = new BruteForceLimiter({ ...keycloakLike, tarpitStepMs: 0 }, clock().now);
  const home = limiter.admit('u:admin@example.com', '127.0.0.1');
  assert.ok(home.admitted);
  limiter.succeeded(home.ticket);
  for (let i = 0; i < 30; i++) assert.ok(fail(limiter, 'u:admin@example.com', `198.51.100.${i}`, 'Attacker1').admitted);
  for (let i = 0; i < 10; i++) assert.equal(fail(limiter, 'u:admin@example.com', '127.0.0.1', 'Attacker1').admitted, false, 'not the admin\'s pair: locked');
  for (let i = 0; i < 10; i++) assert.equal(fail(limiter, 'u:admin@example.com', '::ffff:127.0.0.1', 'Attacker1').admitted, false, 'in any spelling');
  const again = limiter.admit('u:admin@example.com', '127.0.0.1');
  assert.ok(again.admitted, 'the admin from its own peer is still exempt');
  assert.equal(limiter.trusted(again.ticket), true);
  limiter.released(again.ticket);

  // A success in a caller's scope trusts that scope's pair only.
  const shop = limiter.admit('u:jane@example.com', '192.0.2.7', 'Shop1');
  assert.ok(shop.admitted);
  limiter.succeeded(shop.ticket);
  for (let i = 0; i < 30; i++) fail(limiter, 'u:jane@example.com', `198.51.100.${i}`, 'Attacker1');
  assert.equal(limiter.admit('u:jane@example.com', '192.0.2.7', 'Attacker1').admitted, false, 'another caller naming the address');
  assert.equal(limiter.admit('u:jane@example.com', '192.0.2.7').admitted, false, 'a Basic caller at the address');
  const jane = limiter.admit('u:jane@example.com', '192.0.2.7', 'Shop1');
  assert.ok(jane.admitted, 'the shop\'s pair');
  limiter.released(jane.ticket);
});
