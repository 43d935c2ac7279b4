// HTTP: /organizations — create, read, update, delete rules (DISABLED, no Users, never the default), unique names, Users listing, moving a User.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { AuthError, type AuthClient, type Organization } from '../src/client/index.js';
import { baseApplicationId, createUser, getAdmin, unknownId } from './helpers/http-fixtures.js';
import {
  assertKeys, assertTimestamp, assertUserIds, fails, failsOnField, ok, okKey, refusedDelete, assertLater,
} from './helpers/http-shapes.js';
import { startServer, type Api, type ServerProcess } from './helpers/server.js';

let server: ServerProcess;
let api: Api;
let client: AuthClient;
let baseApp: string;

before(async () => {
  server = await startServer();
  api = server.api();
  client = api.client;
  baseApp = await baseApplicationId(api);
});

after(async () => {
  await server?.dispose();
});

const organizationKeys = ['id', 'name', 'description', 'custom_data', 'status', 'href', 'created_at', 'modified_at'];

function assertOrganization(org: unknown): asserts org is Organization {
  assertKeys(org, organizationKeys, 'organization');
  const o = org as unknown as Organization;
  assert.match(o.id, /^[0-9A-Za-z]+$/);
  assert.equal(o.href, `${server.publicUrl}/organizations/organization/${o.id}`);
  assert.ok(o.status === 'ENABLED' || o.status === 'DISABLED');
  assertTimestamp(o.created_at, 'organization.created_at');
  assertTimestamp(o.modified_at, 'organization.modified_at');
}

/** The AuthError a call throws, checked for status and code. */
async function refused(call: Promise<unknown>, status: number, code: string): Promise<AuthError> {
  try {
    await call;
  } catch (err) {
    assert.ok(err instanceof AuthError, `expected AuthError, got ${String(err)}`);
    assert.equal(err.status, status, err.message);
    assert.equal(err.code, code, err.message);
    return err;
  }
  assert.fail(`expected ${status} ${code}, the call succeeded`);
}

describe('POST /organizations/organization', () => {
  test('creates an ENABLED Organization with exactly its fields', async () => {
    const res = await api.post('/organizations/organization', { name: 'Globex', description: 'a company', custom_data: { plan: 'gold' } });
    const org = okKey<Organization>(res, 'organization');
    assertOrganization(org);
    assert.equal(org.name, 'Globex');
    assert.equal(org.description, 'a company');
    assert.deepEqual(org.custom_data, { plan: 'gold' });
    assert.equal(org.status, 'ENABLED');
    assert.deepEqual(await client.organizations.get(org.id), org, 'GET returns what POST returned');
  });

  test('names are unique case-insensitively (409 duplicate_name), on create and on rename', async () => {
    const first = await client.organizations.create({ name: 'Initech' });
    fails(await api.post('/organizations/organization', { name: 'INITECH' }), 409, 'duplicate_name');
    const other = await client.organizations.create({ name: 'Umbrella' });
    await refused(client.organizations.update(other.id, { name: 'initech' }), 409, 'duplicate_name');
    // Renaming to itself in another case is no clash.
    assert.equal((await client.organizations.update(first.id, { name: 'initech' })).name, 'initech');
  });

  test('name is required and bounded; custom_data must be an object or null', async () => {
    failsOnField(await api.post('/organizations/organization', {}), 'name');
    failsOnField(await api.post('/organizations/organization', { name: '   ' }), 'name');
    failsOnField(await api.post('/organizations/organization', { name: 'x'.repeat(300) }), 'name');
    failsOnField(await api.post('/organizations/organization', { name: 'ok', custom_data: [1] }), 'custom_data');
    assert.equal((await client.organizations.create({ name: 'Nulled', custom_data: null })).custom_data, null);
  });

  test('needs credentials', async () => {
    fails(await api.post('/organizations/organization', { name: 'nope' }, { credentials: null }), 401, 'unauthorized');
  });
});

describe('GET, PUT /organizations/organization/{orgid}', () => {
  test('unknown and malformed ids', async () => {
    fails(await api.get(`/organizations/organization/${unknownId}`), 404, 'not_found');
    fails(await api.get('/organizations/organization/bad-id!'), 400, 'invalid_id');
    fails(await api.put(`/organizations/organization/${unknownId}`, { name: 'x' }), 404, 'not_found');
  });

  test('omitted fields keep their value; modified_at moves, created_at stays', async () => {
    const org = await client.organizations.create({ name: 'Hooli', description: 'd', custom_data: { a: 1 } });
    const updated = await client.organizations.update(org.id, { status: 'DISABLED' });
    assert.equal(updated.status, 'DISABLED');
    assert.equal(updated.name, 'Hooli');
    assert.equal(updated.description, 'd');
    assert.deepEqual(updated.custom_data, { a: 1 });
    assert.equal(updated.created_at, org.created_at);
    assertLater(updated.modified_at, org.modified_at, 'modified_at');
    failsOnField(await api.put(`/organizations/organization/${org.id}`, { status: 'GONE' }), 'status');
  });

  test('GET /organizations lists the default Organization and the new ones, in creation order', async () => {
    const made = await client.organizations.create({ name: 'Listed' });
    const all = okKey<Organization[]>(await api.get('/organizations'), 'organizations');
    for (const o of all) assertOrganization(o);
    const admin = await getAdmin(api);
    assert.equal(all[0]!.id, admin.organization.id, 'the default Organization came first');
    assert.equal(all[0]!.name, 'default');
    assert.equal(all[all.length - 1]!.id, made.id);
  });
});

describe('Users of an Organization', () => {
  test('company_name, an explicit organization and PUT /users/user all place Users; the listing has ids', async () => {
    const acme = await client.organizations.create({ name: 'Acme Corp' });
    const byName = await createUser(api, [baseApp], { custom_data: { company_name: 'acme corp' } });
    assert.equal(byName.organization.id, acme.id, 'company_name finds the Organization case-insensitively');
    const byId = await createUser(api, [baseApp], { organization: acme.id });
    const elsewhere = await createUser(api, [baseApp]);
    assert.notEqual(elsewhere.organization.id, acme.id);

    const listed = okKey<unknown[]>(await api.get(`/organizations/organization/${acme.id}/users`), 'users');
    for (const u of listed) assertUserIds(u, server.publicUrl);
    assert.deepEqual(listed.map((u) => (u as { id: string }).id), [byName.id, byId.id]);
    assert.equal((listed[0] as { organization: string }).organization, acme.id);

    const moved = await client.users.update(elsewhere.id, { organization: acme.id });
    assert.equal(moved.organization.id, acme.id);
    assert.deepEqual((await client.organizations.users(acme.id)()).map((u) => u.id), [byName.id, byId.id, elsewhere.id]);
    failsOnField(await api.put(`/users/user/${elsewhere.id}`, { organization: unknownId }), 'organization', 'unknown_reference');
    fails(await api.get(`/organizations/organization/${unknownId}/users`), 404, 'not_found');
  });
});

describe('DELETE /organizations/organization/{orgid}', () => {
  test('needs DISABLED, then no Users; answers deleted:true and the Organization is gone', async () => {
    const org = await client.organizations.create({ name: 'Soon Gone' });
    const user = await createUser(api, [baseApp], { organization: org.id });
    refusedDelete(await api.delete(`/organizations/organization/${org.id}`), 'delete_refused');
    await client.organizations.update(org.id, { status: 'DISABLED' });
    const withUsers = refusedDelete(await api.delete(`/organizations/organization/${org.id}`), 'delete_refused');
    assert.match(withUsers.message, /Users/);
    const admin = await getAdmin(api);
    await client.users.update(user.id, { organization: admin.organization.id });
    assert.deepEqual(ok(await api.delete(`/organizations/organization/${org.id}`)), { deleted: true });
    fails(await api.get(`/organizations/organization/${org.id}`), 404, 'not_found');
    fails(await api.delete(`/organizations/organization/${org.id}`), 404, 'not_found');
  });

  test('the default Organization is never deleted, not even when DISABLED', async () => {
    const admin = await getAdmin(api);
    const defaultOrg = admin.organization.id;
    await client.organizations.update(defaultOrg, { status: 'DISABLED' });
    const err = await refused(client.organizations.delete(defaultOrg), 409, 'delete_refused');
    assert.deepEqual(err.result, { deleted: false });
    assert.match(err.message, /default/);
    await client.organizations.update(defaultOrg, { status: 'ENABLED' });
  });
});
