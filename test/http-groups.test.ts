// HTTP: /groups — list, create, read, update, name uniqueness per Application, delete rule, the Group's Users; hrefs from PUBLIC_URL.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  createApplication, createGroup, createUser, getGroup, getUser, unique, unknownId,
} from './helpers/http-fixtures.js';
import {
  assertApplication, assertGroup, assertLater, assertUserFull, assertUserIds, fails, failsOnField, ok, okKey, refusedDelete,
  type GroupJson, type UserIdsJson,
} from './helpers/http-shapes.js';
import { startServer, type Api, type ServerProcess } from './helpers/server.js';

const publicUrl = 'https://auth.example.test';
let server: ServerProcess;
let api: Api;

before(async () => {
  server = await startServer({ env: { PUBLIC_URL: publicUrl } });
  api = server.api();
});

after(async () => {
  await server?.dispose();
});

async function groupCount(applicationId: string): Promise<number> {
  return okKey<GroupJson[]>(await api.get(`/applications/application/${applicationId}/groups`), 'groups').length;
}

describe('PUBLIC_URL', () => {
  test('is the base of every href: Application, Group, User, API Key', async () => {
    const app = await createApplication(api);
    assert.equal(app.href, `${publicUrl}/applications/application/${app.id}`);
    const group = await createGroup(api, app.id);
    assert.equal(group.href, `${publicUrl}/groups/group/${group.id}`);
    const user = await createUser(api, [app.id], { groups: [group.id] });
    assert.equal(user.href, `${publicUrl}/users/user/${user.id}`, 'the create-user response carries the absolute href too');
    assertUserFull(user, publicUrl);
    const key = okKey<{ href: string; id: string }>(await api.post(`/users/user/${user.id}/apikey`, { name: 'k' }), 'apikey');
    assert.equal(key.href, `${publicUrl}/users/user/${user.id}/apikey/${key.id}`);
  });
});

describe('POST /groups/group', () => {
  test('creates an ENABLED Group in its Application with exactly the spec fields', async () => {
    const app = await createApplication(api);
    const customData = { classify_limit: 100, tier_depth: 3, monthly_limit: 5000, company_id: 'c-42', _no_encrypt: true };
    const group = okKey<GroupJson>(await api.post('/groups/group', {
      name: 'Premium', description: 'Paying customers', custom_data: customData, application: app.id,
    }), 'group');
    assertGroup(group, publicUrl);
    assert.equal(group.name, 'Premium');
    assert.equal(group.description, 'Paying customers');
    assert.deepEqual(group.custom_data, customData, 'the sample group keys are kept verbatim');
    assert.equal(group.status, 'ENABLED');
    assert.equal(group.application, app.id);
    assert.equal(group.created_at, group.modified_at);
    assert.deepEqual(await getGroup(api, group.id), group);
  });

  test('custom_data is an object even when none is given', async () => {
    const app = await createApplication(api);
    const group = await createGroup(api, app.id);
    assert.deepEqual(group.custom_data, {});
  });

  test('without an application, or with an unknown one, is a 400 naming application and creates nothing', async () => {
    const app = await createApplication(api);
    const before = okKey<GroupJson[]>(await api.get('/groups'), 'groups').length;
    failsOnField(await api.post('/groups/group', { name: unique('g') }), 'application');
    failsOnField(await api.post('/groups/group', { name: unique('g'), application: unknownId }), 'application', 'unknown_reference');
    failsOnField(await api.post('/groups/group', { name: unique('g'), application: 'not an id' }), 'application');
    assert.equal(okKey<GroupJson[]>(await api.get('/groups'), 'groups').length, before);
    assert.equal(await groupCount(app.id), 0);
  });

  test('without a name is a 400 naming name', async () => {
    const app = await createApplication(api);
    failsOnField(await api.post('/groups/group', { application: app.id }), 'name');
    assert.equal(await groupCount(app.id), 0);
  });

  test('custom_data null is a 400 naming custom_data (a Group\'s custom_data is an object)', async () => {
    const app = await createApplication(api);
    failsOnField(await api.post('/groups/group', { name: unique('g'), application: app.id, custom_data: null }), 'custom_data');
    assert.equal(await groupCount(app.id), 0);
  });
});

describe('group names', () => {
  test('are unique within an Application, case-insensitively: 409 on create, nothing created', async () => {
    const app = await createApplication(api);
    const first = await createGroup(api, app.id, { name: 'Admins' });
    fails(await api.post('/groups/group', { name: 'Admins', application: app.id }), 409, 'duplicate_name');
    fails(await api.post('/groups/group', { name: 'aDMINS', application: app.id }), 409, 'duplicate_name');
    const groups = okKey<GroupJson[]>(await api.get(`/applications/application/${app.id}/groups`), 'groups');
    assert.deepEqual(groups.map((g) => g.id), [first.id]);
  });

  test('concurrent creates of one name make exactly one Group', async () => {
    const app = await createApplication(api);
    const names = ['Race', 'race', 'RACE', 'Race', 'rAce', 'racE', 'Race', 'race'];
    const results = await Promise.all(names.map((name) => api.post('/groups/group', { name, application: app.id })));
    assert.equal(results.filter((r) => r.status === 200).length, 1, `statuses ${results.map((r) => r.status).join(',')}`);
    for (const r of results.filter((x) => x.status !== 200)) fails(r, 409, 'duplicate_name');
    assert.equal(await groupCount(app.id), 1);
  });

  test('may repeat in another Application', async () => {
    const a = await createApplication(api);
    const b = await createApplication(api);
    const inA = await createGroup(api, a.id, { name: 'Editors' });
    const inB = await createGroup(api, b.id, { name: 'Editors' });
    assert.notEqual(inA.id, inB.id);
    assert.equal(inB.name, 'Editors');
    assert.equal(inB.application, b.id);
  });

  test('are unique on rename too: 409, and the Group keeps its name', async () => {
    const app = await createApplication(api);
    await createGroup(api, app.id, { name: 'Readers' });
    const other = await createGroup(api, app.id, { name: 'Writers' });
    fails(await api.put(`/groups/group/${other.id}`, { name: 'READERS' }), 409, 'duplicate_name');
    assert.deepEqual(await getGroup(api, other.id), other, 'the refused rename changed nothing');
  });

  test('a Group may be renamed to its own name in another case', async () => {
    const app = await createApplication(api);
    const group = await createGroup(api, app.id, { name: 'owners' });
    const renamed = okKey<GroupJson>(await api.put(`/groups/group/${group.id}`, { name: 'Owners' }), 'group');
    assert.equal(renamed.name, 'Owners');
  });

  test('a deleted Group\'s name is free again', async () => {
    const app = await createApplication(api);
    const group = await createGroup(api, app.id, { name: 'Temporary' });
    ok(await api.put(`/groups/group/${group.id}`, { status: 'DISABLED' }));
    assert.deepEqual(ok(await api.delete(`/groups/group/${group.id}`)), { deleted: true });
    const again = await createGroup(api, app.id, { name: 'temporary' });
    assert.notEqual(again.id, group.id);
  });
});

describe('GET /groups', () => {
  test('lists every Group in full', async () => {
    const app = await createApplication(api);
    const group = await createGroup(api, app.id);
    const groups = okKey<GroupJson[]>(await api.get('/groups'), 'groups');
    for (const g of groups) assertGroup(g, publicUrl);
    assert.deepEqual(groups.find((g) => g.id === group.id), group);
  });
});

describe('GET /groups/group/{groupid}', () => {
  test('an unknown id is a 404 not_found', async () => {
    fails(await api.get(`/groups/group/${unknownId}`), 404, 'not_found');
    fails(await api.put(`/groups/group/${unknownId}`, { name: 'x' }), 404, 'not_found');
    fails(await api.delete(`/groups/group/${unknownId}`), 404, 'not_found');
    fails(await api.get(`/groups/group/${unknownId}/users`), 404, 'not_found');
  });
});

describe('PUT /groups/group/{groupid}', () => {
  test('changes only the given fields and moves modified_at', async () => {
    const app = await createApplication(api);
    const group = await createGroup(api, app.id, { description: 'one', custom_data: { monthly_limit: 1 } });
    const updated = okKey<GroupJson>(await api.put(`/groups/group/${group.id}`, { description: 'two' }), 'group');
    assertGroup(updated, publicUrl);
    assert.equal(updated.name, group.name);
    assert.equal(updated.description, 'two');
    assert.deepEqual(updated.custom_data, { monthly_limit: 1 });
    assert.equal(updated.application, app.id);
    assert.equal(updated.created_at, group.created_at);
    assertLater(updated.modified_at, group.modified_at, 'modified_at after an update');

    const data = okKey<GroupJson>(await api.put(`/groups/group/${group.id}`, { custom_data: { tier_depth: 2 } }), 'group');
    assert.deepEqual(data.custom_data, { tier_depth: 2 });
    assertLater(data.modified_at, updated.modified_at, 'modified_at after a second update');
    assert.deepEqual(await getGroup(api, group.id), data);
  });

  test('status moves to DISABLED and back to ENABLED', async () => {
    const app = await createApplication(api);
    const group = await createGroup(api, app.id);
    const disabled = okKey<GroupJson>(await api.put(`/groups/group/${group.id}`, { status: 'DISABLED' }), 'group');
    assert.equal(disabled.status, 'DISABLED');
    assertLater(disabled.modified_at, group.modified_at, 'modified_at on disable');
    const enabled = okKey<GroupJson>(await api.put(`/groups/group/${group.id}`, { status: 'ENABLED' }), 'group');
    assert.equal(enabled.status, 'ENABLED');
    assertLater(enabled.modified_at, disabled.modified_at, 'modified_at on enable');
  });

  test('an invalid status or name is a 400 naming it, and changes nothing', async () => {
    const app = await createApplication(api);
    const group = await createGroup(api, app.id);
    failsOnField(await api.put(`/groups/group/${group.id}`, { status: 'ARCHIVED' }), 'status');
    failsOnField(await api.put(`/groups/group/${group.id}`, { name: '' }), 'name');
    failsOnField(await api.put(`/groups/group/${group.id}`, { name: 42 }), 'name');
    failsOnField(await api.put(`/groups/group/${group.id}`, { custom_data: [1] }), 'custom_data');
    assert.deepEqual(await getGroup(api, group.id), group);
  });
});

describe('DELETE /groups/group/{groupid}', () => {
  test('an ENABLED Group is refused with 409 deleted:false and stays', async () => {
    const app = await createApplication(api);
    const group = await createGroup(api, app.id);
    refusedDelete(await api.delete(`/groups/group/${group.id}`));
    assert.deepEqual(await getGroup(api, group.id), group);
  });

  test('a DISABLED Group is deleted, and is gone from its members and from every listing', async () => {
    const app = await createApplication(api);
    const group = await createGroup(api, app.id);
    const keep = await createGroup(api, app.id);
    const member = await createUser(api, [app.id], { groups: [group.id, keep.id] });
    ok(await api.put(`/groups/group/${group.id}`, { status: 'DISABLED' }));
    assert.deepEqual(ok(await api.delete(`/groups/group/${group.id}`)), { deleted: true });
    fails(await api.get(`/groups/group/${group.id}`), 404, 'not_found');
    fails(await api.delete(`/groups/group/${group.id}`), 404, 'not_found');
    assert.ok(!okKey<GroupJson[]>(await api.get('/groups'), 'groups').some((g) => g.id === group.id));
    const groupsOfApp = okKey<GroupJson[]>(await api.get(`/applications/application/${app.id}/groups`), 'groups');
    assert.deepEqual(groupsOfApp.map((g) => g.id), [keep.id]);
    const after = await getUser(api, member.id);
    assert.deepEqual(after.groups.map((g) => g.id), [keep.id], 'the member is no longer in the deleted Group');
  });
});

describe('GET /groups/group/{groupid}/users', () => {
  test('lists exactly the members, with applications and groups as id arrays', async () => {
    const app = await createApplication(api);
    const group = await createGroup(api, app.id);
    const other = await createGroup(api, app.id);
    const member = await createUser(api, [app.id], { groups: [group.id, other.id] });
    await createUser(api, [app.id], { groups: [other.id] });
    const users = okKey<UserIdsJson[]>(await api.get(`/groups/group/${group.id}/users`), 'users');
    for (const u of users) assertUserIds(u, publicUrl);
    assert.deepEqual(users.map((u) => u.id), [member.id]);
    assert.deepEqual(users[0]!.applications, [app.id]);
    assert.deepEqual([...users[0]!.groups].sort(), [group.id, other.id].sort());
  });

  test('a Group without members lists none', async () => {
    const app = await createApplication(api);
    const group = await createGroup(api, app.id);
    assert.deepEqual(okKey(await api.get(`/groups/group/${group.id}/users`), 'users'), []);
  });

  test('full user representations carry the member\'s Groups as full objects', async () => {
    const app = await createApplication(api);
    const group = await createGroup(api, app.id, { custom_data: { classify_limit: 7 } });
    const user = await createUser(api, [app.id], { groups: [group.id] });
    assertUserFull(user, publicUrl);
    assert.deepEqual(user.groups, [group]);
    for (const a of user.applications) assertApplication(a, publicUrl);
  });
});
