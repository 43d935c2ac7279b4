// Every rendering of a User is exactly the text JSON.stringify gives for what it shows, in its order: quotes,
// backslashes, control characters, separators and non-ASCII in names, keys and custom_data included.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { InProcessApp, resultOf } from './helpers/fault-app.js';
import { PowerLossStorage } from './helpers/fault-storage.js';

/** The envelope's result as the server wrote it, and as JSON.stringify writes what it says. */
function resultText(body: string): { written: string; canonical: string } {
  const start = body.indexOf('"result":') + '"result":'.length;
  const end = body.lastIndexOf(',"elapsed":');
  const written = body.slice(start, end);
  return { written, canonical: JSON.stringify(JSON.parse(written)) };
}

test('User renderings are canonical JSON text, whatever their strings hold', async () => {
  const storage = new PowerLossStorage();
  await storage.mkdirp('/render-text');
  const app = await InProcessApp.open({ storage, dir: '/render-text' });
  try {
    const appId = resultOf<{ application: { id: string } }>(await app.post('/applications/application', { name: 'app "quoted"' })).application.id;
    const groupId = resultOf<{ group: { id: string } }>(await app.post('/groups/group', { name: 'back\\slash', application: appId })).group.id;
    const names = ['Plain Name', 'Quote " inside', 'Back \\ slash', 'Tab\there', 'Zoë \u{1f511}', 'line \u2028 separator', 'bidi \u202e override', 'ctl \u0001 char'];
    const ids: string[] = [];
    for (const [n, name] of names.entries()) {
      const user = resultOf<{ user: { id: string } }>(await app.post('/users/user', {
        email: `user${n}@example.com`, password: `password-${n}-long`, name, applications: [appId], groups: [groupId],
        custom_data: { note: name, [name]: n },
      })).user;
      ids.push(user.id);
      const key = resultOf<{ apikey: { id: string; secret: string } }>(await app.post(`/users/user/${user.id}/apikey`, { name })).apikey;
      const authenticated = await app.post('/authenticate', { type: 'apikey', application: appId, credential: { username: key.id, password: key.secret } });
      const { written, canonical } = resultText(authenticated.body);
      assert.equal(written, canonical, `POST /authenticate for ${JSON.stringify(name)}`);
    }
    const paths = [
      ...ids.map((id) => `/users/user/${id}`), '/users', '/users?minimal=1', `/users/search/user?limit=50`,
      `/applications/application/${appId}/users`, `/applications/application/${appId}/users?minimal=1`, `/groups/group/${groupId}/users`,
    ];
    for (const path of paths) {
      const [route, query] = path.split('?');
      const res = await app.get(route!, { query: query ?? '' });
      assert.equal(res.status, 200, `${path}: ${res.body.slice(0, 200)}`);
      const { written, canonical } = resultText(res.body);
      assert.equal(written, canonical, path);
    }
    // The names came back as they were given.
    const listed = resultOf<{ users: { name: string }[] }>(await app.get('/users')).users.map((u) => u.name);
    for (const name of names) assert.ok(listed.includes(name), JSON.stringify(name));
  } finally {
    await app.close();
  }
});
