// The limiter's trusted pairs across a restart: saved as keyed hashes to a 0600 file, read back by a new limiter, whose lockouts then spare them.

import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { BruteForceLimiter, type LimiterSettings } from '../src/auth/limiter.js';
import { TrustedPairsFile, trustedPairsFileName } from '../src/auth/trusted-pairs-file.js';

const settings: LimiterSettings = {
  failureFactor: 30, addressFailureFactor: 100, waitIncrementMs: 60_000, maxWaitMs: 15 * 60_000,
  failureResetMs: 12 * 3600_000, tarpitStepMs: 250, tarpitMaxMs: 5_000,
};

const dirs: string[] = [];
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** Whether the owner gets in from home on a limiter whose account is locked by a spray from elsewhere. */
function ownerGetsIn(limiter: BruteForceLimiter): boolean {
  for (let i = 0; i < 30; i++) {
    const a = limiter.admit('u:owner@example.com', `198.51.100.${i}`);
    if (a.admitted) limiter.failed(a.ticket);
  }
  assert.equal(limiter.admit('u:owner@example.com', '198.51.100.200').admitted, false, 'the account is locked');
  return limiter.admit('u:owner@example.com', '203.0.113.10').admitted;
}

// Issue 23, part 3: the trusted (recently successful) pair was lost on restart.
test('a pair trusted before a restart is trusted after it; the file holds keyed fingerprints only, mode 0600', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'authd-trusted-'));
  dirs.push(dataDir);
  const key = randomBytes(32);
  const keyed = (limiter: BruteForceLimiter, k = key): BruteForceLimiter => {
    limiter.useTrustKey(k);
    return limiter;
  };
  const before = keyed(new BruteForceLimiter(settings));
  const home = before.admit('u:owner@example.com', '203.0.113.10');
  assert.ok(home.admitted);
  before.succeeded(home.ticket);
  const file = new TrustedPairsFile({ dataDir, limiter: before });
  file.start(3600_000);
  await file.close();

  const path = join(dataDir, trustedPairsFileName);
  assert.equal(statSync(path).mode & 0o777, 0o600);
  const bytes = readFileSync(path);
  for (const text of ['owner', 'example.com', '203.0.113.10']) assert.equal(bytes.includes(text), false, `${text} is not in the file`);

  assert.equal(ownerGetsIn(new BruteForceLimiter(settings)), false, 'a limiter that did not read the file: locked out');
  const restarted = keyed(new BruteForceLimiter(settings));
  assert.equal(new TrustedPairsFile({ dataDir, limiter: restarted }).load(), 1);
  assert.equal(ownerGetsIn(restarted), true, 'the pair trusted before the restart gets in');

  const otherKey = keyed(new BruteForceLimiter(settings), randomBytes(32));
  assert.equal(new TrustedPairsFile({ dataDir, limiter: otherKey }).load(), 1);
  assert.equal(ownerGetsIn(otherKey), false, 'under another key the file names no pair');

  truncateSync(path, bytes.length - 3);
  const torn = keyed(new BruteForceLimiter(settings));
  assert.equal(new TrustedPairsFile({ dataDir, limiter: torn }).load(), 0, 'a torn file is ignored whole');
  assert.equal(new TrustedPairsFile({ dataDir: join(dataDir, 'missing'), limiter: torn }).load(), 0);
});

// Issue 42: the records now carry the pair's account and caller tags; a file of the layout before must not be misread.
test('issue 42: a file of the older layout (authdtp2) is ignored whole, with a log line that names no pair', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'authd-trusted-'));
  dirs.push(dataDir);
  const path = join(dataDir, trustedPairsFileName);
  // A header and one 16-byte record of the older layout: a fingerprint and a time far ahead.
  const record = Buffer.alloc(16);
  record.writeInt32LE(12345, 0);
  record.writeInt32LE(67890, 4);
  record.writeDoubleLE(Date.now() + 3600_000, 8);
  writeFileSync(path, Buffer.concat([Buffer.from('authdtp2', 'latin1'), record]), { mode: 0o600 });
  const lines: Array<{ obj: object; msg: string }> = [];
  const limiter = new BruteForceLimiter(settings);
  limiter.useTrustKey(randomBytes(32));
  assert.equal(new TrustedPairsFile({ dataDir, limiter, logger: { warn: (obj, msg) => lines.push({ obj, msg }) } }).load(), 0);
  assert.equal(lines.length, 1);
  assert.match(lines[0]!.msg, /trusted pairs file ignored/);
  assert.match(JSON.stringify(lines[0]!.obj), /header is not authdtp3/);
  assert.equal(limiter.exportTrusted().length, 0, 'nothing was taken from it');
});
