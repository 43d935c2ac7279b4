// HTTP: a User's API Keys — create (with secret), read (without), update (with the same secret), delete rule, in the User's representation.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  authenticate, createApikey, createApplication, createUser, getUser, unknownId,
} from './helpers/http-fixtures.js';
import {
  assertApikey, assertLater, fails, failsOnField, ok, okKey, refusedDelete,
  type ApikeyJson, type ApplicationJson, type UserFullJson,
} from './helpers/http-shapes.js';
import { startServer, type Api, type ServerProcess } from './helpers/server.js';

let server: ServerProcess;
let api: Api;
let app: ApplicationJson;
let owner: UserFullJson;
const secretsSeen = new Set<string>();

before(async () => {
  server = await startServer();
  api = server.api();
  app = await createApplication(api);
  owner = await createUser(api, [app.id]);
});

after(async () => {
  await server?.dispose();
});

function keyPath(userId: string, keyId: string): string {
  return `/users/user/${userId}/apikey/${keyId}`;
}

describe('POST /users/user/{userid}/apikey', () => {
  test('creates an ENABLED key with a 25-character [0-9A-Z] id, answered with its secret', async () => {
    const key = okKey<ApikeyJson>(await api.post(`/users/user/${owner.id}/apikey`, { name: 'CI', description: 'deploys' }), 'apikey');
    assertApikey(key, server.publicUrl, owner.id, { withSecret: true });
    secretsSeen.add(key.secret!);
    assert.equal(key.name, 'CI');
    assert.equal(key.description, 'deploys');
    assert.equal(key.status, 'ENABLED');
    assert.ok(Buffer.from(key.secret!, 'base64url').length >= 32, 'the secret holds at least 32 bytes');
  });

  test('takes an optional status, and defaults name and description to strings', async () => {
    const disabled = okKey<ApikeyJson>(await api.post(`/users/user/${owner.id}/apikey`, { status: 'DISABLED' }), 'apikey');
    assertApikey(disabled, server.publicUrl, owner.id, { withSecret: true });
    secretsSeen.add(disabled.secret!);
    assert.equal(disabled.status, 'DISABLED');
  });

  test('gives every key its own id and secret', async () => {
    const a = await createApikey(api, owner.id);
    const b = await createApikey(api, owner.id);
    secretsSeen.add(a.secret).add(b.secret);
    assert.notEqual(a.id, b.id);
    assert.notEqual(a.secret, b.secret);
  });

  test('for an unknown User is a 404; an invalid status is a 400 naming status', async () => {
    fails(await api.post(`/users/user/${unknownId}/apikey`, { name: 'x' }), 404, 'not_found');
    const before = (await getUser(api, owner.id)).apikeys.length;
    failsOnField(await api.post(`/users/user/${owner.id}/apikey`, { status: 'ON' }), 'status');
    assert.equal((await getUser(api, owner.id)).apikeys.length, before, 'the refused create made no key');
  });

  test('a key id finds its User by search', async () => {
    const user = await createUser(api, [app.id]);
    const key = await createApikey(api, user.id);
    secretsSeen.add(key.secret);
    const found = okKey<UserFullJson[]>(await api.get(`/users/search/${key.id.toLowerCase()}`), 'users');
    assert.deepEqual(found.map((u) => u.id), [user.id]);
  });

  test('shows up in the User\'s full representation without its secret', async () => {
    const user = await createUser(api, [app.id]);
    const key = await createApikey(api, user.id, { name: 'listed' });
    secretsSeen.add(key.secret);
    const after = await getUser(api, user.id);
    assert.equal(after.apikeys.length, 1);
    assertApikey(after.apikeys[0], server.publicUrl, user.id, { withSecret: false });
    const { secret: _secret, ...withoutSecret } = key;
    assert.deepEqual(after.apikeys[0], withoutSecret);
    assertLater(after.modified_at, user.modified_at, 'the User\'s modified_at after adding a key');
  });
});

describe('GET /users/user/{userid}/apikey/{apikeyid}', () => {
  test('answers the key without its secret', async () => {
    const key = await createApikey(api, owner.id, { name: 'read me' });
    secretsSeen.add(key.secret);
    const read = okKey<ApikeyJson>(await api.get(keyPath(owner.id, key.id)), 'apikey');
    assertApikey(read, server.publicUrl, owner.id, { withSecret: false });
    const { secret: _secret, ...withoutSecret } = key;
    assert.deepEqual(read, withoutSecret);
  });

  test('an unknown key, or a key asked for under another User, is a 404', async () => {
    const other = await createUser(api, [app.id]);
    const key = await createApikey(api, owner.id);
    secretsSeen.add(key.secret);
    fails(await api.get(keyPath(owner.id, 'ZZZZZZZZZZZZZZZZZZZZZZZZZ')), 404, 'not_found');
    fails(await api.get(keyPath(other.id, key.id)), 404, 'not_found');
    fails(await api.put(keyPath(other.id, key.id), { status: 'DISABLED' }), 404, 'not_found');
    fails(await api.delete(keyPath(other.id, key.id)), 404, 'not_found');
    fails(await api.get(keyPath(unknownId, key.id)), 404, 'not_found');
    assert.equal(okKey<ApikeyJson>(await api.get(keyPath(owner.id, key.id)), 'apikey').status, 'ENABLED');
  });
});

describe('PUT /users/user/{userid}/apikey/{apikeyid}', () => {
  test('updates name, description and status and answers with the same secret', async () => {
    const key = await createApikey(api, owner.id, { name: 'old', description: 'old d' });
    secretsSeen.add(key.secret);
    const renamed = okKey<ApikeyJson>(await api.put(keyPath(owner.id, key.id), { name: 'new' }), 'apikey');
    assertApikey(renamed, server.publicUrl, owner.id, { withSecret: true });
    assert.equal(renamed.id, key.id);
    assert.equal(renamed.name, 'new');
    assert.equal(renamed.description, 'old d');
    assert.equal(renamed.status, 'ENABLED');
    assert.equal(renamed.secret, key.secret, 'the update answers the key\'s secret, unchanged');

    const disabled = okKey<ApikeyJson>(await api.put(keyPath(owner.id, key.id), { status: 'DISABLED', description: 'new d' }), 'apikey');
    assert.equal(disabled.status, 'DISABLED');
    assert.equal(disabled.description, 'new d');
    assert.equal(disabled.secret, key.secret);
    const read = okKey<ApikeyJson>(await api.get(keyPath(owner.id, key.id)), 'apikey');
    assert.equal(read.status, 'DISABLED');
    assert.equal(read.name, 'new');
  });

  test('an invalid status is a 400 naming status and changes nothing', async () => {
    const key = await createApikey(api, owner.id);
    secretsSeen.add(key.secret);
    failsOnField(await api.put(keyPath(owner.id, key.id), { status: 'disabled' }), 'status');
    assert.equal(okKey<ApikeyJson>(await api.get(keyPath(owner.id, key.id)), 'apikey').status, 'ENABLED');
  });
});

describe('DELETE /users/user/{userid}/apikey/{apikeyid}', () => {
  test('an ENABLED key is refused with 409 deleted:false and keeps working', async () => {
    const key = await createApikey(api, owner.id);
    secretsSeen.add(key.secret);
    refusedDelete(await api.delete(keyPath(owner.id, key.id)));
    ok(await api.get(keyPath(owner.id, key.id)));
    assert.equal((await authenticate(api, app.id, 'apikey', key.id, key.secret)).authenticated, true);
  });

  test('a DISABLED key is deleted, leaves the User\'s representation and no longer authenticates', async () => {
    const key = await createApikey(api, owner.id);
    secretsSeen.add(key.secret);
    ok(await api.put(keyPath(owner.id, key.id), { status: 'DISABLED' }));
    assert.deepEqual(ok(await api.delete(keyPath(owner.id, key.id))), { deleted: true });
    fails(await api.get(keyPath(owner.id, key.id)), 404, 'not_found');
    fails(await api.delete(keyPath(owner.id, key.id)), 404, 'not_found');
    assert.ok(!(await getUser(api, owner.id)).apikeys.some((k) => k.id === key.id));
    assert.deepEqual(okKey(await api.get(`/users/search/${key.id}`), 'users'), [], 'search no longer finds the deleted key id');
    // Even were it re-enabled, it is gone: a PUT answers 404 and the secret authenticates nothing.
    fails(await api.put(keyPath(owner.id, key.id), { status: 'ENABLED' }), 404, 'not_found');
    assert.equal((await authenticate(api, app.id, 'apikey', key.id, key.secret)).authenticated, false);
  });
});

describe('secrets', () => {
  test('an API Key secret appears only in the create and update responses, never in the server\'s output', async () => {
    const key = await createApikey(api, owner.id);
    secretsSeen.add(key.secret);
    const user = await api.get(`/users/user/${owner.id}`);
    const list = await api.get('/users');
    const read = await api.get(keyPath(owner.id, key.id));
    for (const res of [user, list, read]) assert.ok(!res.text.includes(key.secret), 'a read carries no secret');
    const output = server.output();
    for (const secret of secretsSeen) assert.ok(!output.includes(secret), 'the server\'s output carries no API Key secret');
  });
});
