// Roles on the real server (issue 23): admin, manager, auditor, authenticator on base Users, narrowed by API Keys; 403 forbidden, audited; the last admin.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { baseApplicationId, createApikey, createApplication, createUser, defaultUserPassword, getAdmin } from './helpers/http-fixtures.js';
import { fails, failsOnField, ok } from './helpers/http-shapes.js';
import { startServer, type Api, type HttpResult, type ServerProcess } from './helpers/server.js';

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

/** A base-Application User with these roles, and an Api that calls as it (by password). */
async function caller(roles: string[] | undefined): Promise<{ id: string; as: Api; email: string }> {
  const user = await createUser(api, [base], roles === undefined ? {} : { roles });
  return { id: user.id, email: user.email, as: api.as({ username: user.email, password: defaultUserPassword }) };
}

async function keyCaller(userId: string, roles?: string[]): Promise<{ id: string; as: Api }> {
  const key = await createApikey(api, userId, roles === undefined ? {} : { roles });
  return { id: key.id, as: api.as({ username: key.id, password: key.secret }) };
}

test('a key limited to authenticator gets 200 from POST /authenticate and 403 from GET /users, audited with the role it lacked', async () => {
  const admin = await getAdmin(api);
  const key = await keyCaller(admin.id, ['authenticator']);
  const user = await createUser(api, [app]);
  const auth = await key.as.post('/authenticate', { type: 'username', application: app, credential: { username: user.email, password: defaultUserPassword } });
  assert.equal(auth.status, 200);
  assert.equal(ok(auth)['authenticated'], true);
  const before = (await server.auditLines()).length;
  const list = await key.as.get('/users');
  assert.equal(list.status, 403);
  fails(list, 403, 'forbidden');
  assert.equal((await key.as.post('/applications/application', { name: 'not allowed' })).status, 403);
  const lines = (await server.auditLines()).slice(before).filter((l) => l['outcome'] === 'forbidden');
  assert.deepEqual(lines.map((l) => [l['audit'], l['caller'], l['reason']]), [
    ['listUsers', admin.id, 'lacks_role_auditor'],
    ['application.create', admin.id, 'lacks_role_manager'],
  ]);
  assert.equal((await api.client.applications.list()).some((a) => a.name === 'not allowed'), false, 'a refused call changes nothing');
});

test('an auditor reads everything but secrets, and changes nothing', async () => {
  const auditor = await caller(['auditor']);
  assert.equal((await auditor.as.get('/users')).status, 200);
  assert.equal((await auditor.as.get(`/applications/application/${app}`)).status, 200);
  assert.equal((await auditor.as.get('/metrics')).status, 200);
  const target = await createUser(api, [app]);
  const key = await createApikey(api, target.id);
  const secretRead = await auditor.as.put(`/users/user/${target.id}/apikey/${key.id}`, {});
  assert.equal(secretRead.status, 403, 'updating a key answers its secret: not for an auditor');
  assert.ok(!secretRead.text.includes(key.secret));
  assert.equal((await auditor.as.post('/authenticate', { type: 'username', application: app, credential: { username: target.email, password: 'x' } })).status, 403);
  assert.equal((await auditor.as.post('/admin/snapshot')).status, 403);
});

test('a manager manages end users and Applications, not base-Application Users, roles or the base Application', async () => {
  const manager = await caller(['manager']);
  const created = await manager.as.post('/applications/application', { name: 'managed' });
  assert.equal(created.status, 200);
  const end = await manager.as.post('/users/user', { email: 'managed-end@example.com', password: defaultUserPassword, applications: [app] });
  assert.equal(end.status, 200);
  const endId = (ok(end)['user'] as Json)['id'] as string;
  assert.equal((await manager.as.put(`/users/user/${endId}`, { name: 'renamed' })).status, 200);
  assert.equal((await manager.as.post(`/users/user/${endId}/apikey`, { name: 'k' })).status, 200);

  const refusals: [string, Promise<HttpResult>][] = [
    ['a base user', manager.as.post('/users/user', { email: 'managed-admin@example.com', password: defaultUserPassword, applications: [base] })],
    ['into the base Application', manager.as.put(`/users/user/${endId}`, { applications: [base] })],
    ['roles', manager.as.put(`/users/user/${endId}`, { roles: ['auditor'] })],
    ['the admin', manager.as.put(`/users/user/${(await getAdmin(api)).id}`, { name: 'owned' })],
    ['its own roles', manager.as.put(`/users/user/${manager.id}`, { roles: ['admin'] })],
    ['an admin\'s key', manager.as.post(`/users/user/${(await getAdmin(api)).id}/apikey`, { name: 'stolen' })],
    ['the base Application', manager.as.put(`/applications/application/${base}`, { description: 'mine' })],
    ['a snapshot', manager.as.post('/admin/snapshot')],
  ];
  for (const [what, pending] of refusals) {
    const res = await pending;
    assert.equal(res.status, 403, what);
    fails(res, 403, 'forbidden');
  }
  assert.equal((await api.client.users.search('managed-admin@example.com')()).length, 0);
  assert.equal((await getAdmin(api)).name, 'Administrator');
  assert.deepEqual((await api.client.users.get(manager.id)).roles, ['manager']);
});

test('roles are in the User representation of base Users, and only an admin writes them', async () => {
  const plain = await caller(undefined);
  assert.deepEqual((await api.client.users.get(plain.id)).roles, ['admin'], 'a base User created without roles is an admin');
  const end = await createUser(api, [app]);
  assert.equal((await api.client.users.get(end.id)).roles, undefined, 'an end user has none');
  const res = await api.put(`/users/user/${plain.id}`, { roles: ['auditor', 'authenticator'] });
  assert.equal(res.status, 200);
  assert.deepEqual((ok(res)['user'] as Json)['roles'], ['auditor', 'authenticator']);
  assert.equal((await plain.as.get('/users')).status, 200);
  assert.equal((await plain.as.post('/applications/application', { name: 'x' })).status, 403);
  const bad = await api.put(`/users/user/${plain.id}`, { roles: ['root'] });
  assert.equal(bad.status, 400);
});

test('a key\'s roles are within its owner\'s, and intersect with them at every call, also after the owner\'s change', async () => {
  const owner = await caller(['manager', 'auditor']);
  const tooMuch = await api.post(`/users/user/${owner.id}/apikey`, { roles: ['admin'] });
  assert.equal(tooMuch.status, 400);
  failsOnField(tooMuch, 'roles');
  const key = await keyCaller(owner.id, ['manager']);
  assert.deepEqual((await api.client.apikeys.get(owner.id, key.id)).roles, ['manager']);
  assert.equal((await key.as.post('/applications/application', { name: 'by key' })).status, 200);
  await api.client.users.update(owner.id, { roles: ['auditor'] });
  assert.equal((await key.as.post('/applications/application', { name: 'by key again' })).status, 403, 'the owner lost manager: so did the key');
  assert.equal((await key.as.get('/applications')).status, 200, 'auditor ∩ manager still grants reads');
});

test('a recognised POST /authenticate stops at once when its key loses the authenticator role', async () => {
  const admin = await getAdmin(api);
  const key = await keyCaller(admin.id, ['authenticator']);
  const user = await createUser(api, [app]);
  const body = { type: 'username', application: app, credential: { username: user.email, password: defaultUserPassword }, ip_address: '203.0.113.50' };
  for (let i = 0; i < 3; i++) assert.equal((await key.as.post('/authenticate', body)).status, 200);
  await api.client.apikeys.update(admin.id, key.id, { roles: ['auditor'] });
  const refused = await key.as.post('/authenticate', body);
  assert.equal(refused.status, 403);
  assert.equal((await key.as.get('/users')).status, 200);
});

test('the last admin can neither lose the role nor be disabled', async () => {
  // Every other admin this file made loses the role first, so the first admin is the last one.
  const all = await api.client.users.list();
  const admin = await getAdmin(api);
  for (const u of all) {
    if (u.id !== admin.id && u.roles !== undefined && u.roles.includes('admin')) await api.client.users.update(u.id, { roles: ['auditor'] });
  }
  const demote = await api.put(`/users/user/${admin.id}`, { roles: ['manager'] });
  assert.equal(demote.status, 409);
  fails(demote, 409, 'last_admin');
  assert.equal((await api.put(`/users/user/${admin.id}`, { status: 'DISABLED' })).status, 409);
  const next = await caller(['admin']);
  assert.equal((await api.put(`/users/user/${admin.id}`, { roles: ['manager'] })).status, 200, 'with another admin it may');
  assert.equal((await api.put(`/users/user/${admin.id}`, { roles: ['admin'] })).status, 403, 'and is then no admin itself');
  assert.equal((await next.as.put(`/users/user/${admin.id}`, { roles: ['admin'] })).status, 200);
});
