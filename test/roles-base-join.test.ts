// Issue 42, finding 3: credentials a manager set on an end user (an API Key, a password) never become a caller's when the User joins the base Application (over real HTTP, and authctl reset-admin-password's decision), and roles belong to base Users only.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import * as decide from '../src/store/decide.js';
import { baseApplicationId, createApikey, createApplication, createUser, defaultUserPassword, unique } from './helpers/http-fixtures.js';
import { fails, failsOnField, ok, okKey } from './helpers/http-shapes.js';
import { startServer, type Api, type ServerProcess } from './helpers/server.js';
import { StateHarness } from './helpers/state-harness.js';

let server: ServerProcess;
let api: Api;
let base: string;
let app: string;

before(async () => {
  server = await startServer();
  api = server.api();
  base = await baseApplicationId(api);
  app = (await createApplication(api)).id;
});

after(async () => {
  await server?.dispose();
});

type Json = Record<string, unknown>;

/** A base-Application User with the manager role, and an Api that calls as it. */
async function manager(): Promise<{ id: string; as: Api }> {
  const user = await createUser(api, [base], { roles: ['manager'] });
  return { id: user.id, as: api.as({ username: user.email, password: defaultUserPassword }) };
}

/** An end user a manager made, with a password the manager chose and an API Key the manager holds the secret of. */
async function planted(by: Api, password: string): Promise<{ id: string; email: string; key: { id: string; secret: string } }> {
  const email = `${unique('planted')}@example.com`;
  const user = okKey<Json>(await by.post('/users/user', { email, password, applications: [app] }), 'user');
  const key = okKey<Json>(await by.post(`/users/user/${user['id'] as string}/apikey`, { name: 'planted' }), 'apikey');
  return { id: user['id'] as string, email, key: { id: key['id'] as string, secret: key['secret'] as string } };
}

/** The admin-only route of finding 3. */
function rotate(as: { username: string; password: string }): ReturnType<Api['post']> {
  return api.post('/admin/signing-keys/rotate', undefined, { credentials: as });
}

test('issue 42: an API Key of an end user carries no roles, so a manager cannot make one "admin"', async () => {
  const m = await manager();
  const end = await createUser(api, [app]);
  failsOnField(await m.as.post(`/users/user/${end.id}/apikey`, { name: 'made admin', roles: ['admin'] }), 'roles');
  failsOnField(await api.post(`/users/user/${end.id}/apikey`, { roles: ['authenticator'] }), 'roles');
  const key = await createApikey(api, end.id);
  failsOnField(await api.put(`/users/user/${end.id}/apikey/${key.id}`, { roles: ['auditor'] }), 'roles');
  const user = okKey<Json>(await api.get(`/users/user/${end.id}`), 'user');
  assert.deepEqual((user['apikeys'] as Json[]).map((k) => k['roles']), [undefined], 'no key of an end user got roles');
});

test('issue 42: joining the base Application needs a new password in the same request, on every route that adds it', async () => {
  const m = await manager();
  const user = await planted(m.as, 'manager-chose-1');
  const refused = fails(await api.put(`/users/user/${user.id}`, { applications: [base] }), 400, 'base_join_needs_password');
  assert.match(refused.message, /password/);
  const compat = fails(await api.post(`/users/user/${user.id}/application/${base}`), 400, 'base_join_needs_password');
  assert.match(compat.message, /PUT \/users\/user\/\{userid\}/, 'the compatibility POST points to the PUT');
  const still = okKey<Json>(await api.get(`/users/user/${user.id}`), 'user');
  assert.deepEqual((still['applications'] as Json[]).map((a) => a['id']), [app], 'a refused join changes nothing');
  assert.equal(still['roles'], undefined);
  assert.equal((await rotate({ username: user.email, password: 'manager-chose-1' })).status, 401);
  assert.equal((await rotate({ username: user.key.id, password: user.key.secret })).status, 401);
});

test('issue 42: a key and a password a manager planted on an end user do not pass an admin-only route after an admin adds it to the base Application', async () => {
  const m = await manager();
  const user = await planted(m.as, 'manager-chose-2');
  const joined = okKey<Json>(await api.put(`/users/user/${user.id}`, { applications: [app, base], password: 'admin-chose-2' }), 'user');
  assert.deepEqual(joined['roles'], ['admin'], 'a User joining without roles is an admin, as one created in the base Application');
  const [key] = joined['apikeys'] as Json[];
  assert.equal(key!['status'], 'DISABLED', 'its API Keys are disabled on joining');
  assert.equal(key!['roles'], undefined);

  fails(await rotate({ username: user.email, password: 'manager-chose-2' }), 401, 'unauthorized');
  fails(await rotate({ username: user.key.id, password: user.key.secret }), 401, 'unauthorized');
  ok(await rotate({ username: user.email, password: 'admin-chose-2' }));

  // An admin who wants the key back enables it and is answered its new secret: the one the manager saw stays dead.
  const enabled = okKey<Json>(await api.put(`/users/user/${user.id}/apikey/${user.key.id}`, { status: 'ENABLED' }), 'apikey');
  assert.notEqual(enabled['secret'], user.key.secret);
  fails(await rotate({ username: user.key.id, password: user.key.secret }), 401, 'unauthorized');
  ok(await rotate({ username: user.key.id, password: enabled['secret'] as string }));
  // The manager, for its part, can no longer touch the User it made.
  fails(await m.as.put(`/users/user/${user.id}`, { password: 'manager-again-2' }), 403, 'forbidden');
});

test('issue 42: roles belong to base Users: none on an end user, and leaving the base Application drops the User\'s and its keys\'', async () => {
  const end = await createUser(api, [app]);
  failsOnField(await api.put(`/users/user/${end.id}`, { roles: ['auditor'] }), 'roles');
  failsOnField(await api.post('/users/user', { email: 'roles-outside@example.com', password: defaultUserPassword, applications: [app], roles: ['auditor'] }), 'roles');
  // Given in the request that joins, they apply.
  const joined = okKey<Json>(await api.put(`/users/user/${end.id}`, { applications: [base], password: 'joined-pass-3', roles: ['auditor'] }), 'user');
  assert.deepEqual(joined['roles'], ['auditor']);

  const b = await createUser(api, [base, app], { roles: ['manager'] });
  const key = await createApikey(api, b.id, { roles: ['manager'] });
  ok(await api.delete(`/users/user/${b.id}/application/${base}`));
  const left = okKey<Json>(await api.get(`/users/user/${b.id}`), 'user');
  assert.equal(left['roles'], undefined);
  assert.deepEqual((left['apikeys'] as Json[]).map((k) => [k['id'], k['roles'], k['status']]), [[key.id, undefined, 'ENABLED']],
    'an end user\'s key keeps working for POST /authenticate, without roles');
  // Back in the base Application: the request's roles, else admin; the key starts clean again.
  const back = okKey<Json>(await api.put(`/users/user/${b.id}`, { applications: [base], password: 'back-pass-3', roles: ['auditor'] }), 'user');
  assert.deepEqual(back['roles'], ['auditor']);
  assert.equal((back['apikeys'] as Json[])[0]!['status'], 'DISABLED');
  fails(await api.get('/users', { credentials: { username: key.id, password: key.secret } }), 401, 'unauthorized');
});

test('issue 42: authctl reset-admin-password that puts an end user into the base Application disables its API Keys, with new nonces and no roles', () => {
  const h = new StateHarness();
  h.commit((s, ctx) => decide.bootstrap(s, { email: 'admin@example.com', passwordHash: 'admin-hash' }, ctx));
  const appId = h.commit((s, ctx) => decide.createApplication(s, { name: 'reset' }, ctx)).id;
  const user = h.commit((s, ctx) => decide.createUser(s, { email: 'end@example.com', passwordHash: 'planted', applications: [appId] }, ctx));
  // A key as data stored before issue 42 may hold it: roles on an end user's key.
  const before = h.commit((s, ctx) => decide.importUser(s, { ...user, apikeys: [{ id: 'K'.repeat(25), name: 'k', description: '', status: 'ENABLED', nonce: 'old-nonce', roles: ['admin'], createdAt: 1, modifiedAt: 1 }] }));
  const { user: after } = h.commit((s, ctx) => decide.resetAdminPassword(s, before.email, 'operator-hash', ctx));
  assert.ok(after.applications.includes(h.state.meta!.baseApplication));
  assert.deepEqual(after.apikeys.map((k) => [k.status, k.nonce === 'old-nonce', k.roles]), [['DISABLED', false, undefined]]);
});
