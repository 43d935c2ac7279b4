// The package's commands: each bin names a built file with a shebang; --version prints the package's version wherever it is run from, and authd --help every setting.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { settings } from '../src/config/config.js';
import { authctl } from './helpers/authctl.js';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const pkg = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { version: string; bin: Record<string, string> };

test('the package declares the authd and authctl commands, each a built file', () => {
  assert.deepEqual(Object.keys(pkg.bin).sort(), ['authctl', 'authd']);
  for (const [name, file] of Object.entries(pkg.bin)) {
    assert.ok(existsSync(join(repoRoot, file)), `${name}: ${file} is built`);
  }
  // npm links a bin and the system runs it: only a shebang says with what.
  for (const file of Object.values(pkg.bin)) assert.match(readFileSync(join(repoRoot, file), 'utf8'), /^#!\/usr\/bin\/env node\n/, file);
});

test('authctl --version prints "authctl <version>" from package.json and exits 0', async () => {
  const res = await authctl(['--version']);
  assert.equal(res.code, 0, res.stderr);
  assert.equal(res.stdout, `authctl ${pkg.version}\n`);
  assert.equal(res.stderr, '');
});

test('authctl --version through a link elsewhere, as npm installs the command, still finds the package', () => {
  const dir = mkdtempSync(join(tmpdir(), 'authd-bin-test-'));
  try {
    const link = join(dir, 'authctl');
    symlinkSync(join(repoRoot, pkg.bin['authctl']!), link);
    const res = spawnSync(process.execPath, [link, '--version'], { cwd: dir, encoding: 'utf8', timeout: 30_000 });
    assert.equal(res.status, 0, res.stderr);
    assert.equal(res.stdout, `authctl ${pkg.version}\n`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('authd --version prints "authd <version>", and --help every setting with its default; neither touches a data directory', () => {
  const dir = mkdtempSync(join(tmpdir(), 'authd-bin-test-'));
  try {
    const run = (arg: string): ReturnType<typeof spawnSync> =>
      spawnSync(process.execPath, [join(repoRoot, pkg.bin['authd']!), arg], { cwd: dir, encoding: 'utf8', timeout: 30_000, env: { PATH: process.env['PATH'] } });
    const version = run('--version');
    assert.equal(version.status, 0, String(version.stderr));
    assert.equal(version.stdout, `authd ${pkg.version}\n`);
    const help = run('--help');
    assert.equal(help.status, 0, String(help.stderr));
    for (const [name, setting] of Object.entries(settings)) {
      const line = String(help.stdout).split('\n').find((l) => l.trimStart().startsWith(`${name} `));
      assert.ok(line !== undefined, `--help lists ${name}`);
      assert.ok(line.includes(`(default: ${setting.default})`), `--help gives ${name}'s default: ${line}`);
    }
    assert.deepEqual(readdirSync(dir), [], 'no data directory or key file is created');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
