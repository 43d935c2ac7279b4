// HTTP: what clients and monitors written against the upstream API (econtext-auth) call (issue 26): membership POSTs, GET /status, unique Application names.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  baseApplicationId, createApplication, createGroup, createUser, defaultUserPassword, getAdmin, getUser, unique, unknownId,
} from './helpers/http-fixtures.js';
import { fails, failsOnField, ok, okKey, type ApplicationJson } from './helpers/http-shapes.js';
import { RecordingLogger } from './helpers/persist-fixtures.js';
import { startServer, type Api, type ServerProcess } from './helpers/server.js';
import { openPersistence } from '../src/persist/persistence.js';
import { State } from '../src/store/state.js';

let server: ServerProcess;
let api: Api;
let base: string;

before(async () => {
  server = await startServer();
  api = server.api();
  base = await baseApplicationId(api);
});

after(async () => {
  await server?.dispose();
});

/** A base-Application User with these roles, and an Api that calls as it. */
async function callerWith(roles: string[]): Promise<Api> {
  const user = await createUser(api, [base], { roles });
  return api.as({ username: user.email, password: defaultUserPassword });
}

describe('GET /status', () => {
  test('answers without credentials what GET /health answers, in the envelope', async () => {
    const status = await api.get('/status', { credentials: null });
    assert.equal(status.status, 200);
    assert.deepEqual(ok(status), { status: 'ok' });
    assert.deepEqual(ok(await api.get('/health', { credentials: null })), { status: 'ok' }, '/health stays');
    assert.equal(status.headers.get('cache-control'), 'no-store');
    assert.deepEqual(ok(await api.get('/status')), { status: 'ok' }, 'credentials are not needed, nor refused');
    fails(await api.post('/status', {}), 405, 'method_not_allowed');
  });
});

describe('POST /users/user/{userid}/application/{appid}', () => {
  test('adds the membership and answers {"application": true}; one the User has already changes nothing', async () => {
    const a = await createApplication(api);
    const b = await createApplication(api);
    const user = await createUser(api, [a.id]);
    const res = await api.post(`/users/user/${user.id}/application/${b.id}`);
    assert.equal(res.status, 200);
    assert.deepEqual(ok(res), { application: true });
    assert.match(res.text, /^\{"service":\{"result":\{"application":true\},"elapsed":/);
    const joined = await getUser(api, user.id);
    assert.deepEqual(joined.applications.map((x) => x.id), [a.id, b.id]);
    assert.deepEqual(ok(await api.post(`/users/user/${user.id}/application/${b.id}`)), { application: true }, 'idempotent');
    assert.deepEqual(await getUser(api, user.id), joined, 'nothing changed, modified_at included');
    // The User can now authenticate to the Application it joined.
    const auth = await api.post('/authenticate', { type: 'username', application: b.id, credential: { username: user.email, password: defaultUserPassword } });
    assert.equal(ok(auth)['authenticated'], true);
  });

  test('unknown ids are 404, malformed ones 400, and nothing changes', async () => {
    const a = await createApplication(api);
    const user = await createUser(api, [a.id]);
    fails(await api.post(`/users/user/${unknownId}/application/${a.id}`), 404, 'not_found');
    fails(await api.post(`/users/user/${user.id}/application/${unknownId}`), 404, 'not_found');
    fails(await api.post(`/users/user/${user.id}/application/not!an!id`), 400, 'invalid_id');
    fails(await api.post(`/users/user/bad~id/application/${a.id}`), 400, 'invalid_id');
    assert.deepEqual((await getUser(api, user.id)).applications.map((x) => x.id), [a.id]);
  });

  test('the base Application and its Users are an admin\'s; an auditor changes nothing; a manager changes end users', async () => {
    const a = await createApplication(api);
    const user = await createUser(api, [a.id]);
    const manager = await callerWith(['manager']);
    const auditor = await callerWith(['auditor']);
    fails(await manager.post(`/users/user/${user.id}/application/${base}`), 403, 'forbidden');
    fails(await auditor.post(`/users/user/${user.id}/application/${a.id}`), 403, 'forbidden');
    const admin = await getAdmin(api);
    fails(await manager.post(`/users/user/${admin.id}/application/${a.id}`), 403, 'forbidden');
    assert.deepEqual((await getUser(api, user.id)).applications.map((x) => x.id), [a.id], 'refused calls changed nothing');
    const b = await createApplication(api);
    assert.deepEqual(ok(await manager.post(`/users/user/${user.id}/application/${b.id}`)), { application: true });
  });

  test('is audited like the DELETE that undoes it', async () => {
    const a = await createApplication(api);
    const b = await createApplication(api);
    const user = await createUser(api, [a.id]);
    const before = (await server.auditLines()).length;
    ok(await api.post(`/users/user/${user.id}/application/${b.id}`));
    fails(await api.post(`/users/user/${user.id}/application/${unknownId}`), 404, 'not_found');
    ok(await api.delete(`/users/user/${user.id}/application/${b.id}`));
    const lines = (await server.auditLines()).slice(before).filter((l) => l['audit'] !== 'caller.authenticate');
    assert.deepEqual(lines.map((l) => [l['audit'], l['outcome'], l['targets']]), [
      ['user.join_application', 'success', { user: user.id, application: b.id }],
      ['user.join_application', 'not_found', { user: user.id, application: unknownId }],
      ['user.leave_application', 'success', { user: user.id, application: b.id }],
    ]);
  });
});

describe('POST /users/user/{userid}/group/{groupid}', () => {
  test('adds the membership and answers {"group": true}; one the User has already changes nothing', async () => {
    const a = await createApplication(api);
    const group = await createGroup(api, a.id);
    const user = await createUser(api, [a.id]);
    const res = await api.post(`/users/user/${user.id}/group/${group.id}`);
    assert.equal(res.status, 200);
    assert.deepEqual(ok(res), { group: true });
    const joined = await getUser(api, user.id);
    assert.deepEqual(joined.groups.map((g) => g.id), [group.id]);
    assert.deepEqual(ok(await api.post(`/users/user/${user.id}/group/${group.id}`)), { group: true }, 'idempotent');
    assert.deepEqual(await getUser(api, user.id), joined, 'nothing changed, modified_at included');
  });

  test('a Group of an Application the User is not in is refused (400 on groups); joining the Application first lets it in', async () => {
    const a = await createApplication(api);
    const b = await createApplication(api);
    const groupOfB = await createGroup(api, b.id);
    const user = await createUser(api, [a.id]);
    failsOnField(await api.post(`/users/user/${user.id}/group/${groupOfB.id}`), 'groups');
    assert.deepEqual((await getUser(api, user.id)).groups, []);
    ok(await api.post(`/users/user/${user.id}/application/${b.id}`));
    assert.deepEqual(ok(await api.post(`/users/user/${user.id}/group/${groupOfB.id}`)), { group: true });
    assert.deepEqual((await getUser(api, user.id)).groups.map((g) => g.id), [groupOfB.id]);
  });

  test('unknown ids are 404, malformed ones 400; roles as for other membership changes; audited', async () => {
    const a = await createApplication(api);
    const group = await createGroup(api, a.id);
    const user = await createUser(api, [a.id]);
    fails(await api.post(`/users/user/${unknownId}/group/${group.id}`), 404, 'not_found');
    fails(await api.post(`/users/user/${user.id}/group/${unknownId}`), 404, 'not_found');
    fails(await api.post(`/users/user/${user.id}/group/bad~id`), 400, 'invalid_id');
    const auditor = await callerWith(['auditor']);
    fails(await auditor.post(`/users/user/${user.id}/group/${group.id}`), 403, 'forbidden');
    const before = (await server.auditLines()).length;
    ok(await (await callerWith(['manager'])).post(`/users/user/${user.id}/group/${group.id}`));
    const lines = (await server.auditLines()).slice(before).filter((l) => l['audit'] === 'user.join_group');
    assert.deepEqual(lines.map((l) => [l['outcome'], l['targets']]), [['success', { user: user.id, group: group.id }]]);
  });
});

describe('Application names are unique, case-insensitively', () => {
  test('a create with a taken name in another case or Unicode normal form is 409 duplicate_name', async () => {
    const name = unique('Café Billing');
    const first = await createApplication(api, { name });
    fails(await api.post('/applications/application', { name: name.toUpperCase() }), 409, 'duplicate_name');
    fails(await api.post('/applications/application', { name: name.toLowerCase().normalize('NFD') }), 409, 'duplicate_name');
    assert.equal((await api.client.applications.list()).filter((a) => a.name.toLowerCase() === name.toLowerCase()).length, 1);
    ok(await api.post('/applications/application', { name: `${name} 2` })); // a different name is free
    assert.equal(first.name, name);
  });

  test('the base Application\'s name is taken too', async () => {
    const baseApp = okKey<ApplicationJson>(await api.get(`/applications/application/${base}`), 'application');
    fails(await api.post('/applications/application', { name: baseApp.name.toUpperCase() }), 409, 'duplicate_name');
  });

  test('a rename to another Application\'s name is 409; to its own in another case is allowed; a deleted one frees its name', async () => {
    const taken = await createApplication(api);
    const other = await createApplication(api);
    fails(await api.put(`/applications/application/${other.id}`, { name: taken.name.toUpperCase() }), 409, 'duplicate_name');
    const unchanged = okKey<ApplicationJson>(await api.get(`/applications/application/${other.id}`), 'application');
    assert.equal(unchanged.name, other.name, 'the refused rename changed nothing');
    const recased = okKey<ApplicationJson>(await api.put(`/applications/application/${other.id}`, { name: other.name.toUpperCase() }), 'application');
    assert.equal(recased.name, other.name.toUpperCase());
    ok(await api.put(`/applications/application/${other.id}`, { description: 'an update without a name is not checked' }));
    ok(await api.put(`/applications/application/${taken.id}`, { status: 'DISABLED' }));
    ok(await api.delete(`/applications/application/${taken.id}`));
    ok(await api.put(`/applications/application/${other.id}`, { name: taken.name })); // a deleted Application's name is free
    ok(await api.post('/applications/application', { name: recased.name })); // the name it left is free
  });

  test('duplicates stored before names were unique both load and keep working; a new one is refused; a rename to a free name works', async () => {
    const own = await startServer();
    try {
      const ownApi = own.api();
      const older = await createApplication(ownApi, { name: 'Legacy Twin' });
      assert.equal(await own.stop(), 0);

      // What an earlier version could write: a second Application of the same name in another case.
      const { state, persistence } = await openPersistence({ dir: own.dirs.dataDir, createState: () => new State(), logger: new RecordingLogger() });
      const stored = state.application(older.id)!;
      // Another id: its first character changed (to U when it already was T).
      const twinId = `${older.id.startsWith('T') ? 'U' : 'T'}${older.id.slice(1)}`;
      const twin = { ...stored, id: twinId, name: 'LEGACY TWIN', createdAt: state.lastAt + 1, modifiedAt: state.lastAt + 1 };
      await persistence.append({ seq: state.lastSeq + 1, at: state.lastAt + 1, ops: [{ op: 'put', kind: 'application', value: twin }] });
      await persistence.close();

      const again = await own.restart();
      try {
        const warning = again.logLines().find((l) => l['msg'] === 'Applications sharing one name: rename all but one');
        assert.deepEqual((warning?.['applicationIds'] as string[][] | undefined)?.map((ids) => [...ids].sort()), [[older.id, twinId].sort()], 'a warning at start names both');
        const api2 = again.api();
        assert.equal(okKey<ApplicationJson>(await api2.get(`/applications/application/${older.id}`), 'application').name, 'Legacy Twin');
        assert.equal(okKey<ApplicationJson>(await api2.get(`/applications/application/${twinId}`), 'application').name, 'LEGACY TWIN');
        const user = await createUser(api2, [older.id, twinId]);
        for (const id of [older.id, twinId]) {
          const auth = await api2.post('/authenticate', { type: 'username', application: id, credential: { username: user.email, password: defaultUserPassword } });
          assert.equal(ok(auth)['authenticated'], true, `authenticates to ${id}`);
        }
        ok(await api2.put(`/applications/application/${twinId}`, { description: 'still updatable' }));
        ok(await api2.put(`/applications/application/${twinId}`, { name: 'legacy twin' })); // keeps its own name in another case
        fails(await api2.post('/applications/application', { name: 'Legacy twin' }), 409, 'duplicate_name');
        ok(await api2.put(`/applications/application/${twinId}`, { name: 'Legacy Twin (old)' })); // a rename to a free name
        fails(await api2.put(`/applications/application/${twinId}`, { name: 'legacy TWIN' }), 409, 'duplicate_name');
      } finally {
        await again.dispose();
      }
    } finally {
      await own.dispose();
    }
  });
});
