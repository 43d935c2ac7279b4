// Secrets stay secret at the most verbose log level: after every endpoint has been called (successes and failures), no log line holds a password, an API Key secret or an Authorization value, and no data file holds a password or secret in plaintext.

import assert from 'node:assert/strict';
import { relative } from 'node:path';
import { after, before, test } from 'node:test';
import { serverRoutes } from './helpers/fault-app.js';
import { resolvePlan, type KnownIds, type RequestPlan, type RouteInfo } from './helpers/fault-fuzz.js';
import { adminEmail, adminPassword, basicAuth, readAllFiles, startServer, type ServerProcess } from './helpers/server.js';

let server: ServerProcess;
let routes: RouteInfo[];
/** Every secret sent to or received from the server, and every Authorization value sent. */
const secrets = new Set<string>([adminPassword, basicAuth(adminEmail, adminPassword), basicAuth(adminEmail, adminPassword).slice(6)]);

before(async () => {
  routes = await serverRoutes();
  // trace: the most verbose pino level, below debug.
  server = await startServer({ env: { LOG_LEVEL: 'trace', SNAPSHOT_EVERY_RECORDS: '15' } });
});

after(async () => {
  await server?.dispose();
});

async function call(method: string, path: string, body?: unknown, auth = basicAuth(adminEmail, adminPassword)): Promise<{ status: number; result: Record<string, unknown> }> {
  secrets.add(auth).add(auth.replace(/^Basic /, ''));
  const res = await fetch(server.baseUrl + path, {
    method, headers: { authorization: auth, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = (await res.json().catch(() => ({}))) as { service?: { result?: Record<string, unknown> } };
  return { status: res.status, result: json.service?.result ?? {} };
}

test('every endpoint, at log level trace: no password, API Key secret or Authorization value in any log line or data file', async (t) => {
  // A tour through the credentials: passwords set, changed and imported; keys made and shown again; both kinds checked right and wrong, as callers and end users.
  const app = (await call('POST', '/applications/application', { name: 'secret app' })).result['application'] as { id: string };
  const group = (await call('POST', '/groups/group', { name: 'secret group', application: app.id })).result['group'] as { id: string };
  const passwords = ['first-Secret-pass-1', 'second-Secret-pass-2', 'third-Secret-pass-3'];
  passwords.forEach((p) => secrets.add(p));
  const user = (await call('POST', '/users/user', { email: 'secret@example.com', password: passwords[0], applications: [app.id], groups: [group.id] })).result['user'] as { id: string };
  await call('PUT', `/users/user/${user.id}`, { password: passwords[1], status: 'ENABLED' });
  const base = ((await call('GET', `/users/search/${encodeURIComponent(adminEmail)}`)).result['users'] as Array<{ applications: Array<{ id: string }> }>)[0]!.applications[0]!.id;
  const ops = (await call('POST', '/users/user', { email: 'ops@example.com', password: passwords[2], applications: [base] })).result['user'] as { id: string };
  const key = (await call('POST', `/users/user/${user.id}/apikey`, { name: 'k' })).result['apikey'] as { id: string; secret: string };
  const opsKey = (await call('POST', `/users/user/${ops.id}/apikey`, { name: 'ops key' })).result['apikey'] as { id: string; secret: string };
  const again = (await call('PUT', `/users/user/${user.id}/apikey/${key.id}`, { description: 'shown again' })).result['apikey'] as { secret: string };
  [key.secret, opsKey.secret, again.secret].forEach((s) => secrets.add(s));
  for (const [type, username, password] of [['username', 'secret@example.com', passwords[1]], ['username', 'secret@example.com', 'Wrong-guess-123'], ['apikey', key.id, key.secret], ['apikey', key.id, 'Wrong-key-guess-xxxxxxxxxxxxxxxxxxxxxxxxxxxxx']] as const) {
    secrets.add(password);
    await call('POST', '/authenticate', { type, application: app.id, credential: { username, password }, ip_address: '203.0.113.7' });
  }
  await call('GET', '/applications', undefined, basicAuth('ops@example.com', passwords[2]!));
  await call('GET', '/applications', undefined, basicAuth(opsKey.id, opsKey.secret));
  await call('GET', '/applications', undefined, basicAuth('ops@example.com', 'Wrong-caller-pass-9'));
  secrets.add('Wrong-caller-pass-9');
  await call('GET', '/applications', undefined, 'Basic bm9jb2xvbmF0YWxs');

  // Then every route once, with real ids and plausible bodies.
  const users = (await call('GET', '/users')).result['users'] as Array<{ id: string; apikeys: Array<{ id: string }> }>;
  const known: KnownIds = {
    application: [app.id], group: [group.id], user: [user.id], organization: [],
    apikey: users.flatMap((u) => u.apikeys.map((k) => ({ user: u.id, key: k.id }))).filter((k) => k.user === user.id),
  };
  const statuses = new Map<number, number>();
  for (let i = 0; i < routes.length; i++) {
    const plan: RequestPlan = { route: i, params: Array(4).fill({ kind: 'known', index: 0 }), tail: '', body: { kind: 'template', drop: [], hostile: [], extra: {} }, contentType: undefined, auth: { kind: 'admin' }, query: '' };
    const req = resolvePlan(plan, routes, known);
    const res = await fetch(server.baseUrl + req.path, {
      method: req.method, headers: { authorization: basicAuth(adminEmail, adminPassword), ...(req.body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: req.method === 'GET' || req.body === undefined ? undefined : Buffer.from(req.body).toString('utf8'),
    });
    const text = await res.text();
    for (const m of text.matchAll(/"secret":"([^"]+)"/g)) secrets.add(m[1]!);
    for (const m of text.matchAll(/"password":"([^"]+)"/g)) secrets.add(m[1]!);
    statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
  }
  t.diagnostic(`${routes.length} routes called once more (${[...statuses].map(([s, n]) => `${s}: ${n}`).join(', ')}); ${secrets.size} secrets tracked`);

  assert.equal(await server.stop(), 0, 'a clean stop writes the final snapshot too');
  const output = server.output();
  const lines = output.split('\n').filter((l) => l.trim() !== '');
  assert.ok(lines.some((l) => l.includes('"level":10') || l.includes('"level":20')) || lines.length > 50, 'the log is verbose');
  for (const secret of secrets) {
    const at = lines.findIndex((l) => l.includes(secret));
    assert.equal(at, -1, `a log line holds a secret (${JSON.stringify(secret.slice(0, 6))}...): ${lines[at]?.slice(0, 300)}`);
  }
  const files = readAllFiles(server.dirs.dataDir);
  assert.ok([...files.keys()].some((f) => f.includes('snapshot-')), 'a snapshot is among the files checked');
  for (const [path, bytes] of files) {
    for (const secret of secrets) {
      assert.equal(bytes.indexOf(Buffer.from(secret, 'utf8')), -1, `${relative(server.dirs.dataDir, path)} holds a secret (${JSON.stringify(secret.slice(0, 6))}...) in plaintext`);
    }
  }
  t.diagnostic(`${lines.length} log lines and ${files.size} data files searched for ${secrets.size} secrets: none found`);
});
