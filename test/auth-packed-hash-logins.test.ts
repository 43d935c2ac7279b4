// Logins against packed password hashes (issue 24): the hash pool and the rehash policy see the PHC string, so a current hash is never redone and an old one becomes a packed current one.

import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, test } from 'node:test';
import { bcrypt } from 'hash-wasm';
import { HashPool } from '../src/auth/hash-pool.js';
import { packedHashMarker, unpackPasswordHash } from '../src/auth/packed-hash.js';
import { parseArgon2idHash } from '../src/auth/password-hash-format.js';
import type { AuditEntry } from '../src/service/audit.js';
import { InProcessApp, resultOf } from './helpers/fault-app.js';
import { PowerLossStorage } from './helpers/fault-storage.js';

const argon2 = { memoryKiB: 1024, iterations: 1, parallelism: 1 };
/** A rehash hashes in a worker and then commits: this is ample on a loaded machine, and only waited out when none comes. */
const rehashWaitMs = 3_000;

let pool: HashPool;
let app: InProcessApp;
const rehashes: string[] = [];

before(async () => {
  pool = new HashPool({ workers: 1, queueMax: 64, argon2 });
  const storage = new PowerLossStorage();
  await storage.mkdirp('/packed');
  app = await InProcessApp.open({
    storage, dir: '/packed', pool, argon2,
    audit: (entry: AuditEntry) => { if (entry.action === 'user.rehash') rehashes.push(entry.targets['user'] as string); },
  });
});

after(async () => {
  await app?.close();
  await pool?.close();
});

async function newUser(body: Record<string, unknown>): Promise<{ appId: string; userId: string; email: string }> {
  const appId = resultOf<{ application: { id: string } }>(await app.post('/applications/application', { name: `shop ${randomBytes(4).toString('hex')}` })).application.id;
  const email = `${randomBytes(6).toString('hex')}@example.com`;
  const userId = resultOf<{ user: { id: string } }>(await app.post('/users/user', { email, applications: [appId], ...body })).user.id;
  return { appId, userId, email };
}

async function authenticates(appId: string, email: string, password: string): Promise<boolean> {
  const res = await app.post('/authenticate', { type: 'username', application: appId, credential: { username: email, password } });
  return resultOf<{ authenticated: boolean }>(res).authenticated;
}

async function rehashOf(userId: string): Promise<boolean> {
  for (const started = performance.now(); performance.now() - started < rehashWaitMs; await sleep(10)) {
    if (rehashes.includes(userId)) return true;
  }
  return false;
}

test('a User with a current argon2id hash logs in against its packed form, and is not rehashed', async () => {
  const { appId, userId, email } = await newUser({ password: 'current-password-1' });
  const held = app.state.user(userId)!.passwordHash;
  assert.equal(held[0], packedHashMarker);
  assert.equal(await authenticates(appId, email, 'current-password-1'), true);
  assert.equal(await authenticates(appId, email, 'current-password-2'), false);
  assert.equal(await rehashOf(userId), false, 'the rehash policy saw the PHC string of current params');
  assert.equal(app.state.user(userId)!.passwordHash, held);
});

test('a bcrypt hash brought in is replaced on login by a packed argon2id hash of the current params, which then verifies', async () => {
  const hash = await bcrypt({ password: 'legacy-password', salt: randomBytes(16), costFactor: 4, outputType: 'encoded' });
  const { appId, userId, email } = await newUser({ password_hash: hash });
  assert.equal(app.state.user(userId)!.passwordHash, hash, 'bcrypt is held as it came');
  assert.equal(await authenticates(appId, email, 'legacy-password'), true);
  assert.equal(await rehashOf(userId), true);
  const held = app.state.user(userId)!.passwordHash;
  assert.equal(held[0], packedHashMarker);
  const parts = parseArgon2idHash(unpackPasswordHash(held));
  assert.deepEqual(parts && { m: parts.memoryKiB, t: parts.iterations, p: parts.parallelism }, { m: argon2.memoryKiB, t: argon2.iterations, p: argon2.parallelism });
  assert.equal(await authenticates(appId, email, 'legacy-password'), true, 'the new hash verifies (the verify cache forgot the old User)');
  assert.equal(await authenticates(appId, email, 'other-password'), false);
});

test('an argon2id hash of other params brought in is packed, logs in, and is rehashed to the current params', async () => {
  const other = new HashPool({ workers: 1, queueMax: 4, argon2: { memoryKiB: 2048, iterations: 2, parallelism: 2 } });
  let hash: string;
  try {
    hash = await other.hashPassword('imported-password');
  } finally {
    await other.close();
  }
  const { appId, userId, email } = await newUser({ password_hash: hash });
  const imported = app.state.user(userId)!.passwordHash;
  assert.equal(imported[0], packedHashMarker);
  assert.equal(unpackPasswordHash(imported), hash);
  assert.equal(await authenticates(appId, email, 'imported-password'), true);
  assert.equal(await rehashOf(userId), true);
  const held = app.state.user(userId)!.passwordHash;
  assert.notEqual(held, imported);
  assert.equal(parseArgon2idHash(unpackPasswordHash(held))?.memoryKiB, argon2.memoryKiB);
  assert.equal(await authenticates(appId, email, 'imported-password'), true);
});
