// The limiter in the service: both credential types and Basic credentials are counted before anything is evaluated, a locked account answers exactly like a wrong password, a spray does not keep the owner out, and a flood cannot starve cached credentials of the fast path.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { HashPool, overloaded } from '../src/auth/hash-pool.js';
import type { LimiterSettings } from '../src/auth/limiter.js';
import type { AuditEntry } from '../src/service/audit.js';
import { InProcessApp, resultOf, type AppResponse } from './helpers/fault-app.js';
import { PowerLossStorage } from './helpers/fault-storage.js';

const limits: LimiterSettings = {
  failureFactor: 30, addressFailureFactor: 100, waitIncrementMs: 60_000, maxWaitMs: 15 * 60_000,
  failureResetMs: 12 * 3600_000, tarpitStepMs: 0, tarpitMaxMs: 0,
};

let pool: HashPool;
let app: InProcessApp;
let audits: AuditEntry[] = [];
let appId: string;
let tenantPassword: string;
let keyId: string;
let keySecret: string;
let dirCount = 0;

async function openApp(extra: { limits?: LimiterSettings; pool?: HashPool; argon2?: { memoryKiB: number; iterations: number; parallelism: number } } = {}): Promise<InProcessApp> {
  const storage = new PowerLossStorage();
  const dir = `/limiter/${++dirCount}`;
  await storage.mkdirp(dir);
  return InProcessApp.open({ storage, dir, pool: extra.pool ?? pool, argon2: extra.argon2, limits: extra.limits ?? limits, audit: (e) => audits.push(e) });
}

before(async () => {
  pool = new HashPool({ workers: 2, queueMax: 512, argon2: { memoryKiB: 1024, iterations: 1, parallelism: 1 } });
  app = await openApp();
  appId = resultOf<{ application: { id: string } }>(await app.post('/applications/application', { name: 'tenant app' })).application.id;
  tenantPassword = 'tenant-password-1';
  const user = resultOf<{ user: { id: string } }>(await app.post('/users/user', { email: 'tenant@example.com', password: tenantPassword, applications: [appId] })).user;
  const key = resultOf<{ apikey: { id: string; secret: string } }>(await app.post(`/users/user/${user.id}/apikey`, { name: 'k' })).apikey;
  keyId = key.id;
  keySecret = key.secret;
});

after(async () => {
  await app.close();
  await pool.close();
});

function authenticate(a: InProcessApp, type: 'username' | 'apikey', username: string, password: string, ip: string): Promise<AppResponse> {
  return a.post('/authenticate', { type, application: appId, credential: { username, password }, ip_address: ip });
}

/** The answer with its timing taken out: what must be byte-identical between two answers. */
function shape(res: AppResponse): string {
  return JSON.stringify({ status: res.status, headers: res.headers, body: res.body.replace(/"elapsed":[0-9.]+/, '"elapsed":0') });
}

function outcomes(action: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const a of audits) if (a.action === action) counts.set(a.outcome, (counts.get(a.outcome) ?? 0) + 1);
  return counts;
}

test('200 concurrent wrong passwords against one account evaluate 30 (the failure factor), and every answer is the same', async () => {
  audits = [];
  const answers = await Promise.all(Array.from({ length: 200 }, (_, i) => authenticate(app, 'username', 'tenant@example.com', `wrong-${i}`, `198.51.100.${i}`)));
  const counted = outcomes('authenticate');
  assert.equal(counted.get('failure'), 30, 'evaluated: no more than the failure factor');
  assert.equal(counted.get('locked'), 170, 'the rest were refused before any hash');
  assert.equal(new Set(answers.map(shape)).size, 1, 'a locked answer is byte-identical to a wrong-password answer');
  assert.equal(resultOf<{ authenticated: boolean }>(answers[0]!).authenticated, false);
  // The right password from a fresh address is locked out too, and looks the same.
  const locked = await authenticate(app, 'username', 'tenant@example.com', tenantPassword, '198.51.100.250');
  assert.equal(shape(locked), shape(answers[0]!));
});

test('the same for API Keys: 200 concurrent wrong secrets against one key evaluate 30', async () => {
  audits = [];
  const answers = await Promise.all(Array.from({ length: 200 }, (_, i) => authenticate(app, 'apikey', keyId, `${'x'.repeat(40)}${i}`, `192.0.2.${i}`)));
  assert.equal(outcomes('authenticate').get('failure'), 30);
  assert.equal(new Set(answers.map(shape)).size, 1);
  const locked = await authenticate(app, 'apikey', keyId, keySecret, '192.0.2.250');
  assert.equal(shape(locked), shape(answers[0]!), 'the right secret, while locked, answers like a wrong one');
});

test('Basic credentials go through the same limiter: 200 concurrent wrong passwords for one caller evaluate 30, all answered 401 alike', async () => {
  const fresh = await openApp();
  try {
    const base = resultOf<{ user: { applications: Array<{ id: string }> } }>(await fresh.get(`/users/user/${[...fresh.state.allUsers()][0]!.id}`)).user.applications[0]!.id;
    resultOf(await fresh.post('/users/user', { email: 'ops@example.com', password: 'ops-password-1', applications: [base] }));
    audits = [];
    const answers = await Promise.all(Array.from({ length: 200 }, (_, i) => fresh.get('/applications', { auth: { username: 'ops@example.com', password: `bad-${i}` }, remoteAddress: `10.0.${i >> 8}.${i & 255}` })));
    assert.ok(answers.every((r) => r.status === 401));
    assert.equal(new Set(answers.map(shape)).size, 1);
    assert.equal(outcomes('caller.authenticate').get('failure'), 30);
    const locked = await fresh.get('/applications', { auth: { username: 'ops@example.com', password: 'ops-password-1' }, remoteAddress: '10.9.0.1' });
    assert.equal(shape(locked), shape(answers[0]!), 'the right password while locked: the same 401');
  } finally {
    await fresh.close();
  }
});

test('a spray of wrong passwords from other addresses does not keep the owner out of an address it used before', async () => {
  const fresh = await openApp();
  try {
    const id = resultOf<{ application: { id: string } }>(await fresh.post('/applications/application', { name: 'spray app' })).application.id;
    resultOf(await fresh.post('/users/user', { email: 'owner@example.com', password: 'owner-password', applications: [id] }));
    const auth = (password: string, ip: string): Promise<boolean> => fresh.post('/authenticate', { type: 'username', application: id, credential: { username: 'owner@example.com', password }, ip_address: ip })
      .then((r) => resultOf<{ authenticated: boolean }>(r).authenticated);
    assert.equal(await auth('owner-password', '203.0.113.10'), true);
    for (let round = 0; round < 3; round++) {
      await Promise.all(Array.from({ length: 100 }, (_, i) => auth(`spray-${round}-${i}`, `198.51.${round}.${i}`)));
    }
    assert.equal(await auth('owner-password', '203.0.113.10'), true, 'the owner gets in at once from home');
    assert.equal(await auth('owner-password', '203.0.113.99'), false, 'from a new address it waits out the lockout (at most BRUTE_FORCE_MAX_WAIT_S)');
  } finally {
    await fresh.close();
  }
});

test('load shedding: past the hash queue a flood is answered 503 with Retry-After, and cached credentials keep the fast path', async () => {
  const argon2 = { memoryKiB: 8192, iterations: 2, parallelism: 1 };
  const small = new HashPool({ workers: 1, queueMax: 4, argon2 });
  const fresh = await openApp({ pool: small, argon2, limits: { ...limits, failureFactor: 0, addressFailureFactor: 0 } });
  try {
    const id = resultOf<{ application: { id: string } }>(await fresh.post('/applications/application', { name: 'busy app' })).application.id;
    resultOf(await fresh.post('/users/user', { email: 'regular@example.com', password: 'regular-password', applications: [id] }));
    const auth = (username: string, password: string, ip: string, caller?: { username: string; password: string }): Promise<AppResponse> =>
      fresh.post('/authenticate', { type: 'username', application: id, credential: { username, password }, ip_address: ip }, caller === undefined ? undefined : { auth: caller });
    assert.equal(resultOf<{ authenticated: boolean }>(await auth('regular@example.com', 'regular-password', '203.0.113.5')).authenticated, true, 'now cached');
    const base = fresh.state.meta!.baseApplication;
    resultOf(await fresh.post('/users/user', { email: 'second-admin@example.com', password: 'second-admin-password', applications: [base] }));
    // Two callers flood: one caller may hold only its share of the queue (hashQueueCallerShareMax), two fill it.
    const second = { username: 'second-caller@example.com', password: 'second-caller-password' };
    resultOf(await fresh.post('/users/user', { email: second.username, password: second.password, applications: [base], roles: ['authenticator'] }));
    assert.equal(resultOf<{ authenticated: boolean }>(await auth('regular@example.com', 'regular-password', '203.0.113.5', second)).authenticated, true, 'its caller\'s credentials cached too');
    const flood = Array.from({ length: 100 }, (_, i) => auth(`nobody-${i}@example.com`, `wrong-${i}`, `198.51.100.${i}`, i % 2 === 0 ? undefined : second));
    // Asked while the queue is full: answered from the cache, without waiting behind the flood.
    const regular = await auth('regular@example.com', 'regular-password', '203.0.113.5');
    // An admin whose password is not cached needs a hash too: refused the same way, before anything is evaluated.
    const admin = await fresh.get('/users', { auth: { username: 'second-admin@example.com', password: 'second-admin-password' }, remoteAddress: '203.0.113.77' });
    // Refused at once, as a value: no promise, no exception.
    const direct = fresh.authenticator.authenticate(id, 'username', 'nobody-direct@example.com', 'wrong', { address: '203.0.113.78', caller: [...fresh.state.allUsers()][0]!.id });
    const queueStillBusy = small.queueDepth > 0;
    const answers = await Promise.all(flood);
    assert.equal(resultOf<{ authenticated: boolean }>(regular).authenticated, true);
    assert.ok(queueStillBusy, 'the cached credential was answered while the flood still filled the hash queue');
    assert.equal(direct, overloaded);
    const shed = answers.filter((r) => r.status === 503);
    assert.ok(shed.length > 50, `${shed.length} of 100 shed`);
    for (const r of [...shed, admin]) {
      assert.equal(r.status, 503);
      assert.deepEqual(r.headers.find(([k]) => k === 'Retry-After'), ['Retry-After', '1']);
      assert.match(r.body, /"code":"overloaded"/);
    }
    const shedLines = audits.filter((a) => a.outcome === 'overloaded');
    assert.equal(shedLines.filter((a) => a.action === 'authenticate' && a.address.startsWith('198.51.100.')).length, shed.length, 'one audit line per shed attempt');
    assert.equal(shedLines.filter((a) => a.action === 'caller.authenticate' && a.address === '203.0.113.77').length, 1);
  } finally {
    await fresh.close();
    await small.close();
  }
});

// Issue 23, part 3 ("Argon2 exhaustion"): a flood of bad Basic logins made a legitimate login wait 15.5 s behind it.
test('a flood of bad Basic logins queues behind an admin whose pair succeeded before: the admin is served next', async () => {
  const argon2 = { memoryKiB: 8192, iterations: 2, parallelism: 1 };
  const small = new HashPool({ workers: 1, queueMax: 256, argon2 });
  const fresh = await openApp({ pool: small, argon2 });
  try {
    const base = fresh.state.meta!.baseApplication;
    const id = resultOf<{ user: { id: string } }>(await fresh.post('/users/user', { email: 'ops@example.com', password: 'ops-password-1', applications: [base] })).user.id;
    const ops = (password: string): Promise<AppResponse> => fresh.get('/applications', { auth: { username: 'ops@example.com', password }, remoteAddress: '203.0.113.5' });
    assert.equal((await ops('ops-password-1')).status, 200, 'the pair (ops, 203.0.113.5) succeeds once');
    // A new password: the next login needs a hash again (nothing cached), but the pair is still known to be good.
    resultOf(await fresh.put(`/users/user/${id}`, { password: 'ops-password-2' }));
    const order: string[] = [];
    const flood = Array.from({ length: 40 }, (_, i) => fresh.get('/applications', { auth: { username: `nobody-${i}@example.com`, password: `guess-${i}` }, remoteAddress: `198.51.100.${i}` })
      .then((r) => { order.push(`flood-${r.status}`); }));
    const admin = ops('ops-password-2').then((r) => { order.push(`admin-${r.status}`); });
    await Promise.all([...flood, admin]);
    assert.ok(order.indexOf('admin-200') >= 0 && order.indexOf('admin-200') <= 2, `the admin after at most the guesses already running: ${order.join(' ')}`);
    assert.equal(order.filter((o) => o === 'flood-401').length, 40);
  } finally {
    await fresh.close();
    await small.close();
  }
});

test('one address takes at most its share of the hash queue: its excess is shed with 503 and Retry-After, another address still gets a hash', async () => {
  // Slow enough (~100 ms a hash) that no guess is answered, and gives its share back, before the last one asks.
  const argon2 = { memoryKiB: 8192, iterations: 10, parallelism: 1 };
  const small = new HashPool({ workers: 1, queueMax: 16, argon2 });
  const fresh = await openApp({ pool: small, argon2 });
  try {
    const id = resultOf<{ application: { id: string } }>(await fresh.post('/applications/application', { name: 'shared app' })).application.id;
    const guess = (i: number, ip: string): Promise<AppResponse> => fresh.post('/authenticate', { type: 'username', application: id, credential: { username: `nobody-${i}@example.com`, password: `guess-${i}` }, ip_address: ip });
    const flood = Array.from({ length: 12 }, (_, i) => guess(i, '198.51.100.1'));
    const elsewhere = await guess(99, '198.51.100.2');
    const answers = await Promise.all(flood);
    assert.equal(elsewhere.status, 200, 'another address is not shed');
    const shed = answers.filter((r) => r.status === 503);
    assert.ok(shed.length >= 12 - 16 * 0.25 - 1, `${shed.length} of 12 shed (a share is 4 of 16 places)`);
    for (const r of shed) assert.deepEqual(r.headers.find(([k]) => k === 'Retry-After'), ['Retry-After', '1']);
  } finally {
    await fresh.close();
    await small.close();
  }
});

test('a full hash queue makes room for a trusted admin: the newest queued guess is answered 503 with Retry-After instead', async () => {
  const argon2 = { memoryKiB: 8192, iterations: 10, parallelism: 1 };
  const small = new HashPool({ workers: 1, queueMax: 4, argon2 });
  const fresh = await openApp({ pool: small, argon2 });
  try {
    const base = fresh.state.meta!.baseApplication;
    const id = resultOf<{ user: { id: string } }>(await fresh.post('/users/user', { email: 'ops@example.com', password: 'ops-password-1', applications: [base] })).user.id;
    const ops = (password: string): Promise<AppResponse> => fresh.get('/applications', { auth: { username: 'ops@example.com', password }, remoteAddress: '203.0.113.5' });
    assert.equal((await ops('ops-password-1')).status, 200);
    resultOf(await fresh.put(`/users/user/${id}`, { password: 'ops-password-2' }));
    const guesses = Array.from({ length: 4 }, (_, i) => fresh.get('/applications', { auth: { username: `nobody-${i}@example.com`, password: `guess-${i}` }, remoteAddress: `198.51.100.${i}` }));
    while (small.queueDepth < 4) await new Promise((resolve) => setImmediate(resolve));
    const admin = await ops('ops-password-2');
    const answers = await Promise.all(guesses);
    assert.equal(admin.status, 200);
    assert.deepEqual(answers.map((r) => r.status), [401, 401, 401, 503]);
    assert.deepEqual(answers[3]!.headers.find(([k]) => k === 'Retry-After'), ['Retry-After', '1']);
    assert.match(answers[3]!.body, /"code":"overloaded"/);
  } finally {
    await fresh.close();
    await small.close();
  }
});
