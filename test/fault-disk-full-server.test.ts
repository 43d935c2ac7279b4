// Disk full and fsync errors on the real server: on a tiny filesystem (where the machine allows mounting one) and through the test-only fault switches, a failed write is answered 503 while reads and authentication go on, writes resume when space returns, a failed fsync makes the process exit, and a restart keeps everything acknowledged.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { newServerDirs, startServer, type ServerDirs, type ServerProcess } from './helpers/server.js';
import { adminEmail, adminPassword, basicAuth } from './helpers/server.js';

async function call(server: ServerProcess, method: string, path: string, body?: unknown, auth = basicAuth(adminEmail, adminPassword)): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(server.baseUrl + path, {
    method, headers: { authorization: auth, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

const resultOf = (r: { json: Record<string, unknown> }): Record<string, unknown> => (r.json['service'] as { result: Record<string, unknown> }).result;
const codeOf = (r: { json: Record<string, unknown> }): string | undefined => (r.json['service'] as { error?: { code: string } }).error?.code;

/** Creates applications until `full()` says the disk is full, then checks the service around it. */
async function diskFullScenario(server: ServerProcess, fill: () => void, free: () => void, t: { diagnostic: (s: string) => void }): Promise<{ acknowledged: string[]; refused: string[] }> {
  const acknowledged: string[] = [];
  const refused: string[] = [];
  const app = resultOf(await call(server, 'POST', '/applications/application', { name: 'disk app' }))['application'] as { id: string };
  acknowledged.push('disk app');
  resultOf(await call(server, 'POST', '/users/user', { email: 'disk-user@example.com', password: 'disk-user-pass', applications: [app.id] }));
  const authenticate = async (password: string): Promise<boolean> => (resultOf(await call(server, 'POST', '/authenticate', { type: 'username', application: app.id, credential: { username: 'disk-user@example.com', password } }))['authenticated'] as boolean);
  assert.equal(await authenticate('disk-user-pass'), true);

  fill();
  for (let i = 0; i < 5; i++) {
    const name = `refused ${i}`;
    // Larger than a page, so it cannot slip into the free end of the log's last page.
    const res = await call(server, 'POST', '/applications/application', { name, custom_data: { blob: 'x'.repeat(20_000) } });
    assert.equal(res.status, 503, `a write on a full disk is refused: ${JSON.stringify(res.json)}`);
    assert.equal(codeOf(res), 'storage_unavailable');
    refused.push(name);
  }
  assert.ok(server.running, 'a failed write does not stop the service');
  const listed = (resultOf(await call(server, 'GET', '/applications'))['applications'] as { name: string }[]).map((a) => a.name);
  assert.ok(listed.includes('disk app') && !listed.some((n) => n.startsWith('refused')), 'reads work, and show nothing of the refused writes');
  assert.equal(await authenticate('disk-user-pass'), true, 'authentication works (cached)');
  assert.equal(await authenticate('wrong-pass'), false, 'authentication works (hashed)');

  free();
  for (let i = 0; i < 3; i++) {
    const name = `after space ${i}`;
    assert.equal((await call(server, 'POST', '/applications/application', { name })).status, 200, 'writes resume when space returns');
    acknowledged.push(name);
  }
  t.diagnostic(`${refused.length} writes refused with 503 while full, ${acknowledged.length} acknowledged, reads and authentication unaffected`);
  return { acknowledged, refused };
}

async function afterRestart(server: ServerProcess, expected: { acknowledged: string[]; refused: string[] }): Promise<void> {
  const names = (resultOf(await call(server, 'GET', '/applications'))['applications'] as { name: string }[]).map((a) => a.name);
  for (const name of expected.acknowledged) assert.ok(names.includes(name), `acknowledged ${name} survives the restart`);
  for (const name of expected.refused) assert.ok(!names.includes(name), `refused ${name} never appears`);
}

test('disk full through the test fault switch: 503 while full, reads and authentication go on, writes resume, a restart keeps what was acknowledged', async (t) => {
  const dirs = newServerDirs();
  const flag = join(dirs.root, 'disk-is-full');
  const server = await startServer({ dirs, env: { AUTHD_TEST_FAIL_WRITES_WHILE: flag } });
  try {
    const outcome = await diskFullScenario(server, () => writeFileSync(flag, ''), () => rmSync(flag), t);
    await server.kill();
    const again = await server.restart();
    await afterRestart(again, outcome);
    await again.dispose({ keepDirs: true });
  } finally {
    await server.dispose();
  }
});

function canMount(): boolean {
  if (process.platform !== 'linux' || process.getuid?.() !== 0) return false;
  const probe = mkdtempSync(join(tmpdir(), 'authd-mount-probe-'));
  try {
    const ok = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', probe]).status === 0;
    if (ok) spawnSync('umount', [probe]);
    return ok;
  } finally {
    rmSync(probe, { recursive: true, force: true });
  }
}

test('disk full on a real 1 MiB filesystem (tmpfs; skipped where mounting is not allowed)', { skip: canMount() ? false : 'cannot mount a tmpfs here (needs root on Linux)' }, async (t) => {
  const dirs: ServerDirs = newServerDirs();
  const mountPoint = join(dirs.root, 'small-fs');
  mkdirSync(mountPoint);
  assert.equal(spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', mountPoint]).status, 0);
  const small: ServerDirs = { ...dirs, dataDir: join(mountPoint, 'data') };
  const filler = join(mountPoint, 'filler');
  let server: ServerProcess | undefined;
  try {
    server = await startServer({ dirs: small });
    const fill = (): void => {
      // Every free byte: the next log write meets ENOSPC.
      const fd = openSync(filler, 'w');
      const block = Buffer.alloc(4096, 1);
      try {
        for (;;) writeSync(fd, block);
      } catch (err) {
        assert.equal((err as NodeJS.ErrnoException).code, 'ENOSPC');
      } finally {
        closeSync(fd);
      }
    };
    const outcome = await diskFullScenario(server, fill, () => rmSync(filler), t);
    await server.kill();
    server = await server.restart();
    await afterRestart(server, outcome);
  } finally {
    await server?.kill();
    spawnSync('umount', ['-l', mountPoint]);
    rmSync(dirs.root, { recursive: true, force: true });
  }
});

test('a failed fsync is not retried: the server refuses the write and exits, and a restart recovers everything acknowledged from the log', async () => {
  const dirs = newServerDirs();
  const flag = join(dirs.root, 'fsync-fails');
  const server = await startServer({ dirs, env: { AUTHD_TEST_FAIL_FSYNC_WHILE: flag } });
  try {
    for (let i = 0; i < 3; i++) assert.equal((await call(server, 'POST', '/applications/application', { name: `durable ${i}` })).status, 200);
    writeFileSync(flag, '');
    const res = await call(server, 'POST', '/applications/application', { name: 'fsync failed' }).catch(() => ({ status: 0, json: {} }));
    assert.ok(res.status === 503 || res.status === 0, `refused, or cut off by the exit: ${res.status}`);
    for (let i = 0; i < 100 && server.running; i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(server.running, false, 'the process stopped acknowledging and exited');
    assert.match(server.output(), /the write-ahead log failed; exiting/);
    rmSync(flag);
    const again = await server.restart();
    const names = (resultOf(await call(again, 'GET', '/applications'))['applications'] as { name: string }[]).map((a) => a.name);
    for (let i = 0; i < 3; i++) assert.ok(names.includes(`durable ${i}`));
    assert.equal((await call(again, 'POST', '/applications/application', { name: 'after restart' })).status, 200);
    await again.dispose({ keepDirs: true });
  } finally {
    await server.dispose();
    if (existsSync(dirs.root)) rmSync(dirs.root, { recursive: true, force: true });
  }
});
