// The package's commands: each bin names a built file, and `authctl --version` prints the package's version wherever it is run from.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { authctl } from './helpers/authctl.js';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const pkg = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { version: string; bin: Record<string, string> };

test('the package declares the authd and authctl commands, each a built file', () => {
  assert.deepEqual(Object.keys(pkg.bin).sort(), ['authctl', 'authd']);
  for (const [name, file] of Object.entries(pkg.bin)) {
    assert.ok(existsSync(join(repoRoot, file)), `${name}: ${file} is built`);
  }
  // npm links a bin and the system runs it: only a shebang says with what.
  assert.match(readFileSync(join(repoRoot, pkg.bin['authctl']!), 'utf8'), /^#!\/usr\/bin\/env node\n/);
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
