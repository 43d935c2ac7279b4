// Which front end starts, and why: uWS where a build loads, node:http otherwise or when asked; forcing uWS where none loads is a start-up error that touches no data.

import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { loadUws } from '../src/http/uws-loader.js';
import { startServer, type ServerProcess } from './helpers/server.js';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const uwsPackages = new Set(['uWebSockets.js', '@btc-vision']);
const scratch = mkdtempSync(join(tmpdir(), 'authd-front-end-'));
const servers: ServerProcess[] = [];

after(async () => {
  for (const server of servers) await server.dispose();
  rmSync(scratch, { recursive: true, force: true });
});

let installedMain: string | undefined;

/** An install of the built service without any uWS build, as `npm ci --omit=optional` leaves it; made once. */
function installWithoutUws(): string {
  if (installedMain !== undefined) return installedMain;
  const root = join(scratch, 'install');
  cpSync(join(repoRoot, 'dist', 'src'), join(root, 'dist', 'src'), { recursive: true });
  cpSync(join(repoRoot, 'package.json'), join(root, 'package.json'));
  mkdirSync(join(root, 'node_modules'));
  for (const name of readdirSync(join(repoRoot, 'node_modules'))) {
    if (!uwsPackages.has(name) && !name.startsWith('.')) symlinkSync(join(repoRoot, 'node_modules', name), join(root, 'node_modules', name));
  }
  installedMain = join(root, 'dist', 'src', 'main.js');
  return installedMain;
}

function startOnce(main: string, frontEnd: string): { status: number | null; stdout: string; stderr: string; dir: string } {
  const dir = mkdtempSync(join(scratch, 'run-'));
  const run = spawnSync(process.execPath, [main], {
    env: { PATH: process.env['PATH'], FRONT_END: frontEnd, PORT: '0', HOST: '127.0.0.1', DATA_DIR: join(dir, 'data'), KEY_FILE: join(dir, 'key'), LOG_LEVEL: 'info' },
    encoding: 'utf8', timeout: 15_000,
  });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr, dir };
}

test('FRONT_END=uws where no build loads: exit 2 naming why, and no data directory or key is created', () => {
  const run = startOnce(installWithoutUws(), 'uws');
  assert.equal(run.status, 2, run.stderr);
  assert.match(run.stderr, /cannot start: FRONT_END=uws, but no uWebSockets\.js build loads uws_\w+\.node .*not installed/);
  assert.equal(existsSync(join(run.dir, 'data')), false, 'no data directory may be bootstrapped');
  assert.equal(existsSync(join(run.dir, 'key')), false, 'no server key may be created');
});

test('an unknown FRONT_END is a configuration error', () => {
  const run = startOnce(fileURLToPath(new URL('../src/main.js', import.meta.url)), 'apache');
  assert.equal(run.status, 2);
  assert.match(run.stderr, /FRONT_END must be one of auto, uws, node, got "apache"/);
});

/** The start log's "front end" line. */
function frontEndLine(server: ServerProcess): Record<string, unknown> {
  const line = server.logLines().find((l) => l['msg'] === 'front end');
  assert.ok(line !== undefined, server.output());
  return line;
}

test('without a uWS build, auto starts node:http, serves, and says why', async () => {
  const main = installWithoutUws();
  const dir = mkdtempSync(join(scratch, 'serve-'));
  const child = spawn(process.execPath, [main], {
    env: { PATH: process.env['PATH'], FRONT_END: 'auto', PORT: '0', HOST: '127.0.0.1', DATA_DIR: join(dir, 'data'), KEY_FILE: join(dir, 'key'), LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  try {
    let out = '';
    const port = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no "listening" line:\n${out}`)), 15_000);
      child.stdout.setEncoding('utf8').on('data', (s: string) => {
        out += s;
        const m = /"port":(\d+).*"msg":"listening"/.exec(out);
        if (m !== null) { clearTimeout(timer); resolve(Number(m[1])); }
      });
      child.on('exit', (code) => reject(new Error(`exited ${code}:\n${out}`)));
    });
    const line = out.split('\n').map((l) => { try { return JSON.parse(l) as Record<string, unknown>; } catch { return {}; } }).find((l) => l['msg'] === 'front end');
    assert.equal(line?.['frontEnd'], 'node');
    assert.match(String(line?.['reason']), /no uWebSockets\.js build loads .*not installed/);
    const res = await fetch(`http://127.0.0.1:${port}/health`);
    assert.equal(res.status, 200);
  } finally {
    child.kill('SIGKILL');
  }
});

test('the running server names its front end: the one FRONT_END asks for, else uWS exactly where a build loads', async () => {
  const server = await startServer();
  servers.push(server);
  const line = frontEndLine(server);
  const asked = process.env['FRONT_END'] ?? 'auto';
  const expected = asked === 'auto' ? (loadUws({ untraceable: false }).loaded ? 'uws' : 'node') : asked;
  assert.equal(line['frontEnd'], expected);
  assert.equal(line['node'], process.versions.node);
  if (expected === 'uws') assert.match(String(line['build']), /^(@btc-vision\/uwebsockets\.js|uWebSockets\.js) \d+\.\d+/);
  assert.equal((await server.api(null).get('/health')).status, 200);
});
