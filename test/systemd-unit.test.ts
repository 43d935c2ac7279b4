// docs/authd.service: keeps the hardening an operator expects, and `systemd-analyze verify` accepts it where that tool exists.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { accessSync, constants, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const unitText = readFileSync(join(repoRoot, 'docs', 'authd.service'), 'utf8');
const mainJs = join(repoRoot, 'dist', 'src', 'main.js');
/** The in-flight grace (10 s) plus the final snapshot, which takes seconds for a million Users. */
const stopTimeoutSMin = 30;
const analyzeTimeoutMs = 30_000;

/** Key -> every value it is given in [Service], in order (comments and other sections left out). */
function serviceSettings(text: string): Map<string, string[]> {
  const settings = new Map<string, string[]>();
  let section = '';
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    if (line.startsWith('[')) { section = line; continue; }
    if (section !== '[Service]') continue;
    const eq = line.indexOf('=');
    const key = line.slice(0, eq);
    settings.set(key, [...(settings.get(key) ?? []), line.slice(eq + 1)]);
  }
  return settings;
}

function seconds(value: string): number {
  const m = /^(\d+)\s*(s|sec|min|m)?$/.exec(value);
  assert.ok(m !== null, `a duration: ${value}`);
  return Number(m[1]) * (m[2] === 'min' || m[2] === 'm' ? 60 : 1);
}

test('the unit runs authd as its own user, confined, with a stop timeout that covers the graceful shutdown', () => {
  const s = serviceSettings(unitText);
  const one = (key: string): string | undefined => s.get(key)?.at(-1);
  assert.ok(one('User') === 'authd' || one('DynamicUser') === 'yes', 'a dedicated user');
  for (const [key, value] of [
    ['NoNewPrivileges', 'yes'], ['ProtectSystem', 'strict'], ['ProtectHome', 'yes'], ['PrivateTmp', 'yes'],
    ['PrivateDevices', 'yes'], ['ProtectKernelTunables', 'yes'], ['ProtectKernelModules', 'yes'], ['ProtectKernelLogs', 'yes'],
    ['ProtectControlGroups', 'yes'], ['RestrictAddressFamilies', 'AF_INET AF_INET6 AF_UNIX'], ['CapabilityBoundingSet', ''],
    ['Restart', 'on-failure'],
  ] as const) {
    assert.equal(one(key), value, `${key}=${value}`);
  }
  assert.ok(s.get('SystemCallFilter')?.includes('@system-service'), 'SystemCallFilter=@system-service');
  // V8's JIT needs memory it writes and then executes.
  assert.equal(s.get('MemoryDenyWriteExecute'), undefined, 'MemoryDenyWriteExecute= would stop Node');
  assert.ok(seconds(one('TimeoutStopSec') ?? '0') >= stopTimeoutSMin, `TimeoutStopSec >= ${stopTimeoutSMin} s`);
  assert.ok(Number(one('LimitNOFILE')) >= 4096, 'LimitNOFILE');
  assert.match(one('ExecStart') ?? '', /\/authd$/);

  const env = new Map((s.get('Environment') ?? []).map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]));
  for (const name of ['DATA_DIR', 'KEY_FILE', 'HOST', 'PORT']) assert.ok(env.has(name), `Environment=${name}=`);
  const writable = (s.get('ReadWritePaths') ?? []).flatMap((v) => v.split(/\s+/));
  const dataDir = env.get('DATA_DIR')!;
  const keyDir = dirname(env.get('KEY_FILE')!);
  assert.ok(writable.includes(dataDir), 'ReadWritePaths= holds DATA_DIR');
  assert.ok(writable.includes(keyDir), 'ReadWritePaths= holds the key file\'s directory');
  assert.ok(keyDir !== dataDir && !keyDir.startsWith(`${dataDir}/`), 'the key lives outside the data directory');
});

/** systemd-analyze, when it is installed and able to verify a unit without the system's own units; else why not. */
function findAnalyzer(dir: string): { path: string } | { skip: string } {
  const path = [...(process.env['PATH'] ?? '').split(delimiter), '/usr/bin', '/bin']
    .map((d) => join(d, 'systemd-analyze'))
    .find((p) => { try { accessSync(p, constants.X_OK); return true; } catch { return false; } });
  if (path === undefined) return { skip: 'systemd-analyze is not installed' };
  const help = spawnSync(path, ['verify', '--help'], { encoding: 'utf8', timeout: analyzeTimeoutMs });
  if (!`${help.stdout}`.includes('--recursive-errors')) {
    return { skip: 'this systemd-analyze (before systemd 250) cannot verify a unit without checking every unit it depends on' };
  }
  // A minimal unit first: if even that fails, the trouble is this machine, not our unit.
  const control = join(dir, 'authd-control.service');
  writeFileSync(control, `[Service]\nExecStart=${quoted(process.execPath)} -e 0\n`);
  const res = verify(path, control);
  if (res.status !== 0) return { skip: `systemd-analyze verify fails on a minimal unit here: ${res.output.trim()}` };
  return { path };
}

function quoted(path: string): string {
  return `"${path.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

function verify(analyzer: string, unitPath: string): { status: number | null; output: string } {
  // Only the given unit: its dependencies (sysinit.target and so on) need not exist where the test runs.
  const res = spawnSync(analyzer, ['verify', '--recursive-errors=no', '--man=no', unitPath], {
    encoding: 'utf8', timeout: analyzeTimeoutMs, env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', SYSTEMD_LOG_COLOR: '0' },
  });
  return { status: res.status, output: `${res.stdout ?? ''}${res.stderr ?? ''}${res.error === undefined ? '' : String(res.error)}` };
}

test('systemd-analyze verify accepts the unit', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'authd-systemd-test-'));
  try {
    const analyzer = findAnalyzer(dir);
    if ('skip' in analyzer) {
      t.skip(analyzer.skip);
      return;
    }
    // verify checks that ExecStart's program exists: run this Node on this checkout's build instead of the installed command.
    const unitPath = join(dir, 'authd.service');
    const copy = unitText.replace(/^ExecStart=.*$/m, `ExecStart=${quoted(process.execPath)} ${quoted(mainJs)}`);
    assert.notEqual(copy, unitText);
    writeFileSync(unitPath, copy);
    const res = verify(analyzer.path, unitPath);
    if (res.output.trim() !== '') t.diagnostic(res.output.trim());
    assert.equal(res.status, 0, res.output);
    // Warnings (an unknown key, a value it cannot parse) leave the status 0 and name the unit's file.
    assert.deepEqual(res.output.split('\n').filter((l) => l.includes('authd.service')), []);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
