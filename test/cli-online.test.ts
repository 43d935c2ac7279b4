// authctl against a running server: help and exit codes, applications, groups, users (password and bcrypt), API keys, snapshot.

import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { bcrypt } from 'hash-wasm';
import type { Application, Group, User } from '../src/client/index.js';
import { adminEnv, authctl, commandNames } from './helpers/authctl.js';
import { baseApplicationId } from './helpers/http-fixtures.js';
import { startServer, type Api, type ServerProcess } from './helpers/server.js';

let server: ServerProcess;
let api: Api;
let env: Record<string, string>;

before(async () => {
  server = await startServer();
  api = server.api();
  env = adminEnv(server);
});

after(async () => {
  await server?.dispose();
});

describe('usage', () => {
  test('--help on every command answers 0 with its usage; no command is a usage error (2)', async () => {
    const overview = await authctl(['--help']);
    assert.equal(overview.code, 0);
    const names = commandNames(overview.stdout);
    for (const expected of ['applications list', 'applications create', 'groups list', 'groups create', 'users list', 'users create',
      'apikeys create', 'apikeys disable', 'snapshot', 'reset-admin-password', 'verify', 'export', 'import', 'rotate-key']) {
      assert.ok(names.includes(expected), `authctl --help lists ${expected}`);
    }
    const helps = await Promise.all(names.map((name) => authctl([...name.split(' '), '--help'])));
    helps.forEach((res, i) => {
      assert.equal(res.code, 0, `${names[i]} --help: ${res.stderr}`);
      assert.match(res.stdout, new RegExp(`usage: authctl ${names[i]}`), `${names[i]} --help shows its usage`);
    });
    assert.equal((await authctl([])).code, 2);
  });

  test('wrong usage answers 2 with a message that points at --help', async () => {
    for (const args of [['nonsense'], ['applications', 'explode'], ['applications', 'list', '--bogus'], ['applications', 'create'], ['users', 'list', 'stray']]) {
      const res = await authctl(args, { env });
      assert.equal(res.code, 2, `${args.join(' ')}: ${res.stderr}`);
      assert.match(res.stderr, /--help/);
    }
    const noCredentials = await authctl(['applications', 'list'], { env: { AUTHCTL_URL: server.baseUrl } });
    assert.equal(noCredentials.code, 2);
    assert.match(noCredentials.stderr, /AUTHCTL_USER/);
  });

  test('a refusal or an unreachable server is a failure (1) with the reason', async () => {
    const wrong = await authctl(['applications', 'list'], { env: { ...env, AUTHCTL_PASSWORD: 'not-the-password' } });
    assert.equal(wrong.code, 1);
    assert.match(wrong.stderr, /401 unauthorized/);
    const gone = await authctl(['applications', 'list', '--url', 'http://127.0.0.1:1'], { env });
    assert.equal(gone.code, 1);
    assert.match(gone.stderr, /cannot reach http:\/\/127\.0\.0\.1:1/);
    const duplicate = await authctl(['groups', 'create', '--name', 'x', '--application', 'ZZZZZZZZZZZZZZZZZZZZZZ'], { env });
    assert.equal(duplicate.code, 1);
    assert.match(duplicate.stderr, /unknown_reference/);
  });
});

describe('applications, groups and users', () => {
  test('create and list, as a table and as JSON lines', async () => {
    const created = await authctl(['applications', 'create', '--name', 'CLI App', '--description', 'from authctl', '--custom-data', '{"tier":"gold"}', '--json'], { env });
    assert.equal(created.code, 0, created.stderr);
    const app = JSON.parse(created.stdout) as Application;
    assert.deepEqual(await api.client.applications.get(app.id), app);
    assert.deepEqual(app.custom_data, { tier: 'gold' });

    const table = await authctl(['applications', 'list', '--page-size', '1'], { env });
    assert.equal(table.code, 0);
    assert.match(table.stdout, /^ID\s+STATUS\s+NAME/);
    assert.match(table.stdout, new RegExp(`${app.id}\\s+ENABLED\\s+CLI App`));
    const lines = (await authctl(['applications', 'list', '--json'], { env })).stdout.trim().split('\n').map((l) => JSON.parse(l) as Application);
    assert.deepEqual(lines.map((a) => a.id), (await api.client.applications.list()).map((a) => a.id));

    const group = await authctl(['groups', 'create', '--name', 'cli-group', '--application', app.id], { env });
    assert.equal(group.code, 0, group.stderr);
    assert.match(group.stdout, /^created Group [0-9A-Za-z]+ \(cli-group\)/);
    const groups = (await authctl(['groups', 'list', '--application', app.id, '--json'], { env })).stdout.trim().split('\n').map((l) => JSON.parse(l) as Group);
    assert.deepEqual(groups.map((g) => g.name), ['cli-group']);
  });

  test('users create with --password-stdin and with a bcrypt --password-hash; both can authenticate', async () => {
    const app = await api.client.applications.create({ name: 'CLI users' });
    const made = await authctl(['users', 'create', '--email', 'cli.user@example.com', '--application', app.id, '--name', 'Cli User', '--password-stdin', '--json'], { env, stdin: 'cli-secret-pass\n' });
    assert.equal(made.code, 0, made.stderr);
    const user = JSON.parse(made.stdout) as User;
    assert.equal(user.email, 'cli.user@example.com');
    const ok = await api.client.authenticate({ type: 'username', application: app.id, credential: { username: user.email, password: 'cli-secret-pass' } });
    assert.equal(ok.authenticated, true, 'the password came from standard input, without its newline');

    const hash = await bcrypt({ password: 'brought-from-elsewhere', salt: randomBytes(16), costFactor: 4, outputType: 'encoded' });
    const imported = await authctl(['users', 'create', '--email', 'bcrypt.user@example.com', '--application', app.id, '--password-hash', hash], { env });
    assert.equal(imported.code, 0, imported.stderr);
    const check = await api.client.authenticate({ type: 'username', application: app.id, credential: { username: 'bcrypt.user@example.com', password: 'brought-from-elsewhere' } });
    assert.equal(check.authenticated, true, 'a bcrypt hash from another system authenticates');

    const both = await authctl(['users', 'create', '--email', 'x@example.com', '--application', app.id, '--password-stdin', '--password-hash', hash], { env });
    assert.equal(both.code, 2);

    const listed = await authctl(['users', 'list', '--search', 'cli.user'], { env });
    assert.match(listed.stdout, new RegExp(`${user.id}\\s+UNVERIFIED\\s+cli\\.user@example\\.com\\s+Cli User`));
    const ofApp = (await authctl(['users', 'list', '--application', app.id, '--json', '--page-size', '1'], { env })).stdout.trim().split('\n');
    assert.equal(ofApp.length, 2);
  });
});

describe('API keys and snapshot', () => {
  test('applications tokens sets token settings and prints a generated HS256 secret once; signing-keys rotate lists the keys', async () => {
    const app = await api.client.applications.create({ name: 'cli-tokens' });
    const on = await authctl(['applications', 'tokens', '--id', app.id, '--enabled', 'true', '--ttl', '300'], { env });
    assert.equal(on.code, 0, on.stderr);
    assert.match(on.stdout, /tokens enabled, ttl 300 s, EdDSA/);
    assert.deepEqual((await api.client.applications.get(app.id)).tokens, { enabled: true, ttl: 300, alg: 'EdDSA' });
    const hs = await authctl(['applications', 'tokens', '--id', app.id, '--alg', 'HS256', '--json'], { env });
    assert.equal(hs.code, 0, hs.stderr);
    assert.match((JSON.parse(hs.stdout) as { jwt_secret: string }).jwt_secret, /^[A-Za-z0-9_-]{43}$/);
    assert.equal((await authctl(['applications', 'tokens', '--id', app.id, '--alg', 'none'], { env })).code, 2, 'an unknown alg is a usage error');
    const rotated = await authctl(['signing-keys', 'rotate'], { env });
    assert.equal(rotated.code, 0, rotated.stderr);
    assert.match(rotated.stdout, /^KID\s+ALG\s+STATUS\s+PUBLISHED UNTIL$/m);
    assert.equal(rotated.stdout.match(/ current /g)?.length, 2);
    assert.ok((rotated.stdout.match(/ retired /g)?.length ?? 0) >= 2);
  });

  test('roles: users create --role, users roles, apikeys create --role; a key limited to authenticator cannot list', async () => {
    const base = await baseApplicationId(api);
    const made = await authctl(['users', 'create', '--email', 'cli.auditor@example.com', '--application', base, '--role', 'auditor', '--password-stdin', '--json'], { env, stdin: 'auditor-pass-123\n' });
    assert.equal(made.code, 0, made.stderr);
    const user = JSON.parse(made.stdout) as User;
    assert.deepEqual(user.roles, ['auditor']);
    const changed = await authctl(['users', 'roles', '--user-id', user.id, '--role', 'manager', '--role', 'authenticator'], { env });
    assert.equal(changed.code, 0, changed.stderr);
    assert.deepEqual((await api.client.users.get(user.id)).roles, ['manager', 'authenticator']);
    assert.equal((await authctl(['users', 'roles', '--user-id', user.id, '--role', 'root'], { env })).code, 2, 'an unknown role is a usage error');
    const key = await authctl(['apikeys', 'create', '--user-id', user.id, '--role', 'authenticator', '--json'], { env });
    assert.equal(key.code, 0, key.stderr);
    const { id, secret, roles } = JSON.parse(key.stdout) as { id: string; secret: string; roles: string[] };
    assert.deepEqual(roles, ['authenticator']);
    const listed = await authctl(['applications', 'list'], { env: { ...env, AUTHCTL_USER: id, AUTHCTL_PASSWORD: secret } });
    assert.notEqual(listed.code, 0);
    assert.match(listed.stderr, /forbidden|403/);
  });

  test('create prints the secret once; disable stops it authenticating', async () => {
    const base = await baseApplicationId(api);
    const user = await api.client.users.create({ email: 'cli.keys@example.com', password: 'keys-pass-123', applications: [base] });
    const made = await authctl(['apikeys', 'create', '--user-id', user.id, '--name', 'deploy'], { env });
    assert.equal(made.code, 0, made.stderr);
    const id = /created API Key ([0-9A-Z]{25})/.exec(made.stdout)?.[1];
    const secret = /secret: (\S+)/.exec(made.stdout)?.[1];
    assert.ok(id !== undefined && secret !== undefined, made.stdout);
    const auth = (): Promise<{ authenticated: boolean }> => api.client.authenticate({ type: 'apikey', application: base, credential: { username: id, password: secret } });
    assert.equal((await auth()).authenticated, true);

    // The key itself can drive authctl, as a CI job would.
    const asKey = await authctl(['applications', 'list'], { env: { ...env, AUTHCTL_USER: id, AUTHCTL_PASSWORD: secret } });
    assert.equal(asKey.code, 0, asKey.stderr);

    const disabled = await authctl(['apikeys', 'disable', '--user-id', user.id, '--key', id, '--json'], { env });
    assert.equal(disabled.code, 0, disabled.stderr);
    const shown = JSON.parse(disabled.stdout) as Record<string, unknown>;
    assert.equal(shown['status'], 'DISABLED');
    assert.ok(!('secret' in shown), 'disable does not print the secret again');
    assert.equal((await auth()).authenticated, false);
  });

  test('snapshot makes the running server write one', async () => {
    await api.client.applications.create({ name: 'before the snapshot' });
    const res = await authctl(['snapshot'], { env });
    assert.equal(res.code, 0, res.stderr);
    assert.match(res.stdout, /^snapshot written: snapshot-\d{16}\.msgpack \(seq \d+/);
    const again = await authctl(['snapshot', '--json'], { env });
    assert.deepEqual(JSON.parse(again.stdout), { taken: false, reason: 'nothing changed since the newest snapshot' });
  });

  test('the snapshot answer names the file within DATA_DIR, never its absolute path (issue 23)', async () => {
    await api.client.applications.create({ name: 'before the second snapshot' });
    const res = await api.post('/admin/snapshot');
    assert.equal(res.status, 200, res.text);
    assert.ok(!res.text.includes(server.dirs.root), `the answer reveals no server path: ${res.text}`);
    const snapshot = (res.json as { service: { result: { snapshot: { taken: boolean; file: string } } } }).service.result.snapshot;
    assert.equal(snapshot.taken, true);
    assert.match(snapshot.file, /^snapshot-\d{16}\.msgpack$/);
    assert.ok(existsSync(join(server.dirs.dataDir, snapshot.file)), 'the named file is in DATA_DIR');
  });
});
