// Callers known by their exact Authorization header: recognised without a full check only from the same peer, and only while the account, its verification and the limiter's view are unchanged.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { KnownCallers } from '../src/auth/known-callers.js';
import { HashPool } from '../src/auth/hash-pool.js';
import type { Ticket } from '../src/auth/limiter.js';
import type { User } from '../src/domain/entities.js';
import { InProcessApp, resultOf } from './helpers/fault-app.js';
import { PowerLossStorage } from './helpers/fault-storage.js';

let pool: HashPool;
let dirCount = 0;

before(() => {
  pool = new HashPool({ workers: 1, queueMax: 64, argon2: { memoryKiB: 1024, iterations: 1, parallelism: 1 } });
});

after(async () => {
  await pool.close();
});

async function openApp(addressFailureFactor = 100): Promise<InProcessApp> {
  const storage = new PowerLossStorage();
  const dir = `/known/${++dirCount}`;
  await storage.mkdirp(dir);
  return InProcessApp.open({
    storage, dir, pool,
    limits: { failureFactor: 30, addressFailureFactor, waitIncrementMs: 60_000, maxWaitMs: 15 * 60_000, failureResetMs: 12 * 3600_000, tarpitStepMs: 0, tarpitMaxMs: 0 },
  });
}

function basic(username: string, password: string): string {
  return `Basic ${Buffer.from(`${username}:${password}`, 'utf8').toString('base64')}`;
}

/** An admin in the base Application, with a password. */
async function addAdmin(app: InProcessApp, email: string, password: string): Promise<string> {
  const base = app.state.meta!.baseApplication;
  return resultOf<{ user: { id: string } }>(await app.post('/users/user', { email, password, applications: [base] })).user.id;
}

/** header passes from peer and is then known as userId; after change() (answered 200) it is neither known nor let in. */
async function refusedAfter(app: InProcessApp, header: string, peer: string, userId: string, change: () => Promise<{ status: number }>): Promise<void> {
  assert.equal((await app.get('/applications', { auth: header, remoteAddress: peer })).status, 200);
  assert.equal(app.authenticator.knownCaller(header, peer)?.id, userId);
  assert.equal((await change()).status, 200);
  assert.equal(app.authenticator.knownCaller(header, peer), undefined);
  assert.equal((await app.get('/applications', { auth: header, remoteAddress: peer })).status, 401);
}

test('KnownCallers: keyed by header and peer together, never holding the header; entries expire and are bounded', () => {
  let now = 1_000;
  const known = new KnownCallers({ ttlMs: 1_000, entriesMax: 2, now: () => now });
  const user = { id: 'u1' } as User;
  const ticket = {} as Ticket;
  const header = basic('ops@example.com', 'ops-password-1');
  const key = known.key(header, '192.0.2.1')!;
  assert.equal(known.key('', '192.0.2.1'), undefined, 'no header');
  assert.equal(known.key(`Basic ${'A'.repeat(9000)}`, '192.0.2.1'), undefined, 'longer than Basic credentials may be');
  assert.notEqual(known.key(header, '192.0.2.2'), key, 'another peer is another entry');
  assert.notEqual(known.key(basic('ops@example.com', 'ops-password-2'), '192.0.2.1'), key);
  assert.equal(known.key(header, '192.0.2.1'), key);
  assert.ok(!key.includes('ops-password-1') && !key.includes(header.slice(6)));
  known.remember(key, user, true, ticket);
  assert.equal(known.get(key)?.user, user);
  now += 999;
  assert.ok(known.get(key) !== undefined);
  now += 1;
  assert.equal(known.get(key), undefined, 'expired');
  assert.equal(known.size, 0);
  for (const peer of ['a', 'b', 'c']) known.remember(known.key(header, peer)!, user, true, ticket);
  assert.equal(known.size, 2);
  assert.equal(known.get(known.key(header, 'a')!), undefined, 'the oldest went first');
});

test('a caller that passed is known by its header from the same peer only, and callers of it are answered alike', async () => {
  const app = await openApp();
  try {
    const id = await addAdmin(app, 'ops@example.com', 'ops-password-1');
    const header = basic('ops@example.com', 'ops-password-1');
    assert.equal(app.authenticator.knownCaller(header, '192.0.2.1'), undefined, 'not before a check has passed');
    const first = await app.get('/applications', { auth: header, remoteAddress: '192.0.2.1' });
    assert.equal(first.status, 200);
    assert.equal(app.authenticator.knownCaller(header, '192.0.2.1')?.id, id);
    assert.equal(app.authenticator.knownCaller(header, '192.0.2.2'), undefined, 'another peer takes the full check');
    const second = await app.get('/applications', { auth: header, remoteAddress: '192.0.2.1' });
    assert.equal(second.status, 200);
    assert.equal(second.body.replace(/"elapsed":[0-9.]+/, ''), first.body.replace(/"elapsed":[0-9.]+/, ''));
    // A wrong password is another header: it takes the full check and fails.
    assert.equal((await app.get('/applications', { auth: basic('ops@example.com', 'ops-password-2'), remoteAddress: '192.0.2.1' })).status, 401);
  } finally {
    await app.close();
  }
});

test('a new password refuses the old header at once, from the peer it was known at too', async () => {
  const app = await openApp();
  try {
    const id = await addAdmin(app, 'rotate@example.com', 'old-password-1');
    await refusedAfter(app, basic('rotate@example.com', 'old-password-1'), '192.0.2.5', id, () => app.put(`/users/user/${id}`, { password: 'new-password-1' }));
    assert.equal((await app.get('/applications', { auth: basic('rotate@example.com', 'new-password-1'), remoteAddress: '192.0.2.5' })).status, 200);
  } finally {
    await app.close();
  }
});

test('a known caller is refused once its address is locked out, like any other attempt from there', async () => {
  const app = await openApp(3);
  try {
    await addAdmin(app, 'ops@example.com', 'ops-password-1');
    const header = basic('ops@example.com', 'ops-password-1');
    assert.equal((await app.get('/applications', { auth: header, remoteAddress: '192.0.2.9' })).status, 200);
    assert.ok(app.authenticator.knownCaller(header, '192.0.2.9') !== undefined);
    for (let i = 0; i < 3; i++) {
      assert.equal((await app.get('/applications', { auth: basic(`nobody-${i}@example.com`, 'guess-1234'), remoteAddress: '192.0.2.9' })).status, 401);
    }
    assert.equal(app.authenticator.knownCaller(header, '192.0.2.9'), undefined);
    assert.equal((await app.get('/applications', { auth: header, remoteAddress: '192.0.2.9' })).status, 401, 'the address is locked');
    assert.equal((await app.get('/applications', { auth: header, remoteAddress: '192.0.2.10' })).status, 200, 'elsewhere it is not');
  } finally {
    await app.close();
  }
});

test('an API Key caller is known the same way, and its key DISABLED refuses it at once', async () => {
  const app = await openApp();
  try {
    const id = await addAdmin(app, 'robot@example.com', 'robot-password-1');
    const key = resultOf<{ apikey: { id: string; secret: string } }>(await app.post(`/users/user/${id}/apikey`, { name: 'ci' })).apikey;
    await refusedAfter(app, basic(key.id, key.secret), '192.0.2.20', id, () => app.put(`/users/user/${id}/apikey/${key.id}`, { status: 'DISABLED' }));
  } finally {
    await app.close();
  }
});
