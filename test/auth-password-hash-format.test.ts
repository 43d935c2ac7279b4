// Pins the stored-hash formats: what validatePasswordHash accepts on import, and when needsRehash says so.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { bcryptCostMax, passwordHashCharsMax } from '../src/config/limits.js';
import { isArgon2idHash, isBcryptHash, needsRehash, validatePasswordHash } from '../src/auth/hash-pool.js';
import { parseArgon2idHash } from '../src/auth/password-hash-format.js';

// Made by hash-wasm: m=1024,t=1,p=1, 16-byte salt, 32-byte hash.
const argon2id = '$argon2id$v=19$m=1024,t=1,p=1$AAAAAAAAAAAAAAAAAAAAAA$suNOfOjOLV1pHp3DYSOp9FG5BA17xGpE5Q/LCiFA4Kc';
const bcrypt = '$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW';

describe('validatePasswordHash', () => {
  test('accepts argon2id PHC strings and $2a$/$2b$/$2y$ bcrypt', () => {
    for (const h of [
      argon2id,
      '$argon2id$v=19$m=65536,t=2,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc',
      bcrypt,
      bcrypt.replace('$2a$', '$2b$'),
      bcrypt.replace('$2a$', '$2y$'),
      bcrypt.replace('$05$', `$${bcryptCostMax}$`),
    ]) {
      assert.equal(validatePasswordHash(h), true, h);
    }
    assert.equal(isArgon2idHash(argon2id), true);
    assert.equal(isBcryptHash(bcrypt), true);
    assert.equal(isBcryptHash(argon2id), false);
    assert.equal(isArgon2idHash(bcrypt), false);
    assert.equal(isArgon2idHash('$argon2id$v=19$m=1024,t=1,p=1$AAAAAAAAAAAAAAAAAAAAAA$suNOfOjOLV1pHp3DYSOp9A'), true, '16-byte hash');
  });

  test('refuses everything else', () => {
    const refused: Record<string, string> = {
      empty: '',
      plaintext: 'hunter22',
      argon2i: argon2id.replace('$argon2id$', '$argon2i$'),
      argon2d: argon2id.replace('$argon2id$', '$argon2d$'),
      'version 16': argon2id.replace('v=19', 'v=16'),
      'no version': argon2id.replace('v=19$', ''),
      'leading zero': argon2id.replace('m=1024', 'm=01024'),
      'negative': argon2id.replace('t=1', 't=-1'),
      'iterations 0': argon2id.replace('t=1', 't=0'),
      'memory over the limit': argon2id.replace('m=1024', 'm=1048576'),
      'memory under 8 per lane': argon2id.replace('m=1024,t=1,p=1', 'm=16,t=1,p=4'),
      'huge number': argon2id.replace('m=1024', 'm=99999999999999999999'),
      'params reordered': argon2id.replace('m=1024,t=1,p=1', 't=1,m=1024,p=1'),
      'extra param': argon2id.replace('p=1$', 'p=1,keyid=abc$'),
      'padded base64': `${argon2id}=`,
      'non-canonical trailing bits': argon2id.replace(/c$/, 'd'),
      'base64url alphabet': argon2id.replace('Q/L', 'Q_L'),
      'salt under 8 bytes': argon2id.replace('AAAAAAAAAAAAAAAAAAAAAA', 'AAAAAAA'),
      'hash under 16 bytes': '$argon2id$v=19$m=1024,t=1,p=1$AAAAAAAAAAAAAAAAAAAAAA$suNOfOjOLV1pHp3DYSOp',
      'missing hash': argon2id.slice(0, argon2id.lastIndexOf('$') + 1),
      'extra field': `${argon2id}$AAAA`,
      'bcrypt $2x$': bcrypt.replace('$2a$', '$2x$'),
      'bcrypt $2$': `$2$05$${bcrypt.slice(7, -1)}`,
      'bcrypt cost 03': bcrypt.replace('$05$', '$03$'),
      'bcrypt cost over the limit': bcrypt.replace('$05$', `$${bcryptCostMax + 1}$`),
      'bcrypt one char short': bcrypt.slice(0, -1),
      'bcrypt one char long': `${bcrypt}a`,
      'bcrypt bad char': `${bcrypt.slice(0, -1)}+`,
      'over-long': `${argon2id}${'A'.repeat(passwordHashCharsMax)}`,
    };
    for (const [why, h] of Object.entries(refused)) assert.equal(validatePasswordHash(h), false, why);
  });

  test('pathological input is refused without backtracking blow-up', () => {
    // No timing assertion: a quadratic or exponential check would simply not finish.
    for (const h of ['$'.repeat(100_000), `$argon2id$v=19$m=${'1'.repeat(100_000)}`, `$2a$05$${'.'.repeat(100_000)}`]) {
      assert.equal(validatePasswordHash(h), false);
    }
    assert.equal(validatePasswordHash(42 as unknown as string), false);
  });

  test('parses the parameters, salt and hash', () => {
    const parts = parseArgon2idHash('$argon2id$v=19$m=65536,t=2,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc');
    assert.ok(parts !== null);
    assert.equal(parts.memoryKiB, 65536);
    assert.equal(parts.iterations, 2);
    assert.equal(parts.parallelism, 1);
    assert.equal(Buffer.from(parts.salt).toString('utf8'), 'somesalt');
    assert.equal(parts.hash.length, 32);
  });
});

describe('needsRehash', () => {
  const params = { memoryKiB: 1024, iterations: 1, parallelism: 1 };
  test('false for argon2id of the current params', () => {
    assert.equal(needsRehash(argon2id, params), false);
  });
  test('true for bcrypt', () => {
    assert.equal(needsRehash(bcrypt, params), true);
  });
  test('true when m, t or p differ', () => {
    assert.equal(needsRehash(argon2id, { ...params, memoryKiB: 2048 }), true);
    assert.equal(needsRehash(argon2id, { ...params, iterations: 2 }), true);
    assert.equal(needsRehash(argon2id, { ...params, parallelism: 2 }), true);
  });
  test('true when the salt or output length differ from what we make', () => {
    assert.equal(needsRehash('$argon2id$v=19$m=1024,t=1,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc', params), true);
  });
  test('true for anything unparsable', () => {
    assert.equal(needsRehash('garbage', params), true);
  });
});
