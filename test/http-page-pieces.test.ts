// A page of full Users is sent as the pieces it was rendered in, short ASCII ones copied into the reply by the
// front end's own loop (encodePieces, src/http/adapter.ts): on the wire, every User on a page reads as GET of that User.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createApplication, createGroup, unique } from './helpers/http-fixtures.js';
import { okKey, type ApplicationJson, type UserFullJson } from './helpers/http-shapes.js';
import { startServer, type Api, type ServerProcess } from './helpers/server.js';

let server: ServerProcess;
let api: Api;
let app: ApplicationJson;

before(async () => {
  server = await startServer();
  api = server.api();
  app = await createApplication(api, { name: `Pièces ${unique('app')}`, custom_data: { note: 'ü'.repeat(60) } });
});

after(async () => {
  await server?.dispose();
});

test('a page of Users whose short and long fields are ASCII or not reads as each User alone', async () => {
  const group = await createGroup(api, app.id, { name: 'Grüppe' });
  const tag = `pc${Date.now().toString(36)}`;
  // Non-ASCII first, in the middle and last in short fields; one a field's full length for the front end's own copy
  // (48) with its last unit not ASCII; longer ones; a character outside the BMP; JSON escapes, which stay ASCII.
  const names = [
    'Plain Name', 'éa', 'aé', 'Zoë Ångström', '李小龙', `${'a'.repeat(47)}é`, `${'b'.repeat(48)}`, `${'ø'.repeat(49)}`,
    'Key \u{1f511} holder', 'Quote " and \\ back', `${'c'.repeat(200)}ñ`,
  ];
  const ids: string[] = [];
  for (const [n, name] of names.entries()) {
    const user = okKey<UserFullJson>(await api.post('/users/user', {
      email: `${tag}.${n}@pieces.example`, password: 'long enough password', name,
      custom_data: { city: n % 2 === 0 ? 'Zürich' : 'Paris', n },
      applications: [app.id], groups: n % 3 === 0 ? [group.id] : [],
    }), 'user');
    ids.push(user.id);
  }
  const alone = new Map<string, UserFullJson>();
  for (const id of ids) alone.set(id, okKey<UserFullJson>(await api.get(`/users/user/${id}`), 'user'));
  for (const path of [`/users/search/${tag}?limit=20`, `/users/search/${tag}?limit=3`, '/users?limit=50']) {
    const res = await api.get(path);
    assert.equal(res.status, 200, `${path}: ${res.text.slice(0, 200)}`);
    const listed = (res.json as { service: { result: { users: UserFullJson[] } } }).service.result.users;
    const ours = listed.filter((u) => alone.has(u.id));
    assert.ok(ours.length > 0, `${path}: our Users listed`);
    for (const user of ours) assert.deepEqual(user, alone.get(user.id), `${path}: ${user.name}`);
  }
  const all = okKey<UserFullJson[]>(await api.get(`/users/search/${tag}?limit=20`), 'users');
  assert.deepEqual(new Set(all.map((u) => u.name)), new Set(names));
});
