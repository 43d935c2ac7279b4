// The server key's fingerprint (issue 23): a missing or different key beside existing data refuses the start, an older directory records its key, and authctl rotate-key replaces the key on purpose.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { authctl } from './helpers/authctl.js';
import { baseApplicationId, createApikey, createUser } from './helpers/http-fixtures.js';
import { newServerDirs, startServer, type ServerDirs, type ServerProcess } from './helpers/server.js';

const mainJs = fileURLToPath(new URL('../src/main.js', import.meta.url));

/** Runs authd to completion (a refused start) on dirs. */
function runMain(dirs: ServerDirs, env: Record<string, string> = {}): { status: number | null; stderr: string } {
  const run = spawnSync(process.execPath, [mainJs], {
    env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', PORT: '0', HOST: '127.0.0.1', DATA_DIR: dirs.dataDir, KEY_FILE: dirs.keyFile, LOG_LEVEL: 'warn', ...env },
    encoding: 'utf8', cwd: dirs.root, timeout: 30_000,
  });
  return { status: run.status, stderr: run.stderr };
}

/** Every name in dir with its size and modification time: what a refused start must leave as it was. */
function snapshotOf(dir: string): string[] {
  return readdirSync(dir).sort().map((n) => { const st = statSync(join(dir, n)); return `${n} ${st.size} ${st.mtimeMs}`; });
}

const escape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

describe('server key fingerprint', () => {
  let dirs: ServerDirs;
  let application: string;
  let userId: string;
  let key: { id: string; secret: string };
  let fingerprint: string;
  const fingerprintFile = (): string => join(dirs.dataDir, 'KEY-FINGERPRINT');

  before(async () => {
    dirs = newServerDirs();
    const server = await startServer({ dirs });
    try {
      const api = server.api();
      application = await baseApplicationId(api);
      userId = (await createUser(api, [application])).id;
      key = await createApikey(api, userId);
    } finally {
      assert.equal(await server.stop(), 0);
    }
  });

  after(() => rmSync(dirs.root, { recursive: true, force: true }));

  async function authenticates(server: ServerProcess, secret: string): Promise<boolean> {
    const answer = await server.api().client.authenticate({ type: 'apikey', application, credential: { username: key.id, password: secret } });
    return answer.authenticated;
  }

  test('the first start records a fingerprint of the key (not the key) in the data directory, mode 0600', () => {
    const text = readFileSync(fingerprintFile(), 'latin1');
    const m = /^authd-key-fingerprint-v1 ([0-9a-f]{32})\n$/.exec(text);
    assert.ok(m, text);
    fingerprint = m[1]!;
    assert.ok(!readFileSync(dirs.keyFile).toString('hex').includes(fingerprint));
    assert.equal((statSync(fingerprintFile()).mode & 0o777).toString(8), '600');
  });

  test('a missing key file beside the data is refused (exit 2), naming the fingerprint and the fix, and nothing is created', () => {
    const aside = `${dirs.keyFile}.aside`;
    renameSync(dirs.keyFile, aside);
    try {
      const before = snapshotOf(dirs.dataDir);
      const run = runMain(dirs);
      assert.equal(run.status, 2, run.stderr);
      assert.match(run.stderr, new RegExp(escape(`KEY_FILE ${dirs.keyFile} is missing; the data in ${dirs.dataDir} was written with a key of fingerprint ${fingerprint}; restore the key file, or rotate with \`authctl rotate-key --data-dir ${dirs.dataDir} --key-file ${dirs.keyFile}\``)));
      assert.equal(existsSync(dirs.keyFile), false, 'no new key was generated');
      assert.deepEqual(snapshotOf(dirs.dataDir), before);
    } finally {
      renameSync(aside, dirs.keyFile);
    }
  });

  test('a different key file, or a different SERVER_KEY, is refused (exit 2) and changes nothing', () => {
    const original = readFileSync(dirs.keyFile);
    const before = snapshotOf(dirs.dataDir);
    writeFileSync(dirs.keyFile, Buffer.alloc(32, 9));
    try {
      const run = runMain(dirs);
      assert.equal(run.status, 2, run.stderr);
      assert.match(run.stderr, new RegExp(escape(`the server key (KEY_FILE ${dirs.keyFile}) has fingerprint `) + `[0-9a-f]{32}` + escape(`, but the data in ${dirs.dataDir} was written with a key of fingerprint ${fingerprint}; restore that key, or rotate with \`authctl rotate-key`)));
    } finally {
      writeFileSync(dirs.keyFile, original);
    }
    const byValue = runMain(dirs, { SERVER_KEY: Buffer.alloc(32, 9).toString('hex') });
    assert.equal(byValue.status, 2, byValue.stderr);
    assert.match(byValue.stderr, /the server key \(SERVER_KEY\) has fingerprint [0-9a-f]{32}, but the data/);
    assert.deepEqual(snapshotOf(dirs.dataDir), before);
  });

  test('the same key given as SERVER_KEY is accepted', async () => {
    const server = await startServer({ dirs: { ...dirs, keyFile: join(dirs.root, 'no-such.key') }, env: { SERVER_KEY: readFileSync(dirs.keyFile).toString('hex') } });
    try {
      assert.equal(await authenticates(server, key.secret), true);
    } finally {
      await server.dispose({ keepDirs: true });
    }
    assert.equal(existsSync(join(dirs.root, 'no-such.key')), false);
  });

  test('a data directory an older version wrote (no fingerprint) records the current key\'s, with a warning, and keeps working', async () => {
    rmSync(fingerprintFile());
    const server = await startServer({ dirs });
    try {
      assert.ok(server.logLines().some((l) => String(l['msg']).startsWith('the data directory had no server key fingerprint') && l['fingerprint'] === fingerprint));
      assert.equal(readFileSync(fingerprintFile(), 'latin1'), `authd-key-fingerprint-v1 ${fingerprint}\n`);
      assert.equal(await authenticates(server, key.secret), true);
    } finally {
      await server.dispose({ keepDirs: true });
    }
  });

  test('an older directory without its key file is refused too: no key is generated beside data', () => {
    rmSync(fingerprintFile());
    const aside = `${dirs.keyFile}.aside`;
    renameSync(dirs.keyFile, aside);
    try {
      const run = runMain(dirs);
      assert.equal(run.status, 2, run.stderr);
      assert.match(run.stderr, new RegExp(escape(`KEY_FILE ${dirs.keyFile} is missing, and ${dirs.dataDir} holds data`)));
      assert.equal(existsSync(dirs.keyFile), false);
      assert.equal(existsSync(fingerprintFile()), false);
    } finally {
      renameSync(aside, dirs.keyFile);
    }
  });

  test('authctl rotate-key is refused while the server runs', async () => {
    const server = await startServer({ dirs });
    try {
      const res = await authctl(['rotate-key', '--data-dir', dirs.dataDir, '--key-file', dirs.keyFile]);
      assert.equal(res.code, 1, res.stdout + res.stderr);
      assert.match(res.stderr, /Stop the server first/);
      assert.equal(readFileSync(fingerprintFile(), 'latin1'), `authd-key-fingerprint-v1 ${fingerprint}\n`);
    } finally {
      assert.equal(await server.stop(), 0);
    }
  });

  test('authctl rotate-key writes a new key and fingerprint; the server starts; the old API Key secret fails, a PUT gives the new one', async () => {
    const oldKey = readFileSync(dirs.keyFile);
    const res = await authctl(['rotate-key', '--data-dir', dirs.dataDir, '--key-file', dirs.keyFile]);
    assert.equal(res.code, 0, res.stdout + res.stderr);
    assert.match(res.stdout, /every API Key secret has changed/);
    const newKey = readFileSync(dirs.keyFile);
    assert.equal(newKey.length, 32);
    assert.notDeepEqual(newKey, oldKey);
    assert.equal((statSync(dirs.keyFile).mode & 0o777).toString(8), '600');
    const recorded = /^authd-key-fingerprint-v1 ([0-9a-f]{32})\n$/.exec(readFileSync(fingerprintFile(), 'latin1'))![1]!;
    assert.notEqual(recorded, fingerprint);
    assert.match(res.stdout, new RegExp(`fingerprint ${recorded}`));

    const server = await startServer({ dirs });
    try {
      assert.equal(await authenticates(server, key.secret), false, 'the old secret no longer authenticates');
      const updated = await server.api().client.apikeys.update(userId, key.id, {});
      assert.notEqual(updated.secret, key.secret);
      assert.equal(await authenticates(server, updated.secret!), true, 'the secret from the PUT does');
    } finally {
      await server.dispose({ keepDirs: true });
    }
  });
});

test('a first start on an empty data directory generates the key file and records its fingerprint', async () => {
  const dirs = newServerDirs();
  try {
    const server = await startServer({ dirs });
    await server.dispose({ keepDirs: true });
    assert.ok(existsSync(dirs.keyFile));
    assert.ok(existsSync(join(dirs.dataDir, 'KEY-FINGERPRINT')));
  } finally {
    rmSync(dirs.root, { recursive: true, force: true });
  }
});
