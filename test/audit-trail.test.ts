// The audit trail on the real server: one structured line per mutation (refused ones too) and per authentication outcome, with time, caller, action, target ids, outcome and client address, and never a secret.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { adminEmail, adminPassword, basicAuth, startServer, type ServerProcess } from './helpers/server.js';

let server: ServerProcess;

before(async () => {
  server = await startServer({ env: { BRUTE_FORCE_FAILURE_FACTOR: '3', BRUTE_FORCE_TARPIT_MS: '0' } });
});

after(async () => {
  await server?.dispose();
});

async function call(method: string, path: string, body?: unknown, auth = basicAuth(adminEmail, adminPassword)): Promise<{ status: number; result: Record<string, unknown> }> {
  const res = await fetch(server.baseUrl + path, {
    method, headers: { authorization: auth, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = (await res.json()) as { service: { result?: Record<string, unknown> } };
  return { status: res.status, result: json.service.result ?? {} };
}

interface AuditLine {
  time: number; audit: string; caller: string | null; targets: Record<string, string>; outcome: string; address: string; reason?: string; peer?: string;
}

async function auditLines(): Promise<AuditLine[]> {
  return (await server.auditLines()) as unknown as AuditLine[];
}

test('one audit line per mutation, refused ones included, naming caller, action, target ids, outcome and address', async () => {
  const before = (await auditLines()).length;
  const app = (await call('POST', '/applications/application', { name: 'audited' })).result['application'] as { id: string };
  await call('PUT', `/applications/application/${app.id}`, { description: 'changed' });
  const refused = await call('DELETE', `/applications/application/${app.id}`);
  assert.equal(refused.status, 409);
  const user = (await call('POST', '/users/user', { email: 'audited@example.com', password: 'audited-pass-1', applications: [app.id] })).result['user'] as { id: string };
  const key = (await call('POST', `/users/user/${user.id}/apikey`, { name: 'k' })).result['apikey'] as { id: string; secret: string };
  await call('PUT', `/users/user/${user.id}/apikey/${key.id}`, { status: 'DISABLED' });
  await call('DELETE', `/users/user/${user.id}/apikey/${key.id}`);
  const lines = (await auditLines()).slice(before);
  const mutations = lines.filter((l) => l.audit !== 'caller.authenticate');
  assert.deepEqual(mutations.map((l) => [l.audit, l.outcome]), [
    ['application.create', 'success'],
    ['application.update', 'success'],
    ['application.delete', 'delete_refused'],
    ['user.create', 'success'],
    ['apikey.create', 'success'],
    ['apikey.update', 'success'],
    ['apikey.delete', 'success'],
  ]);
  const adminId = mutations[0]!.caller;
  assert.match(adminId ?? '', /^[0-9A-Za-z]{22}$/);
  for (const l of mutations) {
    assert.equal(l.caller, adminId);
    assert.equal(l.address, '127.0.0.1');
    assert.equal(typeof l.time, 'number');
  }
  assert.deepEqual(mutations[0]!.targets, { application: app.id }, 'a create names what it created');
  assert.deepEqual(mutations[2]!.targets, { application: app.id }, 'path ids are named by their kind');
  assert.deepEqual(mutations[4]!.targets, { user: user.id, apikey: key.id });
  // The admin's password is checked once and then rides the verify cache like a session: seven calls,
  // at most one caller line (none when an earlier test already verified it), not one per request.
  assert.ok(lines.filter((l) => l.audit === 'caller.authenticate' && l.outcome === 'success').length <= 1, 'a caller line per real verification, not per request');
  for (const l of lines) assert.ok(!JSON.stringify(l).includes('audited-pass-1') && !JSON.stringify(l).includes(key.secret), 'never a secret');
});

test('one audit line per authentication outcome: success, failure (with the reason, for operators only) and locked; Basic failures too', async () => {
  const app = (await call('POST', '/applications/application', { name: 'auth audited' })).result['application'] as { id: string };
  const user = (await call('POST', '/users/user', { email: 'authaudit@example.com', password: 'authaudit-pass', applications: [app.id] })).result['user'] as { id: string };
  const before = (await auditLines()).length;
  const auth = (password: string, ip: string): Promise<unknown> => call('POST', '/authenticate', { type: 'username', application: app.id, credential: { username: 'authaudit@example.com', password }, ip_address: ip });
  await auth('authaudit-pass', '203.0.113.1');
  for (let i = 0; i < 4; i++) await auth(`wrong-${i}`, `198.51.100.${i}`);
  await auth('wrong', '203.0.113.1');
  await call('POST', '/authenticate', { type: 'username', application: app.id, credential: { username: 'nobody@example.com', password: 'x' }, ip_address: '198.51.100.9' });
  await call('GET', '/applications', undefined, basicAuth(adminEmail, 'not-the-admin-password'));
  await call('GET', '/applications', undefined, 'Basic !!!');
  const lines = (await auditLines()).slice(before).filter((l) => l.audit !== 'caller.authenticate' || l.outcome !== 'success');
  const shown = lines.map((l) => [l.audit, l.outcome, l.reason ?? null, l.address, l.targets['user'] ?? null]);
  assert.deepEqual(shown, [
    ['authenticate', 'success', null, '203.0.113.1', user.id],
    ['authenticate', 'failure', 'wrong_secret', '198.51.100.0', user.id],
    ['authenticate', 'failure', 'wrong_secret', '198.51.100.1', user.id],
    ['authenticate', 'failure', 'wrong_secret', '198.51.100.2', user.id],
    ['authenticate', 'locked', 'locked_account', '198.51.100.3', user.id],
    ['authenticate', 'failure', 'wrong_secret', '203.0.113.1', user.id],
    ['authenticate', 'failure', 'unknown_account', '198.51.100.9', null],
    ['caller.authenticate', 'failure', 'wrong_secret', '127.0.0.1', shown.length > 0 ? lines.find((l) => l.audit === 'caller.authenticate')!.targets['user']! : null],
    ['caller.authenticate', 'failure', 'malformed_credentials', '127.0.0.1', null],
  ]);
  const authLines = lines.filter((l) => l.audit === 'authenticate');
  for (const l of authLines) {
    assert.equal(l.targets['application'], app.id);
    assert.equal(l.peer, '127.0.0.1', 'the TCP peer beside the end user\'s address');
    assert.match(l.caller ?? '', /^[0-9A-Za-z]{22}$/, 'the calling application\'s admin');
  }
  for (const l of lines) assert.ok(!JSON.stringify(l).includes('authaudit-pass') && !JSON.stringify(l).includes('not-the-admin-password'));
});
