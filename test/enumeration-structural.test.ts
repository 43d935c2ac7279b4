// Enumeration, shown structurally (no timing here; `npm run test:timing` measures it): an unknown username or key id queues the same hashing work as a known one with a wrong secret, and the answers are byte-identical.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Worker } from 'node:worker_threads';
import { ApiKeySecrets } from '../src/auth/apikey-secrets.js';
import { HashPool } from '../src/auth/hash-pool.js';
import { InProcessApp, resultOf, type AppResponse } from './helpers/fault-app.js';
import { PowerLossStorage } from './helpers/fault-storage.js';
import { adminEmail, adminPassword, basicAuth, startServer } from './helpers/server.js';

const argon2 = { memoryKiB: 1024, iterations: 1, parallelism: 1 };
let pool: HashPool;
let app: InProcessApp;
let appId: string;
let otherAppId: string;
let keyId: string;

/** What one request queued for the hash workers, and how many API Key checks it made. */
interface Work {
  jobs: string[];
  apikeyChecks: number;
}

let recording: Work | undefined;
const originalPost = Worker.prototype.postMessage;
const originalVerify = ApiKeySecrets.prototype.verify;
const originalRefuse = ApiKeySecrets.prototype.refuse;

before(async () => {
  // Every job the pool sends a worker, described by its kind and cost parameters (never the password).
  Worker.prototype.postMessage = function (this: Worker, message: unknown, ...rest: unknown[]) {
    const m = message as { kind?: string; params?: unknown; salt?: Uint8Array; hash?: Uint8Array };
    if (recording !== undefined && typeof m.kind === 'string') {
      recording.jobs.push(JSON.stringify({ kind: m.kind, params: m.params, saltBytes: m.salt?.length, hashBytes: m.hash?.length }));
    }
    return (originalPost as (...a: unknown[]) => void).call(this, message, ...rest);
  } as typeof Worker.prototype.postMessage;
  ApiKeySecrets.prototype.verify = function (this: ApiKeySecrets, ...args: Parameters<ApiKeySecrets['verify']>) {
    if (recording !== undefined) recording.apikeyChecks++;
    return originalVerify.apply(this, args);
  };
  ApiKeySecrets.prototype.refuse = function (this: ApiKeySecrets, ...args: Parameters<ApiKeySecrets['refuse']>) {
    if (recording !== undefined) recording.apikeyChecks++;
    return originalRefuse.apply(this, args);
  };
  pool = new HashPool({ workers: 1, queueMax: 64, argon2 });
  await pool.ready();
  const storage = new PowerLossStorage();
  await storage.mkdirp('/enum');
  app = await InProcessApp.open({ storage, dir: '/enum', pool, argon2 });
  appId = resultOf<{ application: { id: string } }>(await app.post('/applications/application', { name: 'enum app' })).application.id;
  otherAppId = resultOf<{ application: { id: string } }>(await app.post('/applications/application', { name: 'other app' })).application.id;
  const known = resultOf<{ user: { id: string } }>(await app.post('/users/user', { email: 'known@example.com', password: 'known-password', applications: [appId] })).user;
  const disabled = resultOf<{ user: { id: string } }>(await app.post('/users/user', { email: 'disabled@example.com', password: 'disabled-password', applications: [appId] })).user;
  resultOf(await app.put(`/users/user/${disabled.id}`, { status: 'DISABLED' }));
  resultOf(await app.post('/users/user', { email: 'elsewhere@example.com', password: 'elsewhere-password', applications: [otherAppId] }));
  keyId = resultOf<{ apikey: { id: string } }>(await app.post(`/users/user/${known.id}/apikey`, { name: 'k' })).apikey.id;
});

after(async () => {
  Worker.prototype.postMessage = originalPost;
  ApiKeySecrets.prototype.verify = originalVerify;
  ApiKeySecrets.prototype.refuse = originalRefuse;
  await app.close();
  await pool.close();
});

async function measured(send: () => Promise<AppResponse>): Promise<{ work: Work; answer: string }> {
  recording = { jobs: [], apikeyChecks: 0 };
  const res = await send();
  const work = recording;
  recording = undefined;
  return { work, answer: JSON.stringify({ status: res.status, headers: res.headers, body: res.body.replace(/"elapsed":[0-9.]+/, '"elapsed":0') }) };
}

const authenticate = (type: string, username: string, password: string, application = appId) => (): Promise<AppResponse> =>
  app.post('/authenticate', { type, application, credential: { username, password }, ip_address: `203.0.113.${Math.floor(Math.random() * 200)}` });

test('an unknown username queues exactly the hashing work of a known one with a wrong password, and gets the same answer', async () => {
  const cases = {
    'known user, wrong password': await measured(authenticate('username', 'known@example.com', 'wrong-password')),
    'unknown username': await measured(authenticate('username', 'nobody@example.com', 'wrong-password')),
    'DISABLED user, right password': await measured(authenticate('username', 'disabled@example.com', 'disabled-password')),
    'user of another Application, right password': await measured(authenticate('username', 'elsewhere@example.com', 'elsewhere-password')),
    'unknown Application': await measured(authenticate('username', 'known@example.com', 'known-password', 'ZZZZZZZZZZZZZZZZZZZZZZ')),
  };
  const reference = cases['known user, wrong password'];
  assert.equal(reference.work.jobs.length, 1, 'one argon2id verification');
  assert.match(reference.work.jobs[0]!, /"kind":"verifyArgon2id"/);
  for (const [what, c] of Object.entries(cases)) {
    assert.deepEqual(c.work.jobs, reference.work.jobs, `${what}: the same job, kind and cost parameters`);
    assert.equal(c.answer, reference.answer, `${what}: byte-identical answer (status, headers, body but for elapsed)`);
  }
});

test('an unknown or malformed API Key id costs one secret check (verify or refuse) as a known one with a wrong secret does, and gets the same answer', async () => {
  const wrongSecret = 'A'.repeat(43);
  const cases = {
    'known key, wrong secret': await measured(authenticate('apikey', keyId, wrongSecret)),
    'unknown key id': await measured(authenticate('apikey', 'ZZZZZZZZZZZZZZZZZZZZZZZZZ', wrongSecret)),
    'malformed key id': await measured(authenticate('apikey', 'not-a-key', wrongSecret)),
  };
  const reference = cases['known key, wrong secret'];
  for (const [what, c] of Object.entries(cases)) {
    assert.deepEqual(c.work, { jobs: [], apikeyChecks: 1 }, `${what}: one secret check, no argon2`);
    assert.equal(c.answer, reference.answer, `${what}: byte-identical answer`);
  }
});

test('Basic credentials: an unknown caller costs the same hashing as a known one with a wrong password, and both get the same 401', async () => {
  const basic = (username: string, password: string) => (): Promise<AppResponse> => app.get('/applications', { auth: { username, password }, remoteAddress: `10.1.1.${Math.floor(Math.random() * 200)}` });
  const known = await measured(basic('admin@example.com', 'wrong-password'));
  const unknown = await measured(basic('nobody@example.com', 'wrong-password'));
  // Never verified before, so not in the cache (a cached right password is answered without hashing:
  // that tells only someone who already knows the password).
  resultOf(await app.post('/users/user', { email: 'outsider@example.com', password: 'outsider-password', applications: [otherAppId] }));
  const notAdmin = await measured(basic('outsider@example.com', 'outsider-password'));
  assert.equal(known.work.jobs.length, 1);
  assert.deepEqual(unknown.work.jobs, known.work.jobs);
  assert.deepEqual(notAdmin.work.jobs, known.work.jobs, 'a valid user outside the base Application too');
  assert.equal(unknown.answer, known.answer);
  assert.equal(notAdmin.answer, known.answer);
});

test('the real server answers an unknown username byte for byte like a known one with a wrong password', async () => {
  const server = await startServer();
  try {
    const raw = async (init: { path: string; auth: string; body?: unknown }): Promise<string> => {
      const res = await fetch(server.baseUrl + init.path, {
        method: init.body === undefined ? 'GET' : 'POST',
        headers: { authorization: init.auth, ...(init.body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: init.body === undefined ? undefined : JSON.stringify(init.body),
      });
      const headers = [...res.headers.entries()].filter(([k]) => k !== 'date').sort();
      return JSON.stringify({ status: res.status, headers, body: (await res.text()).replace(/"elapsed":[0-9.]+/, '"elapsed":0') });
    };
    const admin = basicAuth(adminEmail, adminPassword);
    const body = (username: string) => ({ type: 'username', application: 'ZZZZZZZZZZZZZZZZZZZZZZ', credential: { username, password: 'wrong-password' } });
    assert.equal(await raw({ path: '/authenticate', auth: admin, body: body('nobody@example.com') }), await raw({ path: '/authenticate', auth: admin, body: body(adminEmail) }));
    assert.equal(await raw({ path: '/applications', auth: basicAuth('nobody@example.com', 'wrong-password') }), await raw({ path: '/applications', auth: basicAuth(adminEmail, 'wrong-password') }));
  } finally {
    await server.dispose();
  }
});
