// authctl on data directories: verify (sound and damaged), reset-admin-password (refused while the server runs), export and import back.

import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { cpSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { bcrypt } from 'hash-wasm';
import { decodeLog } from '../src/persist/codec.js';
import { adminEnv, authctl } from './helpers/authctl.js';
import { baseApplicationId, createApikey, createApplication, createGroup, createUser, defaultUserPassword } from './helpers/http-fixtures.js';
import { adminEmail, adminPassword, newServerDirs, startServer, type ServerDirs, type ServerProcess } from './helpers/server.js';

let server: ServerProcess;
let dirs: ServerDirs;
/** Directories this file made besides the server's, removed at the end. */
const scratch: string[] = [];

function scratchDirs(): ServerDirs {
  const d = newServerDirs();
  scratch.push(d.root);
  return d;
}

before(async () => {
  server = await startServer();
  dirs = server.dirs;
  const api = server.api();
  const base = await baseApplicationId(api);
  const app = await createApplication(api, { custom_data: { tier: 'gold' } });
  const group = await createGroup(api, app.id);
  const org = await api.client.organizations.create({ name: 'Exported Ltd', custom_data: { region: 'eu' } });
  const user = await createUser(api, [app.id], { groups: [group.id], organization: org.id, custom_data: { company_name: 'Exported Ltd' } });
  await createApikey(api, user.id);
  await createUser(api, [base]);
});

after(async () => {
  await server?.dispose();
  for (const root of scratch) rmSync(root, { recursive: true, force: true });
});

/** Everything a client can see, ids and times included, to compare two servers. */
async function visible(s: ServerProcess, credentials = { username: adminEmail, password: adminPassword }): Promise<unknown> {
  const c = s.api(credentials).client;
  return {
    applications: await c.applications.list(), groups: await c.groups.list(), organizations: await c.organizations.list(),
    users: (await c.users.list()).map((u) => ({ ...u, href: u.href.replace(/^http:\/\/[^/]+/, '') })),
  };
}

const stripHosts = (v: unknown): unknown => JSON.parse(JSON.stringify(v).replace(/http:\/\/127\.0\.0\.1:\d+/g, ''));

describe('verify', () => {
  test('a sound directory, even beside its running server: exit 0 with counts', async () => {
    const res = await authctl(['verify', '--data-dir', dirs.dataDir]);
    assert.equal(res.code, 0, res.stdout + res.stderr);
    assert.match(res.stdout, /^ok log .*wal-0000000000000001\.log: seq 1\.\.\d+/m);
    assert.match(res.stdout, /state: last seq \d+ .*2 organizations, 2 applications, 1 groups, 3 users/);
    assert.match(res.stdout, /no damage found/);
  });

  test('a flipped byte inside the log or a snapshot: exit 1, naming the file and offset', async () => {
    await server.stop();
    server = await server.restart();
    const copy = scratchDirs();
    cpSync(dirs.dataDir, copy.dataDir, { recursive: true });
    rmSync(join(copy.dataDir, 'LOCK'), { force: true });
    const clean = await authctl(['verify', '--data-dir', copy.dataDir]);
    assert.equal(clean.code, 0, clean.stdout);
    assert.match(clean.stdout, /^ok snapshot .*snapshot-\d{16}\.msgpack: base seq \d+, 2 organizations, 2 applications, 1 groups, 3 users/m);

    const segment = join(copy.dataDir, 'wal-0000000000000001.log');
    const bytes = readFileSync(segment);
    // Inside the second record's payload, with records after it (found by the log's own decoder, whatever the framing).
    const { offsets } = decodeLog(bytes, segment);
    assert.ok(offsets.length >= 3);
    bytes[offsets[1]! + 12]! ^= 0xff;
    writeFileSync(segment, bytes);
    const damaged = await authctl(['verify', '--data-dir', copy.dataDir]);
    assert.equal(damaged.code, 1);
    assert.match(damaged.stdout, new RegExp(`^DAMAGE ${segment.replace(/[.]/g, '\\.')} at offset ${offsets[1]}: corrupt record \\(checksum mismatch`, 'm'));
    assert.equal(damaged.stdout.match(/^DAMAGE/gm)?.length, 1, `only the corrupt record is reported: ${damaged.stdout}`);

    const snapshotName = readdirSync(copy.dataDir).find((n) => n.startsWith('snapshot-'))!;
    const snapshot = join(copy.dataDir, snapshotName);
    const snap = readFileSync(snapshot);
    snap[snap.length - 3]! ^= 0xff;
    writeFileSync(snapshot, snap);
    const both = await authctl(['verify', '--data-dir', copy.dataDir]);
    assert.equal(both.code, 1);
    assert.match(both.stdout, new RegExp(`DAMAGE ${snapshot.replace(/[.]/g, '\\.')} at offset \\d+: checksum mismatch`));
    assert.match(both.stdout, /problems found/);
  });

  test('a directory that is not there: exit 1', async () => {
    const res = await authctl(['verify', '--data-dir', join(dirs.root, 'nowhere')]);
    assert.equal(res.code, 1);
    assert.match(res.stderr, /no data directory/);
  });
});

describe('reset-admin-password', () => {
  test('refused while the server runs; after it stops, the record is durable and the new password works', async () => {
    const busy = await authctl(['reset-admin-password', '--data-dir', dirs.dataDir, '--password-stdin'], { stdin: 'new-admin-pass-1\n' });
    assert.equal(busy.code, 1);
    assert.match(busy.stderr, /is in use: another process holds the lock on .*Stop the server first/);

    // The admin locked itself out: disabled by another administrator and out of the base Application's reach.
    const api = server.api();
    const other = await createUser(api, [await baseApplicationId(api)], { password: 'other-admin-pass' });
    const otherApi = server.api({ username: other.email, password: 'other-admin-pass' });
    const admin = (await otherApi.client.users.search(adminEmail)())[0]!;
    await otherApi.client.users.update(admin.id, { status: 'DISABLED' });
    await server.stop();

    const res = await authctl(['reset-admin-password', '--data-dir', dirs.dataDir, '--email', adminEmail, '--password-stdin'], { stdin: 'new-admin-pass-1\n' });
    assert.equal(res.code, 0, res.stderr);
    assert.match(res.stdout, new RegExp(`reset ${adminEmail} \\(${admin.id}\\): password, status DISABLED -> ENABLED; written as record \\d+`));
    assert.equal((await authctl(['verify', '--data-dir', dirs.dataDir])).code, 0);

    server = await server.restart();
    const fresh = server.api({ username: adminEmail, password: 'new-admin-pass-1' });
    assert.ok((await fresh.client.applications.list()).length > 0, 'the new password lets the admin in');
    const old = await server.api().get('/applications');
    assert.equal(old.status, 401, 'the old one does not');

    // Without a password given, one is generated and printed once.
    await server.stop();
    const generated = await authctl(['reset-admin-password', '--data-dir', dirs.dataDir]);
    assert.equal(generated.code, 0, generated.stderr);
    const password = /new password: (\S+)/.exec(generated.stdout)?.[1];
    assert.ok(password !== undefined && password.length >= 20);
    server = await server.restart();
    assert.equal((await server.api({ username: adminEmail, password }).get('/applications')).status, 200);
    // Back to the password the other tests of this file use.
    await server.api({ username: adminEmail, password }).client.users.update(admin.id, { password: adminPassword });
  });

  test('an unknown email: exit 1, nothing written', async () => {
    await server.stop();
    const before = readdirSync(dirs.dataDir).sort();
    const res = await authctl(['reset-admin-password', '--data-dir', dirs.dataDir, '--email', 'nobody@example.com']);
    assert.equal(res.code, 1);
    assert.match(res.stderr, /No User with email nobody@example\.com/);
    assert.deepEqual(readdirSync(dirs.dataDir).sort().filter((n) => n !== 'LOCK'), before.filter((n) => n !== 'LOCK'));
    server = await server.restart();
  });
});

describe('export and import', () => {
  test('export -> import into an empty directory gives the same service: ids, times, hashes, API Keys', async () => {
    const api = server.api();
    const exportFile = join(dirs.root, 'export.jsonl');
    const exported = await authctl(['export', '--data-dir', dirs.dataDir, '--out', exportFile]);
    assert.equal(exported.code, 0, exported.stderr);
    assert.match(exported.stderr, /exported 2 organizations, 2 applications, 1 groups, \d+ users/);
    const lines = readFileSync(exportFile, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.equal(lines[0]!['format'], 'authd-export');
    assert.equal(lines[1]!['kind'], 'meta');
    assert.ok(lines.filter((l) => l['kind'] === 'user').every((u) => typeof u['password_hash'] === 'string' && (u['password_hash'] as string).startsWith('$argon2id$')));

    const target = scratchDirs();
    const imported = await authctl(['import', '--data-dir', target.dataDir, exportFile]);
    assert.equal(imported.code, 0, imported.stderr);
    assert.match(imported.stdout, /imported 2 organizations, 2 applications, 1 groups, \d+ users into .* base Application and default Organization taken from the file/);
    assert.equal((await authctl(['verify', '--data-dir', target.dataDir])).code, 0);

    // Same server key, so the API Key secrets derived from the imported nonces stay valid.
    const restored = await startServer({ dirs: { ...target, keyFile: dirs.keyFile } });
    try {
      assert.deepEqual(stripHosts(await visible(restored)), stripHosts(await visible(server)), 'everything a client sees, ids and times included');
    } finally {
      await restored.dispose({ keepDirs: true });
    }
    // The same file again changes nothing anyone can see.
    const again = await authctl(['import', '--data-dir', target.dataDir, exportFile]);
    assert.equal(again.code, 0, again.stderr);
    const second = await startServer({ dirs: { ...target, keyFile: dirs.keyFile } });
    try {
      assert.deepEqual(stripHosts(await visible(second)), stripHosts(await visible(server)));
      const user = (await api.client.users.list()).find((u) => u.apikeys.length > 0)!;
      // The update answer shows the secret again (and changes the original only).
      const key = await api.client.apikeys.update(user.id, user.apikeys[0]!.id, {});
      const application = user.applications[0]!.id;
      const byKey = await second.api().client.authenticate({ type: 'apikey', application, credential: { username: key.id, password: key.secret } });
      assert.equal(byKey.authenticated, true, 'an imported API Key authenticates');
      const byPassword = await second.api().client.authenticate({ type: 'username', application, credential: { username: user.email, password: defaultUserPassword } });
      assert.equal(byPassword.authenticated, true, 'an imported password hash verifies');
    } finally {
      await second.dispose({ keepDirs: true });
    }
  });

  test('lines from another system: bcrypt hashes, no ids; a bad line anywhere leaves the directory untouched', async () => {
    const api = server.api();
    const app = await createApplication(api);
    await server.stop();
    const hash = await bcrypt({ password: 'legacy-password', salt: randomBytes(16), costFactor: 4, outputType: 'encoded' });
    const good = join(dirs.root, 'legacy.jsonl');
    writeFileSync(good, [
      JSON.stringify({ kind: 'user', email: 'legacy.one@example.com', name: 'Legacy One', password_hash: hash, applications: [app.id] }),
      '',
      JSON.stringify({ kind: 'user', email: 'legacy.two@example.com', password_hash: hash, applications: [app.id], custom_data: { company_name: 'Old Co' } }),
    ].join('\n'));
    const bad = join(dirs.root, 'bad.jsonl');
    writeFileSync(bad, [
      JSON.stringify({ kind: 'user', email: 'never.there@example.com', password_hash: hash, applications: [app.id] }),
      JSON.stringify({ kind: 'user', email: 'broken@example.com', password_hash: hash, applications: ['ZZZZZZZZZZZZZZZZZZZZZZ'] }),
    ].join('\n'));

    const refused = await authctl(['import', '--data-dir', dirs.dataDir, bad]);
    assert.equal(refused.code, 1);
    assert.ok(refused.stderr.includes(`${bad} line 2: applications: no Application with id ZZZZZZZZZZZZZZZZZZZZZZ. (unknown_reference)`), refused.stderr);
    const notHash = join(dirs.root, 'nothash.jsonl');
    writeFileSync(notHash, JSON.stringify({ kind: 'user', email: 'plain@example.com', password_hash: 'plaintext', applications: [app.id] }));
    const plain = await authctl(['import', '--data-dir', dirs.dataDir, notHash]);
    assert.equal(plain.code, 1);
    assert.match(plain.stderr, /line 1: password_hash: must be an argon2id PHC string or a bcrypt hash/);

    const ok = await authctl(['import', '--data-dir', dirs.dataDir, good]);
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(ok.stdout, /imported 0 organizations, 0 applications, 0 groups, 2 users/);

    server = await server.restart();
    const users = await server.api().client.users.search('legacy.')();
    assert.deepEqual(users.map((u) => u.email), ['legacy.one@example.com', 'legacy.two@example.com']);
    assert.equal(users[0]!.status, 'UNVERIFIED');
    assert.equal(users[0]!.organization.name, 'default');
    assert.equal((await server.api().client.users.search('never.there')()).length, 0, 'nothing of the refused file arrived');
    const auth = await server.api().client.authenticate({ type: 'username', application: app.id, credential: { username: 'legacy.one@example.com', password: 'legacy-password' } });
    assert.equal(auth.authenticated, true, 'the bcrypt hash verifies (and is replaced by argon2id)');
  });

  test('import refuses a running server\'s directory', async () => {
    const file = join(dirs.root, 'empty.jsonl');
    writeFileSync(file, '');
    const res = await authctl(['import', '--data-dir', dirs.dataDir, file]);
    assert.equal(res.code, 1);
    assert.match(res.stderr, /is in use: another process holds the lock on /);
    const env = adminEnv(server);
    assert.equal((await authctl(['applications', 'list'], { env })).code, 0, 'the server was not disturbed');
  });
});
