// A page of full Users (GET /users?limit, a paged search) is sent in pieces, each User's Applications and Groups
// as their kept texts (Renderer.userFullParts): the page must read exactly as the Users rendered one by one.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { apikeysPerUserMax } from '../src/config/limits.js';
import { InProcessApp, resultOf } from './helpers/fault-app.js';
import { PowerLossStorage } from './helpers/fault-storage.js';

/** The envelope's result exactly as the server wrote it. */
function resultText(body: string): string {
  return body.slice(body.indexOf('"result":') + '"result":'.length, body.lastIndexOf(',"elapsed":'));
}

test('a page of full Users is the text of each User rendered alone, joined', async () => {
  const storage = new PowerLossStorage();
  await storage.mkdirp('/render-parts');
  const app = await InProcessApp.open({ storage, dir: '/render-parts' });
  try {
    const apps: string[] = [];
    const groups: string[] = [];
    for (const [n, data] of [{}, { tier: 'gold' }, { note: 'x'.repeat(400), nested: { list: [1, 2, 3] } }].entries()) {
      const appId = resultOf<{ application: { id: string } }>(await app.post('/applications/application', { name: `app ${n}`, custom_data: data })).application.id;
      apps.push(appId);
      for (const g of [0, 1]) {
        groups.push(resultOf<{ group: { id: string } }>(await app.post('/groups/group', { name: `group ${n}.${g}`, application: appId })).group.id);
      }
    }
    // No memberships but one; every membership (an embedded text after each comma); one App and many API Keys, so
    // the rendering has more pieces than the joins kept by length; and a name that is not ASCII.
    const shapes = [
      { name: 'One App', applications: [apps[0]!], groups: [] as string[], keys: 0 },
      { name: 'Every membership', applications: apps, groups, keys: 2 },
      { name: 'Many keys', applications: [apps[2]!], groups: [groups[5]!], keys: apikeysPerUserMax },
      { name: 'Zoë \u{1f511} "quoted"', applications: [apps[1]!, apps[2]!], groups: [groups[2]!, groups[4]!], keys: 1 },
    ];
    const ids: string[] = [];
    for (const [n, s] of shapes.entries()) {
      const id = resultOf<{ user: { id: string } }>(await app.post('/users/user', {
        email: `member${n}@parts.example`, password: `password-${n}-long-enough`, name: s.name,
        applications: s.applications, groups: s.groups, custom_data: { n },
      })).user.id;
      ids.push(id);
      for (let k = 0; k < s.keys; k++) assert.equal((await app.post(`/users/user/${id}/apikey`, { name: `key ${k}` })).status, 200);
    }
    const alone = new Map<string, string>();
    for (const id of ids) {
      const text = resultText((await app.get(`/users/user/${id}`)).body);
      alone.set(id, text.slice('{"user":'.length, -1));
    }
    for (const [path, query] of [['/users', 'limit=20'], ['/users/search/parts.example', 'limit=20']] as const) {
      const res = await app.get(path, { query });
      assert.equal(res.status, 200, res.body.slice(0, 200));
      const written = resultText(res.body);
      const listed = (JSON.parse(written) as { users: { id: string }[] }).users.map((u) => u.id);
      for (const id of ids) assert.ok(listed.includes(id), `${path}: ${id} listed`);
      const texts = await Promise.all(listed.map(async (id) => alone.get(id) ?? resultText((await app.get(`/users/user/${id}`)).body).slice('{"user":'.length, -1)));
      assert.equal(written, `{"users":[${texts.join(',')}]}`, path);
    }
  } finally {
    await app.close();
  }
});
