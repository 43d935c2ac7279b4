// HTTP: first start — the base Application and the first admin; a generated admin password is logged once and only once.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { after, before, test } from 'node:test';
import { assertApplication, assertUserFull, fails, ok, okKey, type ApplicationJson, type UserFullJson } from './helpers/http-shapes.js';
import { newServerDirs, startServer, type ServerProcess } from './helpers/server.js';

const rootEmail = 'root@example.org';
let server: ServerProcess;

before(async () => {
  // An empty ADMIN_PASSWORD counts as unset: the server must generate one.
  server = await startServer({ env: { ADMIN_EMAIL: rootEmail, ADMIN_PASSWORD: '' } });
});

after(async () => {
  await server?.dispose();
});

let generated = '';

test('without ADMIN_PASSWORD a strong password is generated and logged once; it lets the admin in', async () => {
  const lines = server.logLines().filter((l) => typeof l['generatedAdminPassword'] === 'string');
  assert.equal(lines.length, 1, 'exactly one log line carries the generated password');
  generated = lines[0]!['generatedAdminPassword'] as string;
  assert.ok(generated.length >= 16, 'the generated password is long');
  assert.equal(server.output().split(generated).length - 1, 1, 'the password appears in the output exactly once');

  const api = server.api({ username: rootEmail, password: generated });
  const users = okKey<UserFullJson[]>(await api.get('/users'), 'users');
  assert.equal(users.length, 1, 'a fresh store holds only the first admin');
  const admin = users[0]!;
  assertUserFull(admin, server.publicUrl);
  assert.equal(admin.email, rootEmail);
  assert.notEqual(admin.status, 'DISABLED');
  assert.equal(admin.applications.length, 1, 'the admin is in the base Application');
  const apps = okKey<ApplicationJson[]>(await api.get('/applications'), 'applications');
  assert.equal(apps.length, 1, 'a fresh store holds only the base Application');
  assertApplication(apps[0], server.publicUrl, { allowEmptyCreatedAt: true });
  assert.equal(apps[0]!.id, admin.applications[0]!.id);
  assert.equal(apps[0]!.status, 'ENABLED');
  assert.deepEqual(okKey(await api.get('/groups'), 'groups'), []);
  fails(await api.get('/applications', { credentials: { username: 'admin@example.com', password: generated } }), 401, 'unauthorized');
});

test('a restart neither prints the password again nor makes another admin, whatever ADMIN_PASSWORD now says', async () => {
  assert.equal(await server.stop(), 0);
  const firstOutput = server.output();
  server = await startServer({ dirs: server.dirs, env: { ADMIN_EMAIL: rootEmail, ADMIN_PASSWORD: 'a-new-password-later' } });
  assert.ok(!server.output().includes(generated), 'the generated password is not printed again');
  assert.ok(!server.output().includes('a-new-password-later'));
  assert.ok(!firstOutput.includes('a-new-password-later'));
  const api = server.api({ username: rootEmail, password: generated });
  assert.equal(okKey<UserFullJson[]>(await api.get('/users'), 'users').length, 1);
  fails(await api.get('/users', { credentials: { username: rootEmail, password: 'a-new-password-later' } }), 401, 'unauthorized');
  ok(await api.get('/health', { credentials: null }));
});

test('an ADMIN_EMAIL that no User could have is refused at start (exit 2), before anything is created', () => {
  const dirs = newServerDirs();
  const mainJs = fileURLToPath(new URL('../src/main.js', import.meta.url));
  for (const bad of ['root', 'admin@exa\u200bmple.com']) {
    const run = spawnSync(process.execPath, [mainJs], {
      env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', PORT: '0', HOST: '127.0.0.1', DATA_DIR: dirs.dataDir, KEY_FILE: dirs.keyFile, ADMIN_EMAIL: bad, LOG_LEVEL: 'warn' },
      encoding: 'utf8', timeout: 30_000,
    });
    assert.equal(run.status, 2, run.stderr);
    assert.match(run.stderr, /ADMIN_EMAIL/);
    assert.equal(existsSync(dirs.dataDir), false, 'no data directory was made');
  }
});
