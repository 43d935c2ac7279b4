// HTTP: /applications — list, create, read, update, delete rules, the base Application's protection, its Users and Groups, /health.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  baseApplicationId, createApplication, createGroup, createUser, getApplication, getGroup, unique, unknownId,
} from './helpers/http-fixtures.js';
import {
  assertApplication, assertGroup, assertLater, assertUserIds, fails, failsOnField, ok, okKey, refusedDelete,
  type ApplicationJson, type GroupJson, type UserIdsJson,
} from './helpers/http-shapes.js';
import { adminPassword, startServer, type Api, type ServerProcess } from './helpers/server.js';

let server: ServerProcess;
let api: Api;
let baseApp: string;

before(async () => {
  server = await startServer();
  api = server.api();
  baseApp = await baseApplicationId(api);
});

after(async () => {
  await server?.dispose();
});

describe('GET /health', () => {
  test('answers {"status":"ok"} without credentials', async () => {
    const res = await api.get('/health', { credentials: null });
    assert.deepEqual(ok(res), { status: 'ok' });
  });
});

describe('request log', () => {
  test('one pino line per request with method, path, status and duration, and no credentials', async () => {
    const path = `/applications/application/${unknownId}`;
    fails(await api.get(path), 404, 'not_found');
    ok(await api.post('/applications/application', { name: 'logged' }));
    const find = (): Record<string, unknown>[] => server.logLines().filter((l) => l['msg'] === 'request' && l['path'] === path);
    // The server gathers lines for a few milliseconds: give this one a moment to arrive.
    for (let i = 0; i < 100 && find().length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    const lines = find();
    assert.equal(lines.length, 1, 'exactly one line for the request');
    assert.equal(lines[0]!['method'], 'GET');
    assert.equal(lines[0]!['status'], 404);
    const durationKeys = ['ms', 'duration', 'durationMs', 'responseTime'];
    assert.ok(durationKeys.some((k) => typeof lines[0]![k] === 'number'), `a duration field: ${JSON.stringify(lines[0])}`);
    const output = server.output();
    assert.ok(!output.includes(adminPassword), 'the admin password is never logged');
    assert.ok(!/authorization"\s*:\s*"basic/i.test(output), 'the Authorization header is never logged');
  });
});

describe('hrefs without PUBLIC_URL', () => {
  test('are absolute from http://HOST:PORT', async () => {
    const app = await createApplication(api);
    assert.equal(app.href, `http://127.0.0.1:${server.port}/applications/application/${app.id}`);
  });
});

describe('POST /applications/application', () => {
  test('creates an ENABLED Application with exactly the spec fields, echoing name, description and custom_data', async () => {
    const customData = { tier: 'gold', limits: { monthly: 1000, regions: ['eu', 'us'] }, flag: true, none: null };
    const app = okKey<ApplicationJson>(await api.post('/applications/application', {
      name: 'Billing Portal', description: 'Where invoices live', custom_data: customData,
    }), 'application');
    assertApplication(app, server.publicUrl);
    assert.equal(app.name, 'Billing Portal');
    assert.equal(app.description, 'Where invoices live');
    assert.deepEqual(app.custom_data, customData);
    assert.equal(app.status, 'ENABLED');
    assert.equal(app.created_at, app.modified_at, 'a new Application was modified when it was created');
    assert.deepEqual(await getApplication(api, app.id), app, 'GET returns what POST returned');
  });

  test('custom_data is null when none is given', async () => {
    const app = await createApplication(api);
    assert.equal(app.custom_data, null);
  });

  test('gives every Application its own id', async () => {
    const a = await createApplication(api);
    const b = await createApplication(api);
    assert.notEqual(a.id, b.id);
  });

  test('without a name is a 400 naming name, and creates nothing', async () => {
    const before = okKey<ApplicationJson[]>(await api.get('/applications'), 'applications').length;
    failsOnField(await api.post('/applications/application', { description: 'no name' }), 'name');
    const after = okKey<ApplicationJson[]>(await api.get('/applications'), 'applications').length;
    assert.equal(after, before);
  });
});

describe('GET /applications', () => {
  test('lists every Application, the base Application included, in full', async () => {
    const made = await createApplication(api);
    const apps = okKey<ApplicationJson[]>(await api.get('/applications'), 'applications');
    assert.ok(Array.isArray(apps));
    for (const app of apps) assertApplication(app, server.publicUrl, { allowEmptyCreatedAt: app.id === baseApp });
    assert.deepEqual(apps.find((a) => a.id === made.id), made);
    const base = apps.find((a) => a.id === baseApp);
    assert.ok(base !== undefined, 'the base Application is listed');
    assert.equal(base.status, 'ENABLED');
  });
});

describe('GET /applications/application/{appid}', () => {
  test('an unknown id is a 404 not_found', async () => {
    fails(await api.get(`/applications/application/${unknownId}`), 404, 'not_found');
    fails(await api.put(`/applications/application/${unknownId}`, { name: 'x' }), 404, 'not_found');
    fails(await api.delete(`/applications/application/${unknownId}`), 404, 'not_found');
    fails(await api.get(`/applications/application/${unknownId}/users`), 404, 'not_found');
    fails(await api.get(`/applications/application/${unknownId}/groups`), 404, 'not_found');
  });
});

describe('PUT /applications/application/{appid}', () => {
  test('a status other than ENABLED or DISABLED is a 400 naming status, and changes nothing', async () => {
    const app = await createApplication(api);
    failsOnField(await api.put(`/applications/application/${app.id}`, { status: 'PAUSED' }), 'status');
    failsOnField(await api.put(`/applications/application/${app.id}`, { status: 'disabled' }), 'status');
    assert.deepEqual(await getApplication(api, app.id), app);
  });
  test('changes only the given fields and moves modified_at', async () => {
    const app = await createApplication(api, { description: 'first', custom_data: { a: 1 } });

    const renamed = okKey<ApplicationJson>(await api.put(`/applications/application/${app.id}`, { name: 'Renamed' }), 'application');
    assertApplication(renamed, server.publicUrl);
    assert.equal(renamed.name, 'Renamed');
    assert.equal(renamed.description, 'first');
    assert.deepEqual(renamed.custom_data, { a: 1 });
    assert.equal(renamed.status, 'ENABLED');
    assert.equal(renamed.created_at, app.created_at);
    assertLater(renamed.modified_at, app.modified_at, 'modified_at after a rename');

    const described = okKey<ApplicationJson>(await api.put(`/applications/application/${app.id}`, { description: 'second', custom_data: { b: [1, 2] } }), 'application');
    assert.equal(described.name, 'Renamed');
    assert.equal(described.description, 'second');
    assert.deepEqual(described.custom_data, { b: [1, 2] }, 'custom_data is replaced, not merged');
    assertLater(described.modified_at, renamed.modified_at, 'modified_at after a second update');

    assert.deepEqual(await getApplication(api, app.id), described);
  });

  test('custom_data can be set back to null', async () => {
    const app = await createApplication(api, { custom_data: { x: 1 } });
    const cleared = okKey<ApplicationJson>(await api.put(`/applications/application/${app.id}`, { custom_data: null }), 'application');
    assert.equal(cleared.custom_data, null);
  });

  test('status moves ENABLED -> DISABLED -> ENABLED, each time moving modified_at', async () => {
    const app = await createApplication(api);
    const disabled = okKey<ApplicationJson>(await api.put(`/applications/application/${app.id}`, { status: 'DISABLED' }), 'application');
    assert.equal(disabled.status, 'DISABLED');
    assertLater(disabled.modified_at, app.modified_at, 'modified_at on disable');
    assert.equal((await getApplication(api, app.id)).status, 'DISABLED');
    const enabled = okKey<ApplicationJson>(await api.put(`/applications/application/${app.id}`, { status: 'ENABLED' }), 'application');
    assert.equal(enabled.status, 'ENABLED');
    assertLater(enabled.modified_at, disabled.modified_at, 'modified_at on enable');
  });
});

describe('DELETE /applications/application/{appid}', () => {
  test('an ENABLED Application is refused with 409 deleted:false and stays', async () => {
    const app = await createApplication(api);
    refusedDelete(await api.delete(`/applications/application/${app.id}`));
    assert.deepEqual(await getApplication(api, app.id), app);
  });

  test('a DISABLED Application with an associated User is refused until the User leaves it', async () => {
    const app = await createApplication(api);
    const user = await createUser(api, [app.id]);
    const disabled = okKey<ApplicationJson>(await api.put(`/applications/application/${app.id}`, { status: 'DISABLED' }), 'application');

    refusedDelete(await api.delete(`/applications/application/${app.id}`));
    assert.deepEqual(await getApplication(api, app.id), disabled, 'a refused delete changes nothing');

    assert.deepEqual(ok(await api.delete(`/users/user/${user.id}/application/${app.id}`)), { deleted: true });
    assert.deepEqual(ok(await api.delete(`/applications/application/${app.id}`)), { deleted: true });
    fails(await api.get(`/applications/application/${app.id}`), 404, 'not_found');
    const listed = okKey<ApplicationJson[]>(await api.get('/applications'), 'applications');
    assert.ok(!listed.some((a) => a.id === app.id), 'a deleted Application is not listed');
  });

  test('a DISABLED Application with Groups, ENABLED or DISABLED, is refused and changes nothing (issue 23)', async () => {
    const app = await createApplication(api);
    const enabled = await createGroup(api, app.id);
    const disabled = okKey<GroupJson>(await api.put(`/groups/group/${(await createGroup(api, app.id)).id}`, { status: 'DISABLED' }), 'group');
    const disabledApp = okKey<ApplicationJson>(await api.put(`/applications/application/${app.id}`, { status: 'DISABLED' }), 'application');

    const error = refusedDelete(await api.delete(`/applications/application/${app.id}`), 'delete_refused');
    assert.match(error.message, /Groups must be deleted before the Application can be deleted/);
    assert.deepEqual(await getApplication(api, app.id), disabledApp, 'the Application stays');
    assert.deepEqual(await getGroup(api, enabled.id), enabled, 'an ENABLED Group is not deleted behind its own rule');
    assert.deepEqual(await getGroup(api, disabled.id), disabled);
    const listed = okKey<GroupJson[]>(await api.get(`/applications/application/${app.id}/groups`), 'groups');
    assert.deepEqual(listed.map((g) => g.id).sort(), [enabled.id, disabled.id].sort());

    // Once only the ENABLED one is left, still refused.
    ok(await api.delete(`/groups/group/${disabled.id}`));
    refusedDelete(await api.delete(`/applications/application/${app.id}`), 'delete_refused');
    assert.deepEqual(await getGroup(api, enabled.id), enabled);
  });

  test('a DISABLED Application without Users is deleted once its Groups are', async () => {
    const app = await createApplication(api);
    const group = await createGroup(api, app.id);
    ok(await api.put(`/applications/application/${app.id}`, { status: 'DISABLED' }));
    refusedDelete(await api.delete(`/applications/application/${app.id}`), 'delete_refused');
    ok(await api.put(`/groups/group/${group.id}`, { status: 'DISABLED' }));
    assert.deepEqual(ok(await api.delete(`/groups/group/${group.id}`)), { deleted: true });
    assert.deepEqual(ok(await api.delete(`/applications/application/${app.id}`)), { deleted: true });
    fails(await api.get(`/applications/application/${app.id}`), 404, 'not_found');
    fails(await api.get(`/groups/group/${group.id}`), 404, 'not_found');
    fails(await api.delete(`/applications/application/${app.id}`), 404, 'not_found');
  });
});

describe('the base Application', () => {
  test('cannot be disabled: 409, and it stays ENABLED', async () => {
    const before = await getApplication(api, baseApp);
    fails(await api.put(`/applications/application/${baseApp}`, { status: 'DISABLED' }), 409);
    const after = await getApplication(api, baseApp);
    assert.deepEqual(after, before, 'the refused update changed nothing');
    assert.equal(after.status, 'ENABLED');
  });

  test('cannot be deleted: 409 deleted:false, and it stays', async () => {
    const before = await getApplication(api, baseApp);
    refusedDelete(await api.delete(`/applications/application/${baseApp}`));
    assert.deepEqual(await getApplication(api, baseApp), before);
    // The admin still gets in, so the service is still usable.
    ok(await api.get('/applications'));
  });
});

describe('GET /applications/application/{appid}/users', () => {
  test('lists exactly the associated Users, with applications and groups as id arrays', async () => {
    const app = await createApplication(api);
    const other = await createApplication(api);
    const group = await createGroup(api, app.id);
    const inApp = await createUser(api, [app.id, other.id], { groups: [group.id] });
    const alsoInApp = await createUser(api, [app.id]);
    await createUser(api, [other.id]);

    const users = okKey<UserIdsJson[]>(await api.get(`/applications/application/${app.id}/users`), 'users');
    for (const u of users) assertUserIds(u, server.publicUrl);
    assert.deepEqual(users.map((u) => u.id).sort(), [inApp.id, alsoInApp.id].sort());
    const listed = users.find((u) => u.id === inApp.id)!;
    assert.deepEqual([...listed.applications].sort(), [app.id, other.id].sort());
    assert.deepEqual(listed.groups, [group.id]);
    assert.equal(listed.email, inApp.email);
    assert.equal(listed.status, 'UNVERIFIED');
  });

  test('an Application without Users lists none', async () => {
    const app = await createApplication(api);
    assert.deepEqual(okKey(await api.get(`/applications/application/${app.id}/users`), 'users'), []);
  });
});

describe('GET /applications/application/{appid}/groups', () => {
  test('lists exactly the Application\'s Groups, in full', async () => {
    const app = await createApplication(api);
    const other = await createApplication(api);
    const g1 = await createGroup(api, app.id, { custom_data: { classify_limit: 10 } });
    const g2 = await createGroup(api, app.id);
    await createGroup(api, other.id);
    const groups = okKey<GroupJson[]>(await api.get(`/applications/application/${app.id}/groups`), 'groups');
    for (const g of groups) assertGroup(g, server.publicUrl);
    assert.deepEqual(groups.map((g) => g.id).sort(), [g1.id, g2.id].sort());
    assert.deepEqual(groups.find((g) => g.id === g1.id), g1);
  });

  test('an Application without Groups lists none', async () => {
    const app = await createApplication(api, { name: unique('lonely') });
    assert.deepEqual(okKey(await api.get(`/applications/application/${app.id}/groups`), 'groups'), []);
  });
});
