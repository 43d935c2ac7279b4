// HTTP: a User that leaves an Application leaves its Groups, and stays out of them after log replay and after a snapshot load (issue 23).

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createApplication, createGroup, createUser, getUser } from './helpers/http-fixtures.js';
import { ok, okKey, type ApplicationJson, type GroupJson, type UserIdsJson } from './helpers/http-shapes.js';
import { startServer, type Api, type ServerProcess } from './helpers/server.js';

let server: ServerProcess;

before(async () => {
  server = await startServer();
});

after(async () => {
  await server?.dispose();
});

interface Joined { user: string; kept: ApplicationJson; left: ApplicationJson; keptGroup: GroupJson; leftGroups: GroupJson[] }

/** A User in two Applications and in Groups of both, which then leaves one of them. */
async function joinThenLeave(api: Api): Promise<Joined> {
  const kept = await createApplication(api);
  const left = await createApplication(api);
  const keptGroup = await createGroup(api, kept.id);
  const leftGroups = [await createGroup(api, left.id), await createGroup(api, left.id)];
  const user = await createUser(api, [kept.id, left.id], { groups: [leftGroups[0]!.id, keptGroup.id, leftGroups[1]!.id] });
  assert.deepEqual(ok(await api.delete(`/users/user/${user.id}/application/${left.id}`)), { deleted: true });
  return { user: user.id, kept, left, keptGroup, leftGroups };
}

/** What every reader shows of one User that left: no Group of the Application it left, anywhere. */
async function assertLeft(api: Api, j: Joined, when: string): Promise<void> {
  const user = await getUser(api, j.user);
  assert.deepEqual(user.applications.map((a) => a.id), [j.kept.id], `${when}: GET user applications`);
  assert.deepEqual(user.groups.map((g) => g.id), [j.keptGroup.id], `${when}: GET user shows no Group of the Application it left`);
  for (const g of j.leftGroups) {
    assert.deepEqual(okKey(await api.get(`/groups/group/${g.id}/users`), 'users'), [], `${when}: Group ${g.id} no longer lists the User`);
  }
  const members = okKey<UserIdsJson[]>(await api.get(`/groups/group/${j.keptGroup.id}/users`), 'users');
  assert.deepEqual(members.map((u) => u.id), [j.user], `${when}: the kept Group still lists the User`);
  const listed = okKey<UserIdsJson[]>(await api.get(`/applications/application/${j.kept.id}/users`), 'users');
  assert.deepEqual(listed.find((u) => u.id === j.user)?.groups, [j.keptGroup.id], `${when}: the id listing agrees`);
}

function recovered(): Record<string, unknown> {
  const line = server.logLines().find((l) => l['msg'] === 'recovered state from disk');
  assert.ok(line !== undefined, 'the server logged how it recovered');
  return line;
}

test('leaving an Application leaves its Groups: live, after log replay, after a snapshot load', async () => {
  let api = server.api();
  const first = await joinThenLeave(api);
  await assertLeft(api, first, 'live');

  // SIGKILL: no snapshot at stop, so the leave comes back by replaying its record.
  await server.kill();
  server = await server.restart();
  api = server.api();
  assert.ok((recovered()['recordsReplayed'] as number) > 0, 'recovery replayed the log');
  await assertLeft(api, first, 'after replay');

  const second = await joinThenLeave(api);
  const snap = okKey<{ taken: boolean }>(await api.post('/admin/snapshot', {}), 'snapshot');
  assert.equal(snap.taken, true);
  await server.kill();
  server = await server.restart();
  api = server.api();
  assert.equal(recovered()['recordsReplayed'], 0, 'everything came from the snapshot');
  assert.notEqual(recovered()['snapshot'], null);
  await assertLeft(api, first, 'after snapshot load (first User)');
  await assertLeft(api, second, 'after snapshot load (second User)');
});
