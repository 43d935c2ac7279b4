// HTTP: large listings (GET /users, a search matching most users) are streamed and arrive whole and well-formed.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { searchResultsInlineMax } from '../src/config/limits.js';
import { createApplication } from './helpers/http-fixtures.js';
import { okKey, type UserFullJson } from './helpers/http-shapes.js';
import { startServer, type Api, type ServerProcess } from './helpers/server.js';

// One precomputed argon2id hash (password "streaming-pass") imported for every user: no hashing per user.
const importedHash = '$argon2id$v=19$m=1024,t=1,p=1$c3RyZWFtaW5nLXNhbHQ$+3ECS4b+EDX1W9mo1nU7WTH/yr+G5KvHrKlIf4UXx1E';
const userCount = searchResultsInlineMax + 200;

let server: ServerProcess;
let api: Api;

before(async () => {
  server = await startServer();
  api = server.api();
  const app = await createApplication(api);
  for (let i = 0; i < userCount; i += 50) {
    await Promise.all(Array.from({ length: Math.min(50, userCount - i) }, async (_, j) => okKey(
      await api.post('/users/user', { email: `stream${i + j}@many.example`, password_hash: importedHash, applications: [app.id], name: `Streamed ${i + j}` }),
      'user',
    )));
  }
});

after(async () => {
  await server?.dispose();
});

test('GET /users streams every user in creation order as one valid envelope', async () => {
  const res = await api.get('/users');
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('transfer-encoding'), 'chunked');
  const users = okKey<UserFullJson[]>(res, 'users');
  assert.equal(users.length, userCount + 1); // and the admin
  const streamed = users.filter((u) => u.email.endsWith('@many.example')).map((u) => u.name);
  assert.deepEqual(streamed, Array.from({ length: userCount }, (_, i) => `Streamed ${i}`));
  assert.equal(typeof (res.json as { service: { elapsed: unknown } }).service.elapsed, 'number');
});

test(`a search matching more than ${searchResultsInlineMax} users is streamed whole`, async () => {
  const res = await api.get('/users/search/MANY.EXAMPLE');
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('transfer-encoding'), 'chunked');
  assert.equal(okKey<UserFullJson[]>(res, 'users').length, userCount);
  const few = await api.get('/users/search/stream12');
  assert.equal(few.headers.get('transfer-encoding'), null, 'small results are sent in one piece');
  assert.deepEqual(okKey<UserFullJson[]>(few, 'users').map((u) => u.email).sort(), Array.from({ length: 11 }, (_, i) => i === 0 ? 'stream12@many.example' : `stream12${i - 1}@many.example`).sort());
});
