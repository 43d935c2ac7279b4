// A User's kept renderings (GET of a User, POST /authenticate) say what the listing's text says, non-ASCII included, and follow every change to the User, its Applications, Groups and Organization.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { InProcessApp, resultOf } from './helpers/fault-app.js';
import { PowerLossStorage } from './helpers/fault-storage.js';
import { authenticatedView, type UserFullJson } from './helpers/http-shapes.js';

type Rendered = Record<string, unknown> & { applications: { name: string }[]; groups: { name: string }[]; name: string };

test('the bytes of a rendering equal its text, and a change to anything it shows renders it again', async () => {
  const storage = new PowerLossStorage();
  await storage.mkdirp('/render');
  const app = await InProcessApp.open({ storage, dir: '/render' });
  try {
    const appId = resultOf<{ application: { id: string } }>(await app.post('/applications/application', { name: 'Ångström app' })).application.id;
    const groupId = resultOf<{ group: { id: string } }>(await app.post('/groups/group', { name: 'grüppe ✓', application: appId })).group.id;
    const userId = resultOf<{ user: { id: string } }>(await app.post('/users/user', {
      email: 'zoe@example.com', password: 'zoe-password-1', name: 'Zoë \u{1f511}', applications: [appId], groups: [groupId],
      custom_data: { city: 'Zürich', note: 'lone \u2028 separator' },
    })).user.id;
    const key = resultOf<{ apikey: { id: string; secret: string } }>(await app.post(`/users/user/${userId}/apikey`, { name: 'phone' })).apikey;

    const fetched = async (): Promise<Rendered> => resultOf<{ user: Rendered }>(await app.get(`/users/user/${userId}`)).user;
    const listed = async (): Promise<Rendered> =>
      resultOf<{ users: Rendered[] }>(await app.get('/users')).users.find((u) => u['id'] === userId)!;
    const authenticated = async (): Promise<unknown> => {
      const result = resultOf<{ authenticated: boolean; user: unknown }>(await app.post('/authenticate', {
        type: 'apikey', application: appId, credential: { username: key.id, password: key.secret },
      }));
      assert.equal(result.authenticated, true);
      return result.user;
    };

    // Twice each: the second answers come from what the first kept (and the second authentication is recognised).
    for (let i = 0; i < 2; i++) {
      const text = await listed();
      assert.deepEqual(await fetched(), text);
      assert.deepEqual(await authenticated(), authenticatedView(text as unknown as UserFullJson));
      assert.equal(text.name, 'Zoë \u{1f511}');
    }
    const changes: Array<[path: string, body: object, seen: (u: Rendered) => boolean]> = [
      [`/groups/group/${groupId}`, { name: 'Gruppe ñ' }, (u) => u.groups[0]?.name === 'Gruppe ñ'],
      [`/applications/application/${appId}`, { name: 'App ø' }, (u) => u.applications[0]?.name === 'App ø'],
      [`/users/user/${userId}`, { name: 'Zoë Ω' }, (u) => u.name === 'Zoë Ω'],
    ];
    for (const [path, body, seen] of changes) {
      assert.equal((await app.put(path, body)).status, 200);
      const text = await listed();
      assert.ok(seen(text), `${path}: the listing shows the change`);
      assert.deepEqual(await fetched(), text, `${path}: GET of the User shows it`);
      assert.deepEqual(await authenticated(), authenticatedView(text as unknown as UserFullJson), `${path}: so does POST /authenticate`);
      assert.deepEqual(await authenticated(), authenticatedView(text as unknown as UserFullJson), `${path}: and its repeat`);
    }
  } finally {
    await app.close();
  }
});
