// Callers known by their exact Authorization header, and authentications by their exact body: recognised without a full check only from the same peer, and only while the account, its verification and the limiter's view are unchanged.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { KnownCallers } from '../src/auth/known-callers.js';
import { HashPool } from '../src/auth/hash-pool.js';
import type { Ticket } from '../src/auth/limiter.js';
import type { User } from '../src/domain/entities.js';
import type { AuditEntry } from '../src/service/audit.js';
import { appAdminEmail, appAdminPassword, InProcessApp, resultOf } from './helpers/fault-app.js';
import { PowerLossStorage } from './helpers/fault-storage.js';

let pool: HashPool;
let dirCount = 0;

before(() => {
  pool = new HashPool({ workers: 1, queueMax: 64, argon2: { memoryKiB: 1024, iterations: 1, parallelism: 1 } });
});

after(async () => {
  await pool.close();
});

async function openApp(addressFailureFactor = 100, audit?: (entry: AuditEntry) => void, tarpitStepMs = 0): Promise<InProcessApp> {
  const storage = new PowerLossStorage();
  const dir = `/known/${++dirCount}`;
  await storage.mkdirp(dir);
  return InProcessApp.open({
    storage, dir, pool, audit,
    limits: { failureFactor: 30, addressFailureFactor, waitIncrementMs: 60_000, maxWaitMs: 15 * 60_000, failureResetMs: 12 * 3600_000, tarpitStepMs, tarpitMaxMs: tarpitStepMs * 4 },
  });
}

function basic(username: string, password: string): string {
  return `Basic ${Buffer.from(`${username}:${password}`, 'utf8').toString('base64')}`;
}

/** The header InProcessApp's requests carry unless told otherwise. */
const admin = basic(appAdminEmail, appAdminPassword);

/** An admin in the base Application, with a password. */
async function addAdmin(app: InProcessApp, email: string, password: string): Promise<string> {
  const base = app.state.meta!.baseApplication;
  return resultOf<{ user: { id: string } }>(await app.post('/users/user', { email, password, applications: [base] })).user.id;
}

/** header passes from peer and is then known as userId; after change() (answered 200) it is neither known nor let in. */
async function refusedAfter(app: InProcessApp, header: string, peer: string, userId: string, change: () => Promise<{ status: number }>): Promise<void> {
  assert.equal((await app.get('/applications', { auth: header, remoteAddress: peer })).status, 200);
  assert.equal(app.authenticator.knownCaller(header, peer)?.user.id, userId);
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
  known.remember(key, { user, byPassword: true, ticket });
  assert.equal(known.get(key)?.user, user);
  now += 999;
  assert.ok(known.get(key) !== undefined);
  now += 1;
  assert.equal(known.get(key), undefined, 'expired');
  assert.equal(known.size, 0);
  for (const peer of ['a', 'b', 'c']) known.remember(known.key(header, peer)!, { user, byPassword: true, ticket });
  assert.equal(known.size, 2);
  assert.equal(known.get(known.key(header, 'a')!), undefined, 'the oldest went first');
});

test('KnownCallers: a request is keyed by its body, header and peer together; an entry resting on another expires with it', () => {
  let now = 1_000;
  const known = new KnownCallers({ ttlMs: 1_000, entriesMax: 10, now: () => now });
  const body = Buffer.from('{"type":"apikey"}');
  const header = basic('ops@example.com', 'ops-password-1');
  const key = known.keyOfRequest(body, header, '192.0.2.1')!;
  assert.equal(known.keyOfRequest(body, header, '192.0.2.1'), key);
  for (const other of [
    known.keyOfRequest(body, basic('ops@example.com', 'ops-password-2'), '192.0.2.1'), known.keyOfRequest(body, header, '192.0.2.2'),
    known.keyOfRequest(Buffer.from('{"type":"apikey" }'), header, '192.0.2.1'), known.keyOfRequest(body, `${header}\u00000`, '192.0.2.1'),
  ]) assert.ok(other !== undefined && other !== key);
  assert.equal(known.keyOfRequest(body, '', '192.0.2.1'), undefined, 'no header');
  assert.equal(known.keyOfRequest(body, `Basic ${'A'.repeat(9000)}`, '192.0.2.1'), undefined, 'a header longer than Basic credentials may be');
  assert.equal(known.keyOfRequest(Buffer.alloc(0), header, '192.0.2.1'), undefined, 'no body');
  const entry = { user: { id: 'u1' } as User, byPassword: false, ticket: {} as Ticket };
  known.remember(key, entry, now + 300);
  assert.equal(known.held(key)?.expiresAtMs, 1_300);
  now += 300;
  assert.equal(known.get(key), undefined, 'gone with the entry it rested on');
  known.remember(key, entry, now + 5_000);
  assert.equal(known.held(key)?.expiresAtMs, now + 1_000, 'never past its own TTL');
});

test('a caller that passed is known by its header from the same peer only, and callers of it are answered alike', async () => {
  const app = await openApp();
  try {
    const id = await addAdmin(app, 'ops@example.com', 'ops-password-1');
    const header = basic('ops@example.com', 'ops-password-1');
    assert.equal(app.authenticator.knownCaller(header, '192.0.2.1'), undefined, 'not before a check has passed');
    const first = await app.get('/applications', { auth: header, remoteAddress: '192.0.2.1' });
    assert.equal(first.status, 200);
    assert.equal(app.authenticator.knownCaller(header, '192.0.2.1')?.user.id, id);
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

// Issue 23, part 3 ("address lockout as a weapon"): guesses for accounts that do not exist locked out the admin's own address.
test('a known caller keeps working when guesses for other accounts slow its address down; a newcomer there is slowed, not refused', async () => {
  const app = await openApp(3, undefined, 1);
  try {
    await addAdmin(app, 'ops@example.com', 'ops-password-1');
    await addAdmin(app, 'newcomer@example.com', 'newcomer-password-1');
    const header = basic('ops@example.com', 'ops-password-1');
    assert.equal((await app.get('/applications', { auth: header, remoteAddress: '192.0.2.9' })).status, 200);
    assert.ok(app.authenticator.knownCaller(header, '192.0.2.9') !== undefined);
    for (let i = 0; i < 12; i++) {
      assert.equal((await app.get('/applications', { auth: basic(`nobody-${i}@example.com`, 'guess-1234'), remoteAddress: '192.0.2.9' })).status, 401);
    }
    assert.ok(app.authenticator.knownCaller(header, '192.0.2.9') !== undefined, 'still known: the slowing does not apply to it');
    assert.equal((await app.get('/applications', { auth: header, remoteAddress: '192.0.2.9' })).status, 200, 'the admin keeps working');
    const newcomer = basic('newcomer@example.com', 'newcomer-password-1');
    assert.equal((await app.get('/applications', { auth: newcomer, remoteAddress: '192.0.2.9' })).status, 200, 'a newcomer gets in, in turn');
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

/** An Application with one end user who has a password and an API Key; `body(kind)` is a POST /authenticate body that passes. */
async function endUser(app: InProcessApp): Promise<{ appId: string; userId: string; keyId: string; body: (kind: 'apikey' | 'username', ip?: string) => Uint8Array }> {
  const appId = resultOf<{ application: { id: string } }>(await app.post('/applications/application', { name: 'shop' })).application.id;
  const userId = resultOf<{ user: { id: string } }>(await app.post('/users/user', { email: 'end@example.com', password: 'end-password-1', applications: [appId] })).user.id;
  const key = resultOf<{ apikey: { id: string; secret: string } }>(await app.post(`/users/user/${userId}/apikey`, { name: 'phone' })).apikey;
  const body = (kind: 'apikey' | 'username', ip = '203.0.113.7'): Uint8Array => Buffer.from(JSON.stringify({
    type: kind, application: appId, credential: kind === 'apikey' ? { username: key.id, password: key.secret } : { username: 'end@example.com', password: 'end-password-1' }, ip_address: ip,
  }));
  return { appId, userId, keyId: key.id, body };
}

/** POST /authenticate with these exact bytes from peer: whether it authenticated, and the answer without its elapsed time. */
async function authenticateRaw(
  app: InProcessApp, raw: Uint8Array, peer: string, contentType = 'application/json', auth = admin,
): Promise<{ status: number; authenticated: boolean | undefined; text: string }> {
  const res = await app.request('POST', '/authenticate', { raw, remoteAddress: peer, contentType, auth });
  const result = (res.json as { service?: { result?: { authenticated?: boolean } } }).service?.result;
  return { status: res.status, authenticated: result?.authenticated, text: res.body.replace(/"elapsed":[0-9.]+/, '') };
}

test('an authentication that passed is recognised by its exact body from the same peer: the same answer, audit line and count', async () => {
  const entries: AuditEntry[] = [];
  const app = await openApp(100, (e) => { if (e.action === 'authenticate') entries.push(e); });
  try {
    const { appId, userId, keyId, body } = await endUser(app);
    for (const kind of ['apikey', 'username'] as const) {
      entries.length = 0;
      const raw = body(kind);
      assert.equal(app.authenticator.recognised(raw, admin, '10.0.0.1'), undefined, 'not before a check has passed');
      const first = await authenticateRaw(app, raw, '10.0.0.1');
      assert.equal(first.authenticated, true);
      // Issue 24: most bodies never repeat (each end user from its own address); remembering each cost an entry and an eviction.
      assert.equal(app.authenticator.recognised(raw, admin, '10.0.0.1'), undefined, 'seen once: not remembered');
      assert.equal((await authenticateRaw(app, raw, '10.0.0.1')).authenticated, true);
      assert.equal(app.authenticator.recognised(raw, admin, '10.0.0.2'), undefined, 'another peer takes the full check');
      assert.equal(app.authenticator.recognised(raw, basic(appAdminEmail, 'not-the-admin-password'), '10.0.0.1'), undefined, 'another caller header too');
      assert.equal(app.authenticator.recognised(body(kind, '203.0.113.8'), admin, '10.0.0.1'), undefined, 'another body too');
      const second = await authenticateRaw(app, raw, '10.0.0.1');
      assert.equal(second.text, first.text);
      entries.splice(1, 1);
      const targets = kind === 'apikey' ? { application: appId, user: userId, apikey: keyId } : { application: appId, user: userId };
      const caller = app.state.userByEmail('admin@example.com')?.id;
      assert.deepEqual(entries.map((e) => [e.caller, e.targets, e.outcome, e.address, e.peer]), [
        [caller, targets, 'success', '203.0.113.7', '10.0.0.1'],
        [caller, targets, 'success', '203.0.113.7', '10.0.0.1'],
      ]);
      assert.equal(app.authenticator.recognised(raw, admin, '10.0.0.1')?.user.id, userId, 'the third answer came from the remembered one, seen twice before');
      const metrics = (await app.get('/metrics')).body;
      assert.match(metrics, new RegExp(`authd_authentications_total\\{type="${kind}",result="success"\\} 3\\n`), 'all three answers counted, the recognised one too');
    }
    // A body that is not JSON by its Content-Type is refused as before, however it was answered last time.
    assert.equal((await authenticateRaw(app, body('apikey'), '10.0.0.1', 'text/plain')).status, 415);
  } finally {
    await app.close();
  }
});

test('a failed authentication is never remembered; a recognised one is refused at once when its key, account or Application changes, or its pair fails', async () => {
  const app = await openApp(3);
  try {
    const { appId, userId, keyId, body } = await endUser(app);
    const wrong = Buffer.from(new TextDecoder().decode(body('apikey')).replace(/"password":"[^"]+"/, '"password":"not-the-secret-at-all-000000000000000000"'));
    assert.equal((await authenticateRaw(app, wrong, '10.0.0.1')).authenticated, false);
    assert.equal(app.authenticator.recognised(wrong, admin, '10.0.0.1'), undefined);

    const passes = async (raw: Uint8Array, peer: string): Promise<void> => {
      // Twice: a body is remembered once it has been seen before.
      assert.equal((await authenticateRaw(app, raw, peer)).authenticated, true);
      assert.equal((await authenticateRaw(app, raw, peer)).authenticated, true);
      assert.ok(app.authenticator.recognised(raw, admin, peer) !== undefined);
    };
    const refused = async (raw: Uint8Array, peer: string): Promise<void> => {
      assert.equal(app.authenticator.recognised(raw, admin, peer), undefined);
      assert.equal((await authenticateRaw(app, raw, peer)).authenticated, false);
    };
    const ok = async (res: Promise<{ status: number }>): Promise<void> => assert.equal((await res).status, 200);

    // Each change refuses the remembered success at once; undoing it lets the credential pass again.
    const changes: Array<[kind: 'apikey' | 'username', path: string, change: object, undo: object]> = [
      ['apikey', `/users/user/${userId}/apikey/${keyId}`, { status: 'DISABLED' }, { status: 'ENABLED' }],
      ['username', `/users/user/${userId}`, { password: 'end-password-2' }, { password: 'end-password-1' }],
      ['apikey', `/applications/application/${appId}`, { status: 'DISABLED' }, { status: 'ENABLED' }],
      ['apikey', `/users/user/${userId}`, { status: 'DISABLED' }, { status: 'ENABLED' }],
    ];
    for (const [kind, path, change, undo] of changes) {
      await passes(body(kind), '10.0.0.1');
      await ok(app.put(path, change));
      await refused(body(kind), '10.0.0.1');
      await ok(app.put(path, undo));
    }

    // Failures for other accounts from the end user's address slow the address (addressFailureFactor 3), never the
    // pair that succeeded there: its remembered success stands. A failure of the pair itself ends it.
    await passes(body('apikey', '198.51.100.4'), '10.0.0.1');
    for (let i = 0; i < 3; i++) {
      const guess = Buffer.from(JSON.stringify({ type: 'username', application: appId, credential: { username: `nobody-${i}@example.com`, password: 'guess-1234' }, ip_address: '198.51.100.4' }));
      assert.equal((await authenticateRaw(app, guess, '10.0.0.1')).authenticated, false);
    }
    assert.ok(app.authenticator.recognised(body('apikey', '198.51.100.4'), admin, '10.0.0.1') !== undefined);
    const wrongThere = Buffer.from(new TextDecoder().decode(body('apikey', '198.51.100.4')).replace(/"password":"[^"]+"/, '"password":"not-the-secret-at-all-000000000000000000"'));
    assert.equal((await authenticateRaw(app, wrongThere, '10.0.0.1')).authenticated, false);
    assert.equal(app.authenticator.recognised(body('apikey', '198.51.100.4'), admin, '10.0.0.1'), undefined);
    await passes(body('apikey', '198.51.100.4'), '10.0.0.1');

    // The caller's own credentials are recognised with the body: a caller DISABLED is refused at once.
    const opsId = await addAdmin(app, 'ops@example.com', 'ops-password-1');
    const ops = basic('ops@example.com', 'ops-password-1');
    const raw = body('apikey', '198.51.100.6');
    assert.equal((await authenticateRaw(app, raw, '10.0.0.1', 'application/json', ops)).authenticated, true);
    assert.equal((await authenticateRaw(app, raw, '10.0.0.1', 'application/json', ops)).authenticated, true);
    assert.ok(app.authenticator.recognised(raw, ops, '10.0.0.1') !== undefined);
    await ok(app.put(`/users/user/${opsId}`, { status: 'DISABLED' }));
    assert.equal(app.authenticator.recognised(raw, ops, '10.0.0.1'), undefined);
    assert.equal((await authenticateRaw(app, raw, '10.0.0.1', 'application/json', ops)).status, 401);
  } finally {
    await app.close();
  }
});

test('repeated: a key seen once is not, seen again it is; the marks are wiped when the table is full, so few keys look repeated', async () => {
  const { knownSightingsMax } = await import('../src/config/limits.js');
  const known = new KnownCallers({ ttlMs: 1000, entriesMax: 10 });
  const key = known.key('Basic abc', '192.0.2.1')!;
  assert.equal(known.repeated(key), false);
  assert.equal(known.repeated(key), true);
  assert.equal(known.repeated(known.key('Basic abc', '192.0.2.2')!), false, 'another peer is another key');
  // Never wiped, the table would fill: over four tables' worth of keys about one in five would look repeated.
  let falseRepeats = 0;
  const keys = 4 * knownSightingsMax;
  for (let i = 0; i < keys; i++) if (known.repeated(known.key(`Basic ${i}`, '198.51.100.1')!)) falseRepeats++;
  assert.ok(falseRepeats < keys / 10, `${falseRepeats} false repeats in ${keys}`);
});
