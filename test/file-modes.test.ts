// Files at rest (issue 23): data directory and key directory 0700, every file 0600, a key file open to others refused, in the server and the offline commands.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, test } from 'node:test';
import { authctl } from './helpers/authctl.js';
import { frameMap, flipped } from './helpers/fault-logs.js';
import { createApikey, createUser, baseApplicationId } from './helpers/http-fixtures.js';
import { newServerDirs, startServer, type ServerDirs } from './helpers/server.js';

const mainJs = fileURLToPath(new URL('../src/main.js', import.meta.url));
const roots: string[] = [];
after(async () => {
  const { rmSync } = await import('node:fs');
  for (const root of roots) rmSync(root, { recursive: true, force: true });
});

function dirsForTest(): ServerDirs {
  const d = newServerDirs();
  roots.push(d.root);
  return d;
}

/** Every directory and file under dir (dir included), with its permission bits as octal text. */
function modesUnder(dir: string): Map<string, string> {
  const modes = new Map<string, string>();
  const walk = (path: string): void => {
    const st = statSync(path);
    modes.set(path, (st.mode & 0o777).toString(8));
    if (st.isDirectory()) for (const name of readdirSync(path)) walk(join(path, name));
  };
  walk(dir);
  return modes;
}

function assertPrivate(dir: string): void {
  const modes = modesUnder(dir);
  for (const [path, mode] of modes) {
    const expected = statSync(path).isDirectory() ? '700' : '600';
    assert.equal(mode, expected, `${path} has mode ${mode}`);
  }
}

/** Runs authd to completion (a refused start, or --repair) on dirs. */
function runMain(dirs: ServerDirs, args: string[] = [], env: Record<string, string> = {}): { status: number | null; stderr: string; stdout: string } {
  const run = spawnSync(process.execPath, [mainJs, ...args], {
    env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', PORT: '0', HOST: '127.0.0.1', DATA_DIR: dirs.dataDir, KEY_FILE: dirs.keyFile, LOG_LEVEL: 'warn', ...env },
    encoding: 'utf8', cwd: dirs.root, timeout: 30_000,
  });
  return { status: run.status, stderr: run.stderr, stdout: run.stdout };
}

test('a server writes its data directory 0700, log segments, snapshots and lock 0600, and its key file 0600 in a 0700 directory', async () => {
  const server = await startServer({ dirs: dirsForTest() });
  try {
    const api = server.api();
    const user = await createUser(api, [await baseApplicationId(api)]);
    await createApikey(api, user.id);
    assert.equal((await api.post('/admin/snapshot', {})).status, 200);
    // While it runs: the lock is there too.
    assert.ok(existsSync(join(server.dirs.dataDir, 'LOCK')));
    assertPrivate(server.dirs.dataDir);
    assert.equal(await server.stop(), 0);
    assert.ok(readdirSync(server.dirs.dataDir).some((n) => n.startsWith('snapshot-')));
    assertPrivate(server.dirs.dataDir);
    assertPrivate(join(server.dirs.root, 'secrets'));
  } finally {
    await server.dispose();
  }
});

test('an existing data directory open to others is tightened to 0700 at start, with a warning', async () => {
  const dirs = dirsForTest();
  mkdirSync(dirs.dataDir);
  chmodSync(dirs.dataDir, 0o755);
  const server = await startServer({ dirs });
  try {
    assert.equal((statSync(dirs.dataDir).mode & 0o777).toString(8), '700');
    const warning = server.logLines().find((l) => l['msg'] === 'data directory was open to other users; its mode is now 0700');
    assert.equal(warning?.['mode'], '0755');
  } finally {
    await server.dispose();
  }
});

test('a key file other users may read is refused (exit 2) with the fix, and nothing is created', () => {
  const dirs = dirsForTest();
  mkdirSync(join(dirs.root, 'secrets'), { mode: 0o700 });
  writeFileSync(dirs.keyFile, Buffer.alloc(32, 7), { mode: 0o644 });
  chmodSync(dirs.keyFile, 0o644);
  const run = runMain(dirs);
  assert.equal(run.status, 2, run.stderr);
  assert.match(run.stderr, new RegExp(`KEY_FILE ${dirs.keyFile} is readable or writable by other users \\(mode 0644\\); run: chmod 600 ${dirs.keyFile}`));
  assert.equal(existsSync(dirs.dataDir), false, 'the refused start created no data directory');
  chmodSync(dirs.keyFile, 0o620);
  assert.equal(runMain(dirs).status, 2, 'group write is refused too');
});

test('authctl import into a new directory, export --out and authd --repair write private modes too', async () => {
  const server = await startServer({ dirs: dirsForTest() });
  const exportFile = join(server.dirs.root, 'export.jsonl');
  const imported = join(server.dirs.root, 'imported', 'data');
  try {
    const api = server.api();
    for (let i = 0; i < 6; i++) await createUser(api, [await baseApplicationId(api)]);
    const exported = await authctl(['export', '--data-dir', server.dirs.dataDir, '--out', exportFile]);
    assert.equal(exported.code, 0, exported.stderr);
    assert.equal((statSync(exportFile).mode & 0o777).toString(8), '600');
    await server.kill();

    const res = await authctl(['import', '--data-dir', imported, exportFile]);
    assert.equal(res.code, 0, res.stderr);
    assertPrivate(join(server.dirs.root, 'imported'));

    // Damage the last segment, so that --repair backs it up and cuts it.
    const segmentName = readdirSync(server.dirs.dataDir).filter((f) => f.startsWith('wal-')).sort().at(-1)!;
    const path = join(server.dirs.dataDir, segmentName);
    const original = readFileSync(path);
    writeFileSync(path, flipped(original, frameMap(original).at(-2)!.start + 20));
    const repaired = runMain(server.dirs, ['--repair']);
    assert.equal(repaired.status, 0, repaired.stderr);
    assert.ok(readdirSync(server.dirs.dataDir).some((f) => f.includes('.damaged-')), 'a backup was written');
    assertPrivate(server.dirs.dataDir);
  } finally {
    await server.dispose();
  }
});
