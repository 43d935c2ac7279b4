// An `ip_address` counts only within the caller that named it: one caller reaches neither another caller's pairs nor the admin API's, holds at most its share of the hash queue, and cannot push other pairs out of the trusted-pair table.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { HashPool } from '../src/auth/hash-pool.js';
import { BruteForceLimiter, type LimiterSettings } from '../src/auth/limiter.js';
import { hashQueueCallerShareMax } from '../src/config/limits.js';
import { InProcessApp, resultOf, type AppResponse } from './helpers/fault-app.js';
import { PowerLossStorage } from './helpers/fault-storage.js';

/** Five failures lock an account; no tarpit, so the tests do not wait on it. */
const limits: LimiterSettings = {
  failureFactor: 5, addressFailureFactor: 100, waitIncrementMs: 60_000, maxWaitMs: 15 * 60_000,
  failureResetMs: 12 * 3600_000, tarpitStepMs: 0, tarpitMaxMs: 0,
};
const callerPassword = 'caller-password-1';

let pool: HashPool;
let dirCount = 0;

before(() => {
  pool = new HashPool({ workers: 1, queueMax: 64, argon2: { memoryKiB: 1024, iterations: 1, parallelism: 1 } });
});

after(async () => {
  await pool.close();
});

async function openApp(extra: { pool?: HashPool; argon2?: { memoryKiB: number; iterations: number; parallelism: number }; limiter?: BruteForceLimiter } = {}): Promise<InProcessApp> {
  const storage = new PowerLossStorage();
  const dir = `/caller-scope/${++dirCount}`;
  await storage.mkdirp(dir);
  return InProcessApp.open({ storage, dir, pool: extra.pool ?? pool, argon2: extra.argon2, limits, limiter: extra.limiter });
}

/** A base User with only the authenticator role: a client application calling POST /authenticate. */
async function addCaller(app: InProcessApp, email: string): Promise<{ readonly username: string; readonly password: string }> {
  const base = app.state.meta!.baseApplication;
  resultOf(await app.post('/users/user', { email, password: callerPassword, applications: [base], roles: ['authenticator'] }));
  return { username: email, password: callerPassword };
}

interface Attempt {
  readonly caller: { readonly username: string; readonly password: string };
  readonly application: string;
  readonly type?: 'username' | 'apikey';
  readonly username: string;
  readonly password: string;
  readonly ip?: string;
}

function authenticate(app: InProcessApp, a: Attempt): Promise<AppResponse> {
  const body = { type: a.type ?? 'username', application: a.application, credential: { username: a.username, password: a.password }, ...(a.ip === undefined ? {} : { ip_address: a.ip }) };
  return app.post('/authenticate', body, { auth: a.caller });
}

async function authenticated(app: InProcessApp, a: Attempt): Promise<boolean> {
  return resultOf<{ authenticated: boolean }>(await authenticate(app, a)).authenticated;
}

// Issue 42, finding 2: ip_address was taken from any caller, so one caller's guesses landed on another caller's pairs.
test('issue 42: guesses naming another caller\'s end-user address do not take that pair\'s exemption away', async () => {
  const app = await openApp();
  try {
    const application = resultOf<{ application: { id: string } }>(await app.post('/applications/application', { name: 'shop' })).application.id;
    resultOf(await app.post('/users/user', { email: 'jane@example.com', password: 'jane-password', applications: [application] }));
    const shop = await addCaller(app, 'shop@example.com');
    const attacker = await addCaller(app, 'attacker@example.com');
    const jane = (caller: Attempt['caller'], password: string, ip?: string): Attempt => ({ caller, application, username: 'jane@example.com', password, ip });
    assert.equal(await authenticated(app, jane(shop, 'jane-password', '192.0.2.7')), true, 'Jane from home, through the shop: trusted');
    for (let i = 0; i < 5; i++) assert.equal(await authenticated(app, jane(attacker, `wrong-${i}`, `198.51.100.${i}`)), false);
    assert.equal(await authenticated(app, jane(shop, 'jane-password', '192.0.2.99')), false, 'the account is locked for a new address');
    for (let i = 0; i < 5; i++) assert.equal(await authenticated(app, jane(attacker, `named-${i}`, '192.0.2.7')), false);
    assert.equal(await authenticated(app, jane(shop, 'jane-password', '192.0.2.7')), true, 'Jane still gets in from home through the shop');
    // The same address named by the attacker's caller is another pair: not trusted, so locked.
    assert.equal(await authenticated(app, jane(attacker, 'jane-password', '192.0.2.7')), false);
  } finally {
    await app.close();
  }
});

// Issue 42, finding 2: rotating ip_address escaped the per-address share of the hash queue.
test('issue 42: a caller rotating ip_address holds at most its share of the hash queue; another caller and the admin API still get a hash', async () => {
  // Slow enough (~100 ms a hash) that no guess is answered, and gives its share back, before the last one asks.
  const argon2 = { memoryKiB: 8192, iterations: 10, parallelism: 1 };
  const queueMax = 16;
  const small = new HashPool({ workers: 1, queueMax, argon2 });
  const app = await openApp({ pool: small, argon2 });
  try {
    const application = resultOf<{ application: { id: string } }>(await app.post('/applications/application', { name: 'busy' })).application.id;
    const flooder = await addCaller(app, 'flooder@example.com');
    const other = await addCaller(app, 'other@example.com');
    const base = app.state.meta!.baseApplication;
    resultOf(await app.post('/users/user', { email: 'ops@example.com', password: 'ops-password-1', applications: [base] }));
    // Each caller's own credentials checked once, so that its calls below need a hash only for the end user's password.
    for (const caller of [flooder, other]) assert.equal(await authenticated(app, { caller, application, username: 'warm@example.com', password: 'x', ip: '203.0.113.1' }), false);
    const guess = (caller: Attempt['caller'], i: number, ip: string): Promise<AppResponse> => authenticate(app, { caller, application, username: `nobody-${i}@example.com`, password: `guess-${i}`, ip });
    const flood = Array.from({ length: queueMax }, (_, i) => guess(flooder, i, `198.51.${i >> 8}.${i & 255}`));
    const elsewhere = guess(other, 99, '198.51.100.2');
    // An admin from a new address: its password needs a hash too.
    const admin = app.get('/applications', { auth: { username: 'ops@example.com', password: 'ops-password-1' }, remoteAddress: '203.0.113.77' });
    const answers = await Promise.all(flood);
    assert.equal((await elsewhere).status, 200, 'another caller is not shed');
    assert.equal((await admin).status, 200, 'the admin API is not shed');
    const share = Math.floor(queueMax * hashQueueCallerShareMax);
    const shed = answers.filter((r) => r.status === 503);
    assert.ok(shed.length >= queueMax - share - 1, `${shed.length} of ${queueMax} shed (a caller's share is ${share} places)`);
    for (const r of shed) assert.deepEqual(r.headers.find(([k]) => k === 'Retry-After'), ['Retry-After', '1']);
  } finally {
    await app.close();
    await small.close();
  }
});

// Issue 42, finding 5: an authenticator with one valid account pushed other pairs out of the trusted-pair table with successes from many ip_address values.
test('issue 42: one caller succeeding with one account from many ip_address values pushes out neither the admin\'s trusted pair nor another caller\'s', async () => {
  // A small table (8 buckets of 8 slots), so that a few thousand successes would fill it many times over.
  const limiter = new BruteForceLimiter(limits, Date.now, 64);
  const app = await openApp({ limiter });
  try {
    const base = app.state.meta!.baseApplication;
    const application = resultOf<{ application: { id: string } }>(await app.post('/applications/application', { name: 'shop' })).application.id;
    resultOf(await app.post('/users/user', { email: 'ops@example.com', password: 'ops-password-1', applications: [base] }));
    resultOf(await app.post('/users/user', { email: 'jane@example.com', password: 'jane-password', applications: [application] }));
    const own = resultOf<{ user: { id: string } }>(await app.post('/users/user', { email: 'mallory@example.com', password: 'mallory-password', applications: [application] })).user.id;
    const key = resultOf<{ apikey: { id: string; secret: string } }>(await app.post(`/users/user/${own}/apikey`, { name: 'k' })).apikey;
    const shop = await addCaller(app, 'shop@example.com');
    const attacker = await addCaller(app, 'attacker@example.com');
    const ops = (password: string, remoteAddress: string): Promise<number> => app.get('/applications', { auth: { username: 'ops@example.com', password }, remoteAddress }).then((r) => r.status);
    const jane = (caller: Attempt['caller'], password: string, ip: string): Promise<boolean> => authenticated(app, { caller, application, username: 'jane@example.com', password, ip });
    assert.equal(await ops('ops-password-1', '203.0.113.5'), 200, 'the admin at its address: trusted');
    assert.equal(await jane(shop, 'jane-password', '192.0.2.7'), true, 'Jane through the shop: trusted');
    for (let i = 0; i < 2000; i++) {
      assert.equal(await authenticated(app, { caller: attacker, application, type: 'apikey', username: key.id, password: key.secret, ip: `10.${i >> 16}.${(i >> 8) & 255}.${i & 255}` }), true);
    }
    // Lock both accounts with guesses from elsewhere: only a trusted pair still gets in.
    for (let i = 0; i < 5; i++) {
      assert.equal(await ops(`wrong-${i}`, `198.51.100.${i}`), 401);
      assert.equal(await jane(attacker, `wrong-${i}`, `198.51.100.${i}`), false);
    }
    assert.equal(await ops('ops-password-1', '198.51.100.200'), 401, 'the admin\'s account is locked');
    assert.equal(await ops('ops-password-1', '203.0.113.5'), 200, 'but the admin\'s pair is still trusted');
    assert.equal(await jane(shop, 'jane-password', '192.0.2.8'), false, 'Jane\'s account is locked');
    assert.equal(await jane(shop, 'jane-password', '192.0.2.7'), true, 'but her pair through the shop is still trusted');
  } finally {
    await app.close();
  }
});
