// Pins API Key secrets: derivation format, verification, and the server key's file and value handling.

import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { inspect } from 'node:util';
import { ApiKeySecrets, writeNewKeyFile } from '../src/auth/apikey-secrets.js';

const root = mkdtempSync(join(tmpdir(), 'authd-apikey-'));
after(() => rmSync(root, { recursive: true, force: true }));
let dirs = 0;
function freshKeyFile(): string {
  return join(root, `case-${dirs++}`, 'nested', 'apikey.key');
}

const keyId = '6Zs8RDD3dgnKNKEdAuMt9hpJU';
const key = Buffer.alloc(32, 7);

describe('ApiKeySecrets derivation', () => {
  const secrets = ApiKeySecrets.load({ keyFile: freshKeyFile(), keyValue: key.toString('hex') });

  test('the format is pinned: base64url(HMAC-SHA256(key, "authd-apikey-v1\\0" + id + "\\0" + nonce))', () => {
    const nonce = 'AAAAAAAAAAAAAAAAAAAAAA';
    const expected = createHmac('sha256', key).update(`authd-apikey-v1\0${keyId}\0${nonce}`).digest('base64url');
    assert.equal(secrets.secretFor(keyId, nonce), expected);
  });

  test('a secret is 43 base64url chars, stable, and different per key id and per nonce', () => {
    const nonce = secrets.newNonce();
    const secret = secrets.secretFor(keyId, nonce);
    assert.match(secret, /^[A-Za-z0-9_-]{43}$/);
    assert.equal(secrets.secretFor(keyId, nonce), secret);
    assert.notEqual(secrets.secretFor(`${keyId.slice(0, -1)}X`, nonce), secret);
    assert.notEqual(secrets.secretFor(keyId, secrets.newNonce()), secret);
  });

  test('the fingerprint is pinned: hex of the first 16 bytes of HMAC-SHA256(key, "authd-server-key-fingerprint-v1\\0"), different per key', () => {
    const expected = createHmac('sha256', key).update('authd-server-key-fingerprint-v1\0').digest().subarray(0, 16).toString('hex');
    assert.equal(secrets.fingerprint(), expected);
    assert.notEqual(ApiKeySecrets.fromKey(Buffer.alloc(32, 8), 'test').fingerprint(), expected);
  });

  test('nonces are 16 random bytes in base64url', () => {
    const a = secrets.newNonce();
    assert.match(a, /^[A-Za-z0-9_-]{22}$/);
    assert.equal(Buffer.from(a, 'base64url').length, 16);
    assert.notEqual(secrets.newNonce(), a);
  });

  test('verify: the right secret only; wrong length, alphabet or type is false, never a throw', () => {
    const nonce = secrets.newNonce();
    const secret = secrets.secretFor(keyId, nonce);
    assert.equal(secrets.verify(keyId, nonce, secret), true);
    const lastChar = secret.endsWith('A') ? 'B' : 'A';
    assert.equal(secrets.verify(keyId, nonce, secret.slice(0, -1) + lastChar), false);
    assert.equal(secrets.verify(keyId, secrets.newNonce(), secret), false, 'another nonce');
    assert.equal(secrets.verify('another-key-id', nonce, secret), false, 'another key id');
    for (const presented of ['', secret.slice(0, -1), `${secret}A`, `${secret}=`, 'x'.repeat(10_000)]) {
      assert.equal(secrets.verify(keyId, nonce, presented), false, `length ${presented.length}`);
    }
    // Same length in UTF-16 units; latin1 would map U+0141 onto 'A', which must not match.
    assert.equal(secrets.verify(keyId, nonce, secret.slice(0, -1) + String.fromCharCode(0x100 + secret.charCodeAt(42))), false);
    assert.equal(secrets.verify(keyId, nonce, `${secret.slice(0, -2)}é`), false);
    assert.equal(secrets.verify(keyId, nonce, undefined as unknown as string), false);
    assert.equal(secrets.verify(`${keyId}\0`, nonce, secret), false);
  });

  test('a regenerated key (new nonce) answers to its new secret only, checked again and again', () => {
    const [first, second] = [secrets.newNonce(), secrets.newNonce()];
    const [oldSecret, newSecret] = [secrets.secretFor(keyId, first), secrets.secretFor(keyId, second)];
    for (let round = 0; round < 3; round++) {
      assert.equal(secrets.verify(keyId, first, oldSecret), true, `round ${round}: before`);
      assert.equal(secrets.verify(keyId, second, oldSecret), false, `round ${round}: the old secret after`);
      assert.equal(secrets.verify(keyId, second, newSecret), true, `round ${round}: the new secret`);
      assert.equal(secrets.verify(keyId, second, newSecret.slice(0, -1) + (newSecret.endsWith('A') ? 'B' : 'A')), false);
    }
  });

  test('refuse: false for anything presented, a real secret included', () => {
    const secret = secrets.secretFor(keyId, secrets.newNonce());
    for (const presented of [secret, 'A'.repeat(43), '', 'x'.repeat(10_000), undefined as unknown as string]) {
      assert.equal(secrets.refuse(presented), false);
    }
  });

  test('neither the server key nor a derived secret shows in inspect or JSON', () => {
    const nonce = secrets.newNonce();
    const secret = secrets.secretFor(keyId, nonce);
    assert.equal(secrets.verify(keyId, nonce, secret), true);
    const text = inspect(secrets, { depth: Infinity, showHidden: true }) + JSON.stringify(secrets);
    assert.ok(!text.includes(key.toString('hex')) && !text.includes(key.toString('base64')));
    assert.ok(!text.includes(secret));
  });
});

describe('ApiKeySecrets.load', () => {
  test('creates a missing key file: 32 bytes, mode 0600, parent directories made', () => {
    const keyFile = freshKeyFile();
    ApiKeySecrets.load({ keyFile });
    assert.ok(existsSync(keyFile));
    assert.equal(readFileSync(keyFile).length, 32);
    assert.equal(statSync(keyFile).mode & 0o777, 0o600);
  });

  test('reloading the key file gives the same secrets; another key gives others', () => {
    const keyFile = freshKeyFile();
    const nonce = 'bm9uY2Vub25jZW5vbmNlAA';
    const first = ApiKeySecrets.load({ keyFile }).secretFor(keyId, nonce);
    assert.equal(ApiKeySecrets.load({ keyFile }).secretFor(keyId, nonce), first);
    assert.notEqual(ApiKeySecrets.load({ keyFile: freshKeyFile() }).secretFor(keyId, nonce), first);
  });

  test('an environment value wins over the file, in hex or base64, and creates no file', () => {
    const keyFile = freshKeyFile();
    const value = randomBytes(32);
    const nonce = 'AAAAAAAAAAAAAAAAAAAAAA';
    const fromHex = ApiKeySecrets.load({ keyFile, keyValue: value.toString('hex') }).secretFor(keyId, nonce);
    const fromBase64 = ApiKeySecrets.load({ keyFile, keyValue: value.toString('base64') }).secretFor(keyId, nonce);
    const fromBase64url = ApiKeySecrets.load({ keyFile, keyValue: ` ${value.toString('base64url')}\n` }).secretFor(keyId, nonce);
    assert.equal(fromBase64, fromHex);
    assert.equal(fromBase64url, fromHex);
    assert.equal(existsSync(keyFile), false);
  });

  test('a key shorter than 32 bytes is refused, without quoting it', () => {
    const short = Buffer.from('0123456789abcdef0123456789abcd', 'utf8'); // 30 bytes
    const keyFile = freshKeyFile();
    ApiKeySecrets.load({ keyFile }); // makes the directory
    writeFileSync(keyFile, short);
    const quotesNoKey = (err: Error): boolean => !err.message.includes(short.toString('utf8')) && !err.message.includes(short.toString('hex'));
    assert.throws(() => ApiKeySecrets.load({ keyFile }), quotesNoKey);
    assert.throws(() => ApiKeySecrets.load({ keyFile, keyValue: short.toString('hex') }), quotesNoKey);
    assert.throws(() => ApiKeySecrets.load({ keyFile, keyValue: short.toString('base64') }), quotesNoKey);
    assert.throws(() => ApiKeySecrets.load({ keyFile, keyValue: '' }));
  });

  test('a value that is neither hex nor base64 is refused', () => {
    assert.throws(() => ApiKeySecrets.load({ keyFile: freshKeyFile(), keyValue: `${'x'.repeat(50)}!` }));
  });
});

test('a first start never replaces a key file another process made meanwhile; rotate-key does', () => {
  const dir = mkdtempSync(join(tmpdir(), 'authd-keyfile-race-'));
  try {
    const keyFile = join(dir, 'keys', 'server.key');
    const first = Buffer.from(writeNewKeyFile(keyFile));
    // A second first start that found no key file when it looked (two started at once): it must end with the same key.
    const second = writeNewKeyFile(keyFile);
    assert.deepEqual(second, first, 'the later writer takes the key already there');
    assert.deepEqual(readFileSync(keyFile), first, 'the file still holds the first key');
    const rotated = Buffer.from(writeNewKeyFile(keyFile, 'replace'));
    assert.notDeepEqual(rotated, first);
    assert.deepEqual(readFileSync(keyFile), rotated);
    assert.deepEqual(readdirSync(join(dir, 'keys')), ['server.key'], 'no temporary file is left behind');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
