// HTTP: /users — create (Organization, validation, import of hashes), read, list, update, delete rule, membership removal, search.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { argon2id, bcrypt } from 'hash-wasm';
import {
  authenticate, createApikey, createApplication, createGroup, createUser, defaultUserPassword, getUser, unique, unknownId,
} from './helpers/http-fixtures.js';
import {
  assertLater, assertUserFull, fails, failsOnField, ok, okKey, refusedDelete,
  type ApplicationJson, type GroupJson, type UserFullJson, type UserIdsJson,
  authenticatedView,
} from './helpers/http-shapes.js';
import { adminPassword, startServer, type Api, type ServerProcess } from './helpers/server.js';

let server: ServerProcess;
let api: Api;
let app: ApplicationJson;
/** Every plaintext password this file sends; none may come back in a response or show in the server's output. */
const passwordsUsed = new Set<string>([adminPassword, defaultUserPassword]);

before(async () => {
  server = await startServer();
  api = server.api();
  app = await createApplication(api);
});

after(async () => {
  await server?.dispose();
});

async function searchUsers(term: string): Promise<UserFullJson[]> {
  return okKey<UserFullJson[]>(await api.get(`/users/search/${encodeURIComponent(term)}`), 'users');
}

async function usersNamed(email: string): Promise<UserFullJson[]> {
  return (await searchUsers(email)).filter((u) => u.email.toLowerCase() === email.toLowerCase());
}

describe('POST /users/user', () => {
  test('creates an UNVERIFIED User in full representation: memberships as objects, no API Keys, no password', async () => {
    const group = await createGroup(api, app.id, { custom_data: { monthly_limit: 10 } });
    const email = `Jane.Doe.${unique('x')}@Example.com`;
    const user = okKey<UserFullJson>(await api.post('/users/user', {
      email, password: 'correct horse', name: 'Jane Doe', custom_data: { plan: 'pro', nested: { a: [1, 2] } },
      applications: [app.id], groups: [group.id],
    }), 'user');
    passwordsUsed.add('correct horse');
    assertUserFull(user, server.publicUrl);
    assert.equal(user.email, email);
    assert.equal(user.username, email);
    assert.equal(user.name, 'Jane Doe');
    assert.equal(user.status, 'UNVERIFIED');
    assert.deepEqual(user.custom_data, { plan: 'pro', nested: { a: [1, 2] } });
    assert.deepEqual(user.applications, [app], 'applications as full Application objects');
    assert.deepEqual(user.groups, [group], 'groups as full Group objects');
    assert.deepEqual(user.apikeys, []);
    assert.equal(user.created_at, user.modified_at);
    assert.deepEqual(await getUser(api, user.id), user, 'GET returns what POST returned');
  });

  test('custom_data is null when none is given', async () => {
    const user = await createUser(api, [app.id]);
    assert.equal(user.custom_data, null);
  });

  test('puts a User in the default Organization, the one named by custom_data.company_name (made once), or the one named by id', async () => {
    const plain1 = await createUser(api, [app.id]);
    const plain2 = await createUser(api, [app.id]);
    assert.equal(plain1.organization.id, plain2.organization.id, 'Users without hints share the default Organization');

    const company = unique('Acme Rockets');
    const acme1 = await createUser(api, [app.id], { custom_data: { company_name: company } });
    assert.equal(acme1.organization.name, company, 'the company name names a new Organization');
    assert.notEqual(acme1.organization.id, plain1.organization.id);
    const acme2 = await createUser(api, [app.id], { custom_data: { company_name: company, seat: 2 } });
    assert.equal(acme2.organization.id, acme1.organization.id, 'the same company name finds the same Organization');

    const byId = await createUser(api, [app.id], { organization: acme1.organization.id, custom_data: { company_name: 'Other Co' } });
    assert.equal(byId.organization.id, acme1.organization.id, 'an explicit organization id wins over company_name');
    assert.deepEqual(byId.organization, acme1.organization);
  });

  test('an unknown organization id is a 400 naming organization, and creates nothing', async () => {
    const email = `${unique('org')}@example.com`;
    failsOnField(await api.post('/users/user', { email, password: defaultUserPassword, applications: [app.id], organization: unknownId }), 'organization', 'unknown_reference');
    assert.deepEqual(await usersNamed(email), []);
  });

  test('needs at least one existing Application: 400 naming applications, and creates nothing', async () => {
    const email = `${unique('noapp')}@example.com`;
    const base = { email, password: defaultUserPassword };
    failsOnField(await api.post('/users/user', base), 'applications');
    failsOnField(await api.post('/users/user', { ...base, applications: [] }), 'applications');
    failsOnField(await api.post('/users/user', { ...base, applications: [unknownId] }), 'applications', 'unknown_reference');
    failsOnField(await api.post('/users/user', { ...base, applications: ['not an id'] }), 'applications');
    failsOnField(await api.post('/users/user', { ...base, applications: app.id }), 'applications');
    assert.deepEqual(await usersNamed(email), []);
  });

  test('an unknown Group is a 400 naming groups, and creates nothing', async () => {
    const email = `${unique('nogroup')}@example.com`;
    failsOnField(await api.post('/users/user', { email, password: defaultUserPassword, applications: [app.id], groups: [unknownId] }), 'groups', 'unknown_reference');
    assert.deepEqual(await usersNamed(email), []);
  });

  test('a password has at least 7 characters and at most 1024 bytes; the refusal never echoes it', async () => {
    const tries: [string, boolean][] = [
      ['Six6ix', false],
      ['Seven77', true],
      ['a'.repeat(1024), true],
      ['b'.repeat(1025), false],
      ['é'.repeat(600), false], // 600 characters but 1200 bytes
    ];
    for (const [password, accepted] of tries) {
      passwordsUsed.add(password);
      const email = `${unique('pw')}@example.com`;
      const res = await api.post('/users/user', { email, password, applications: [app.id] });
      if (accepted) {
        assertUserFull(okKey(res, 'user'), server.publicUrl);
      } else {
        const error = failsOnField(res, 'password');
        assert.ok(!error.message.includes(password), 'the message does not echo the password');
        assert.deepEqual(await usersNamed(email), []);
      }
    }
  });

  test('without password (or password_hash) is a 400 naming password', async () => {
    const email = `${unique('nopw')}@example.com`;
    failsOnField(await api.post('/users/user', { email, applications: [app.id] }), 'password');
    failsOnField(await api.post('/users/user', { email, password: 1234567, applications: [app.id] }), 'password');
    assert.deepEqual(await usersNamed(email), []);
  });

  test('email must be an email address: 400 naming email', async () => {
    const invalid = [undefined, '', 'not-an-email', 'spaces in@example.com', 'a@example', 'a..b@example.com', '@example.com', 42];
    for (const email of invalid) {
      failsOnField(await api.post('/users/user', { email, password: defaultUserPassword, applications: [app.id] }), 'email');
    }
  });

  test('an email with more than one @ is not an email address: 400 naming email, and creates nothing', async () => {
    for (const email of ['two@@example.com', 'x@y@example.com']) {
      failsOnField(await api.post('/users/user', { email, password: defaultUserPassword, applications: [app.id] }), 'email');
      assert.deepEqual(await usersNamed(email), [], `no User ${email}`);
    }
  });

  test('emails are unique case-insensitively: 409 duplicate_email, and no second User', async () => {
    const email = `${unique('Dup')}@Example.com`;
    const first = await createUser(api, [app.id], { email });
    fails(await api.post('/users/user', { email: email.toLowerCase(), password: defaultUserPassword, applications: [app.id] }), 409, 'duplicate_email');
    fails(await api.post('/users/user', { email: email.toUpperCase(), password: defaultUserPassword, applications: [app.id] }), 409, 'duplicate_email');
    const found = await usersNamed(email);
    assert.deepEqual(found.map((u) => u.id), [first.id]);
  });

  test('concurrent creates with one email in different cases make exactly one User', async () => {
    const email = `${unique('Race')}@Example.com`;
    const variants = [email, email.toLowerCase(), email.toUpperCase(), email, email.toLowerCase(), email.toUpperCase()];
    const results = await Promise.all(variants.map((e) => api.post('/users/user', { email: e, password: defaultUserPassword, applications: [app.id] })));
    const created = results.filter((r) => r.status === 200);
    assert.equal(created.length, 1, `exactly one create succeeds (statuses ${results.map((r) => r.status).join(',')})`);
    for (const r of results.filter((x) => x.status !== 200)) fails(r, 409, 'duplicate_email');
    assert.equal((await usersNamed(email)).length, 1);
  });

  test('imports an argon2id or bcrypt password_hash; the User then authenticates with the password, again and again', async () => {
    const salt = new Uint8Array(16).map((_, i) => (i * 29 + 7) & 0xff);
    const argonPassword = 'imported-argon2-pw';
    const bcryptPassword = 'imported-bcrypt-pw';
    passwordsUsed.add(argonPassword).add(bcryptPassword);
    const argonHash = await argon2id({ password: argonPassword, salt, iterations: 2, parallelism: 1, memorySize: 2048, hashLength: 32, outputType: 'encoded' });
    const bcryptHash = await bcrypt({ password: bcryptPassword, salt, costFactor: 4, outputType: 'encoded' });
    for (const [hash, password] of [[argonHash, argonPassword], [bcryptHash, bcryptPassword]] as const) {
      const user = okKey<UserFullJson>(await api.post('/users/user', {
        email: `${unique('import')}@example.com`, password_hash: hash, applications: [app.id],
      }), 'user');
      assertUserFull(user, server.publicUrl);
      assert.equal(user.status, 'UNVERIFIED');
      assert.equal((await authenticate(api, app.id, 'username', user.email, password)).authenticated, true, `${hash.slice(0, 4)} first login`);
      // The second login may run against the re-hashed (argon2id with the server's parameters) password.
      assert.equal((await authenticate(api, app.id, 'username', user.email, password)).authenticated, true, `${hash.slice(0, 4)} second login`);
      assert.equal((await authenticate(api, app.id, 'username', user.email, `${password}x`)).authenticated, false);
      assert.equal((await authenticate(api, app.id, 'username', user.email, password)).authenticated, true, `${hash.slice(0, 4)} third login`);
    }
  });

  test('password together with password_hash, or a password_hash that is no known hash, is a 400', async () => {
    const email = `${unique('badhash')}@example.com`;
    const salt = new Uint8Array(16).fill(3);
    const hash = await bcrypt({ password: 'whatever-pw', salt, costFactor: 4, outputType: 'encoded' });
    fails(await api.post('/users/user', { email, password: defaultUserPassword, password_hash: hash, applications: [app.id] }), 400);
    failsOnField(await api.post('/users/user', { email, password_hash: 'plaintext-not-a-hash', applications: [app.id] }), 'password_hash');
    failsOnField(await api.post('/users/user', { email, password_hash: '$argon2i$v=19$m=1024,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA', applications: [app.id] }), 'password_hash');
    assert.deepEqual(await usersNamed(email), []);
  });
});

describe('GET /users/user/{userid} and GET /users', () => {
  test('an unknown id is a 404 not_found', async () => {
    fails(await api.get(`/users/user/${unknownId}`), 404, 'not_found');
    fails(await api.put(`/users/user/${unknownId}`, { name: 'x' }), 404, 'not_found');
    fails(await api.delete(`/users/user/${unknownId}`), 404, 'not_found');
  });

  test('GET /users lists every User in full representation', async () => {
    const user = await createUser(api, [app.id]);
    const users = okKey<UserFullJson[]>(await api.get('/users'), 'users');
    for (const u of users) assertUserFull(u, server.publicUrl);
    assert.deepEqual(users.find((u) => u.id === user.id), user);
    assert.ok(users.some((u) => u.email === 'admin@example.com'), 'the first admin is listed');
  });
});

describe('a User\'s full representation follows its Applications, Groups and Organization', () => {
  test('renaming them, changing their custom_data or deleting a Group shows in the next GET, in POST /authenticate and in search', async () => {
    const own = await createApplication(api);
    const group = okKey<{ id: string }>(await api.post('/groups/group', { name: unique('g'), application: own.id }), 'group');
    const org = okKey<{ id: string }>(await api.post('/organizations/organization', { name: unique('Org') }), 'organization');
    const user = await createUser(api, [own.id], { groups: [group.id], organization: org.id });
    await getUser(api, user.id); // rendered and cached
    ok(await api.put(`/applications/application/${own.id}`, { name: 'Renamed App' }));
    ok(await api.put(`/groups/group/${group.id}`, { custom_data: { tier_depth: 3 } }));
    ok(await api.put(`/organizations/organization/${org.id}`, { name: unique('Renamed Org') }));
    const after = await getUser(api, user.id);
    assert.equal(after.applications.find((a) => a.id === own.id)?.name, 'Renamed App');
    assert.deepEqual(after.groups.find((g) => g.id === group.id)?.custom_data, { tier_depth: 3 });
    const orgName = okKey<{ name: string }>(await api.get(`/organizations/organization/${org.id}`), 'organization').name;
    assert.equal((after as unknown as { organization: { name: string } }).organization.name, orgName);
    assert.deepEqual((await authenticate(api, own.id, 'username', user.email, defaultUserPassword)).user, authenticatedView(after));
    ok(await api.put(`/groups/group/${group.id}`, { status: 'DISABLED' }));
    ok(await api.delete(`/groups/group/${group.id}`));
    assert.deepEqual((await getUser(api, user.id)).groups, []);
    assert.deepEqual((await usersNamed(user.email))[0]?.groups, []);
  });
});

describe('PUT /users/user/{userid}', () => {
  test('changes name, email, status and custom_data; omitted fields keep their value; modified_at moves', async () => {
    const user = await createUser(api, [app.id], { custom_data: { a: 1 } });
    const renamed = okKey<UserFullJson>(await api.put(`/users/user/${user.id}`, { name: 'New Name' }), 'user');
    assertUserFull(renamed, server.publicUrl);
    assert.equal(renamed.name, 'New Name');
    assert.equal(renamed.email, user.email);
    assert.equal(renamed.status, 'UNVERIFIED');
    assert.deepEqual(renamed.custom_data, { a: 1 });
    assert.deepEqual(renamed.applications, user.applications);
    assert.equal(renamed.created_at, user.created_at);
    assertLater(renamed.modified_at, user.modified_at, 'modified_at after a rename');

    const email = `${unique('moved')}@example.com`;
    const changed = okKey<UserFullJson>(await api.put(`/users/user/${user.id}`, { email, status: 'ENABLED', custom_data: { b: 2 } }), 'user');
    assert.equal(changed.email, email);
    assert.equal(changed.username, email);
    assert.equal(changed.status, 'ENABLED');
    assert.deepEqual(changed.custom_data, { b: 2 });
    assertLater(changed.modified_at, renamed.modified_at, 'modified_at after a second update');
    assert.deepEqual(await getUser(api, user.id), changed);
    assert.deepEqual((await usersNamed(user.email)).map((u) => u.id), [], 'the old email no longer finds the User');
    assert.deepEqual((await usersNamed(email)).map((u) => u.id), [user.id]);
  });

  test('status takes UNVERIFIED, ENABLED and DISABLED, and nothing else', async () => {
    const user = await createUser(api, [app.id]);
    for (const status of ['ENABLED', 'DISABLED', 'UNVERIFIED']) {
      assert.equal(okKey<UserFullJson>(await api.put(`/users/user/${user.id}`, { status }), 'user').status, status);
    }
    const before = await getUser(api, user.id);
    failsOnField(await api.put(`/users/user/${user.id}`, { status: 'ACTIVE' }), 'status');
    assert.deepEqual(await getUser(api, user.id), before);
  });

  test('applications and groups add memberships and keep the old ones', async () => {
    const other = await createApplication(api);
    const g1 = await createGroup(api, app.id);
    const g2 = await createGroup(api, other.id);
    const user = await createUser(api, [app.id], { groups: [g1.id] });
    const updated = okKey<UserFullJson>(await api.put(`/users/user/${user.id}`, { applications: [other.id], groups: [g2.id] }), 'user');
    assert.deepEqual(updated.applications.map((a) => a.id).sort(), [app.id, other.id].sort());
    assert.deepEqual(updated.groups.map((g) => g.id).sort(), [g1.id, g2.id].sort());
    const listed = okKey<UserIdsJson[]>(await api.get(`/applications/application/${other.id}/users`), 'users');
    assert.deepEqual(listed.map((u) => u.id), [user.id]);
    const members = okKey<UserIdsJson[]>(await api.get(`/groups/group/${g2.id}/users`), 'users');
    assert.deepEqual(members.map((u) => u.id), [user.id]);
  });

  test('organization moves the User to another Organization; an unknown one is a 400 and changes nothing', async () => {
    const company = unique('Moving Co');
    const anchor = await createUser(api, [app.id], { custom_data: { company_name: company } });
    const user = await createUser(api, [app.id]);
    const moved = okKey<UserFullJson>(await api.put(`/users/user/${user.id}`, { organization: anchor.organization.id }), 'user');
    assert.deepEqual(moved.organization, anchor.organization);
    failsOnField(await api.put(`/users/user/${user.id}`, { organization: unknownId }), 'organization', 'unknown_reference');
    assert.deepEqual(await getUser(api, user.id), moved);
  });

  test('an unknown Application or Group is a 400 and changes nothing', async () => {
    const user = await createUser(api, [app.id]);
    failsOnField(await api.put(`/users/user/${user.id}`, { applications: [unknownId] }), 'applications', 'unknown_reference');
    failsOnField(await api.put(`/users/user/${user.id}`, { groups: [unknownId] }), 'groups', 'unknown_reference');
    assert.deepEqual(await getUser(api, user.id), user);
  });

  test('an email taken by another User, in any case, is a 409 and changes nothing', async () => {
    const a = await createUser(api, [app.id]);
    const b = await createUser(api, [app.id]);
    fails(await api.put(`/users/user/${b.id}`, { email: a.email.toUpperCase() }), 409, 'duplicate_email');
    assert.deepEqual(await getUser(api, b.id), b);
  });

  test('a User may change its own email\'s case', async () => {
    const user = await createUser(api, [app.id]);
    const upper = user.email.toUpperCase();
    assert.equal(okKey<UserFullJson>(await api.put(`/users/user/${user.id}`, { email: upper }), 'user').email, upper);
  });

  test('a too short password is a 400 naming password and changes nothing', async () => {
    const user = await createUser(api, [app.id]);
    failsOnField(await api.put(`/users/user/${user.id}`, { password: 'short' }), 'password');
    assert.deepEqual(await getUser(api, user.id), user);
  });
});

describe('DELETE /users/user/{userid}', () => {
  test('a User that is not DISABLED is refused with 409 deleted:false and stays', async () => {
    const user = await createUser(api, [app.id]);
    refusedDelete(await api.delete(`/users/user/${user.id}`));
    assert.deepEqual(await getUser(api, user.id), user);
    ok(await api.put(`/users/user/${user.id}`, { status: 'ENABLED' }));
    refusedDelete(await api.delete(`/users/user/${user.id}`));
    ok(await api.get(`/users/user/${user.id}`));
  });

  test('a DISABLED User is deleted, gone from every listing, and its email is free again', async () => {
    const group = await createGroup(api, app.id);
    const user = await createUser(api, [app.id], { groups: [group.id] });
    ok(await api.put(`/users/user/${user.id}`, { status: 'DISABLED' }));
    assert.deepEqual(ok(await api.delete(`/users/user/${user.id}`)), { deleted: true });
    fails(await api.get(`/users/user/${user.id}`), 404, 'not_found');
    fails(await api.delete(`/users/user/${user.id}`), 404, 'not_found');
    assert.ok(!okKey<UserIdsJson[]>(await api.get(`/applications/application/${app.id}/users`), 'users').some((u) => u.id === user.id));
    assert.deepEqual(okKey(await api.get(`/groups/group/${group.id}/users`), 'users'), []);
    assert.ok(!okKey<UserFullJson[]>(await api.get('/users'), 'users').some((u) => u.id === user.id));
    assert.deepEqual(await usersNamed(user.email), []);
    const again = await createUser(api, [app.id], { email: user.email });
    assert.notEqual(again.id, user.id);
  });

  test('a deleted User\'s password and API Key authenticate nothing any more', async () => {
    const user = await createUser(api, [app.id]);
    const key = await createApikey(api, user.id);
    assert.equal((await authenticate(api, app.id, 'username', user.email, defaultUserPassword)).authenticated, true);
    assert.equal((await authenticate(api, app.id, 'apikey', key.id, key.secret)).authenticated, true);
    ok(await api.put(`/users/user/${user.id}`, { status: 'DISABLED' }));
    ok(await api.delete(`/users/user/${user.id}`));
    assert.equal((await authenticate(api, app.id, 'username', user.email, defaultUserPassword)).authenticated, false);
    assert.equal((await authenticate(api, app.id, 'apikey', key.id, key.secret)).authenticated, false);
    assert.deepEqual(await searchUsers(key.id), [], 'the deleted User\'s key id finds nothing');
  });
});

describe('membership removal', () => {
  test('DELETE /users/user/{userid}/application/{appid} removes one Application and nothing else', async () => {
    const other = await createApplication(api);
    const group = await createGroup(api, app.id);
    const user = await createUser(api, [app.id, other.id], { groups: [group.id] });
    assert.deepEqual(ok(await api.delete(`/users/user/${user.id}/application/${other.id}`)), { deleted: true });
    const after = await getUser(api, user.id);
    assert.deepEqual(after.applications.map((a) => a.id), [app.id]);
    assert.deepEqual(after.groups.map((g) => g.id), [group.id]);
    assertLater(after.modified_at, user.modified_at, 'modified_at after removing a membership');
    assert.deepEqual(okKey(await api.get(`/applications/application/${other.id}/users`), 'users'), []);
    fails(await api.delete(`/users/user/${user.id}/application/${other.id}`), 404, 'not_found');
    fails(await api.delete(`/users/user/${unknownId}/application/${app.id}`), 404, 'not_found');
  });

  test('leaving an Application leaves its Groups and keeps the others (issue 23)', async () => {
    const other = await createApplication(api);
    const left1 = await createGroup(api, other.id);
    const left2 = await createGroup(api, other.id);
    const own = await createGroup(api, app.id);
    const user = await createUser(api, [app.id, other.id], { groups: [left1.id, own.id, left2.id] });
    assert.deepEqual(ok(await api.delete(`/users/user/${user.id}/application/${other.id}`)), { deleted: true });
    const after = await getUser(api, user.id);
    assertUserFull(after, server.publicUrl);
    assert.deepEqual(after.applications.map((a) => a.id), [app.id]);
    assert.deepEqual(after.groups.map((g) => g.id), [own.id]);
    for (const g of [left1, left2]) assert.deepEqual(okKey(await api.get(`/groups/group/${g.id}/users`), 'users'), [], 'the Group no longer lists the User');
    assert.deepEqual(okKey<UserIdsJson[]>(await api.get(`/groups/group/${own.id}/users`), 'users').map((u) => u.id), [user.id]);
    const listed = okKey<UserIdsJson[]>(await api.get(`/applications/application/${app.id}/users`), 'users').find((u) => u.id === user.id);
    assert.deepEqual(listed?.groups, [own.id], 'the id listing shows the same');
    assert.deepEqual(okKey<GroupJson[]>(await api.get(`/applications/application/${other.id}/groups`), 'groups').map((g) => g.id).sort(),
      [left1.id, left2.id].sort(), 'the Groups themselves stay');
  });

  test('joining a Group of an Application the User is not in is a 400 naming groups and changes nothing (issue 23)', async () => {
    const other = await createApplication(api);
    const foreign = await createGroup(api, other.id);
    const email = `${unique('foreign')}@example.com`;
    failsOnField(await api.post('/users/user', { email, password: defaultUserPassword, applications: [app.id], groups: [foreign.id] }), 'groups');
    assert.deepEqual(await usersNamed(email), [], 'nobody was created');
    const user = await createUser(api, [app.id]);
    failsOnField(await api.put(`/users/user/${user.id}`, { groups: [foreign.id] }), 'groups');
    assert.deepEqual(await getUser(api, user.id), user);
    assert.deepEqual(okKey(await api.get(`/groups/group/${foreign.id}/users`), 'users'), []);
  });

  test('DELETE /users/user/{userid}/group/{groupid} removes one Group and nothing else', async () => {
    const g1 = await createGroup(api, app.id);
    const g2 = await createGroup(api, app.id);
    const user = await createUser(api, [app.id], { groups: [g1.id, g2.id] });
    assert.deepEqual(ok(await api.delete(`/users/user/${user.id}/group/${g1.id}`)), { deleted: true });
    const after = await getUser(api, user.id);
    assert.deepEqual(after.groups.map((g) => g.id), [g2.id]);
    assert.deepEqual(after.applications.map((a) => a.id), [app.id]);
    assert.deepEqual(okKey(await api.get(`/groups/group/${g1.id}/users`), 'users'), []);
    assert.deepEqual(okKey<UserIdsJson[]>(await api.get(`/groups/group/${g2.id}/users`), 'users').map((u) => u.id), [user.id]);
    fails(await api.delete(`/users/user/${user.id}/group/${g1.id}`), 404, 'not_found');
    fails(await api.delete(`/users/user/${unknownId}/group/${g2.id}`), 404, 'not_found');
  });
});

describe('GET /users/search/{search}', () => {
  test('matches case-insensitively within email, name, id, API Key ids and custom_data.company_name', async () => {
    const tag = unique('srch').replace('-', '');
    const company = `Zebra Logistics ${tag}`;
    const target = await createUser(api, [app.id], {
      email: `Quartz.${tag}@Example.org`, name: `Marguerite ${tag} Yourcenar`, custom_data: { company_name: company },
    });
    const decoy = await createUser(api, [app.id], { email: `decoy.${tag}@example.net`, name: 'Someone Else' });
    const key = await createApikey(api, target.id);

    const findsOnlyTarget = async (term: string, why: string): Promise<void> => {
      const found = await searchUsers(term);
      for (const u of found) assertUserFull(u, server.publicUrl);
      assert.deepEqual(found.map((u) => u.id), [target.id], `${why} (term ${JSON.stringify(term)})`);
    };
    await findsOnlyTarget(`QUARTZ.${tag}`, 'email, other case');
    await findsOnlyTarget(`quartz.${tag}@example.org`, 'whole email, lower case');
    await findsOnlyTarget(`marguerite ${tag}`, 'name, with a space');
    await findsOnlyTarget(target.id.slice(3, 17).toLowerCase(), 'part of the id, other case');
    await findsOnlyTarget(target.id, 'the whole id');
    await findsOnlyTarget(key.id.slice(2, 20).toLowerCase(), 'part of an API Key id');
    await findsOnlyTarget(`zebra logistics ${tag}`.toUpperCase(), 'custom_data.company_name');

    const both = await searchUsers(tag.toUpperCase());
    assert.deepEqual(both.map((u) => u.id).sort(), [target.id, decoy.id].sort(), 'a term in both emails finds both');
    assert.deepEqual(await searchUsers(`nothing-matches-${tag}`), []);
    const full = (await searchUsers(target.id))[0]!;
    assert.deepEqual(full, await getUser(api, target.id), 'search answers the full representation');
  });

  test('does not match other custom_data values', async () => {
    const tag = unique('hidden').replace('-', '');
    await createUser(api, [app.id], { custom_data: { note: `secretnote${tag}` } });
    assert.deepEqual(await searchUsers(`secretnote${tag}`), []);
  });

  test('follows updates: a changed name is found, the old one no longer', async () => {
    const tag = unique('upd').replace('-', '');
    const user = await createUser(api, [app.id], { name: `Before${tag}` });
    ok(await api.put(`/users/user/${user.id}`, { name: `After${tag}` }));
    assert.deepEqual(await searchUsers(`before${tag}`), []);
    assert.deepEqual((await searchUsers(`after${tag}`)).map((u) => u.id), [user.id]);
  });
});

describe('secrets', () => {
  test('no response and no line of the server\'s output carries a plaintext password or a stored hash', () => {
    const transcript = api.transcript.join('\n');
    const output = server.output();
    for (const password of passwordsUsed) {
      assert.ok(!transcript.includes(password), `a response carried the password ${JSON.stringify(password.slice(0, 12))}`);
      assert.ok(!output.includes(password), `the server's output carried the password ${JSON.stringify(password.slice(0, 12))}`);
    }
    // Whole hashes, not the format names an error message may mention.
    for (const hash of [/\$argon2id\$v=\d+\$m=\d+/, /\$2[aby]\$\d\d\$[./A-Za-z0-9]{10}/]) {
      const leaking = api.transcript.find((text) => hash.test(text));
      assert.equal(leaking, undefined, `a response carried a password hash (${hash})`);
      const found = hash.exec(output);
      assert.equal(found, null, `the server's output carried a password hash: ${output.slice(Math.max(0, (found?.index ?? 0) - 200), (found?.index ?? 0) + 100)}`);
    }
  });
});
