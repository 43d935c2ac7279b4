// HTTP: every answer forbids caching (Cache-Control: no-store), above all those that carry an API Key's secret (issue 23).

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createApikey, createApplication, createUser } from './helpers/http-fixtures.js';
import { adminEmail, adminPassword, basicAuth, rawRequest, startServer, type Api, type HttpResult, type ServerProcess } from './helpers/server.js';

let server: ServerProcess;
let api: Api;

before(async () => {
  server = await startServer();
  api = server.api();
});

after(async () => {
  await server?.dispose();
});

function assertNoStore(res: HttpResult, what: string): void {
  assert.equal(res.headers.get('cache-control'), 'no-store', `${what}: ${res.status} ${res.text.slice(0, 200)}`);
}

test('the answers that carry an API Key secret are not to be stored', async () => {
  const app = await createApplication(api);
  const user = await createUser(api, [app.id]);
  const created = await api.post(`/users/user/${user.id}/apikey`, { name: 'CI' });
  assert.equal(created.status, 200, created.text);
  assert.match(created.text, /"secret":"/);
  assertNoStore(created, 'POST apikey');
  const key = await createApikey(api, user.id);
  const updated = await api.put(`/users/user/${user.id}/apikey/${key.id}`, { name: 'renamed' });
  assert.match(updated.text, /"secret":"/);
  assertNoStore(updated, 'PUT apikey');
  assertNoStore(await api.post(`/users/user/${user.id}/apikey/${key.id}`, { name: 'again' }), 'POST apikey/{id}');
});

test('so are entities, listings (streamed), errors, and the public routes', async () => {
  const app = await createApplication(api);
  assertNoStore(await api.get(`/applications/application/${app.id}`), 'GET application');
  assertNoStore(await api.get('/users'), 'GET /users');
  assertNoStore(await api.get('/users', { credentials: null }), '401');
  assertNoStore(await api.get('/users', { credentials: { username: adminEmail, password: 'wrong-password' } }), '401 wrong password');
  assertNoStore(await api.get('/no/such/route'), '404 route');
  assertNoStore(await api.delete('/health'), '405');
  assertNoStore(await api.post('/applications/application', undefined, { raw: '{"name":', headers: { 'Content-Type': 'application/json' } }), '400');
  assertNoStore(await api.get('/health', { credentials: null }), 'GET /health');
  assertNoStore(await api.get('/openapi.json', { credentials: null }), 'GET /openapi.json');
  const authenticated = await api.post('/authenticate', {
    application: app.id, credential: { username: adminEmail, password: adminPassword },
  });
  assertNoStore(authenticated, 'POST /authenticate');
});

test('a refusal the front end makes before any handler runs (413) is not to be stored either', async () => {
  const head = [
    'POST /applications/application HTTP/1.1', 'Host: 127.0.0.1', `Authorization: ${basicAuth(adminEmail, adminPassword)}`,
    'Content-Type: application/json', `Content-Length: ${1024 * 1024 + 1}`,
  ].join('\r\n');
  const res = await rawRequest(server.port, head);
  assert.equal(res.status, 413, res.body);
  assert.equal(res.headers['cache-control'], 'no-store');
});
