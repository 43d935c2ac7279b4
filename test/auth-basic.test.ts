// Pins parseBasicAuth: what an Authorization: Basic header yields, and everything it refuses.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { authorizationHeaderBytesMax } from '../src/config/limits.js';
import { parseBasicAuth } from '../src/auth/basic.js';

function basic(text: string): string {
  return `Basic ${Buffer.from(text, 'utf8').toString('base64')}`;
}

describe('parseBasicAuth', () => {
  test('splits user:pass', () => {
    assert.deepEqual(parseBasicAuth(basic('alice@example.com:s3cret')), { username: 'alice@example.com', password: 's3cret' });
  });

  test('the scheme is case-insensitive and may be followed by several spaces', () => {
    const token = Buffer.from('a:b').toString('base64');
    for (const header of [`basic ${token}`, `BASIC ${token}`, `bAsIc   ${token}`, `Basic ${token}  `, `Basic\t${token}`]) {
      assert.deepEqual(parseBasicAuth(header), { username: 'a', password: 'b' }, header);
    }
  });

  test('only the first colon splits: passwords may contain colons', () => {
    assert.deepEqual(parseBasicAuth(basic('bob:pa:ss:word:')), { username: 'bob', password: 'pa:ss:word:' });
    assert.deepEqual(parseBasicAuth(basic(':::')), { username: '', password: '::' });
  });

  test('empty username or password still parse (the caller decides)', () => {
    assert.deepEqual(parseBasicAuth(basic(':pw')), { username: '', password: 'pw' });
    assert.deepEqual(parseBasicAuth(basic('user:')), { username: 'user', password: '' });
  });

  test('no colon is null', () => {
    assert.equal(parseBasicAuth(basic('just-a-username')), null);
  });

  test('unicode decodes as UTF-8', () => {
    assert.deepEqual(parseBasicAuth(basic('Zoë 😀:pässwörd→✓')), { username: 'Zoë 😀', password: 'pässwörd→✓' });
  });

  test('invalid UTF-8 and encoded lone surrogates are null, not U+FFFD', () => {
    const headerOf = (bytes: number[]): string => `Basic ${Buffer.from(bytes).toString('base64')}`;
    assert.equal(parseBasicAuth(headerOf([0x61, 0x3a, 0xff])), null);
    assert.equal(parseBasicAuth(headerOf([0x61, 0x3a, 0xc3])), null, 'truncated sequence');
    assert.equal(parseBasicAuth(headerOf([0x61, 0x3a, 0xed, 0xa0, 0x80])), null, 'lone high surrogate');
    assert.equal(parseBasicAuth(headerOf([0x61, 0x3a, 0xc0, 0xaf])), null, 'overlong encoding');
  });

  test('bad base64 is null rather than decoded garbage', () => {
    const good = Buffer.from('user:password').toString('base64'); // dXNlcjpwYXNzd29yZA==
    for (const token of [
      `${good.slice(0, 4)}!${good.slice(4)}`,
      `${good.slice(0, 4)} ${good.slice(4)}`,
      'YTo-Pj4', // base64url of 'a:>>>' (standard: YTo+Pj4=)
      'YTo_Pz8', // base64url of 'a:???' (standard: YTo/Pz8=)
      'dXNlcjpw=YXNz',
      'dXNlcjpwYXNzd29yZA=',
      'dXNlcjpwYXNzd29yZA===',
      'dXNlcjpwYXNzd29yZB==', // non-canonical: trailing bits set
      'dXNlc',
      '====',
    ]) {
      assert.equal(parseBasicAuth(`Basic ${token}`), null, token);
    }
    assert.deepEqual(parseBasicAuth('Basic YTo+Pj4='), { username: 'a', password: '>>>' }, 'the standard alphabet parses');
    assert.deepEqual(parseBasicAuth('Basic YTo/Pz8='), { username: 'a', password: '???' }, 'the standard alphabet parses');
  });

  test('every final character with non-zero unused bits is refused, padded or not; the canonical one parses', () => {
    // 'a:b' has 3 bytes (4 chars, no spare bits); 'a:bc' leaves 4 spare bits in its 6th char, 'a:bcd' 2 in its 8th.
    for (const text of ['a:bc', 'a:bcd']) {
      const canonical = Buffer.from(text).toString('base64').replace(/=+$/, '');
      const spareBits = canonical.length % 4 === 2 ? 4 : 2;
      const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
      for (let value = 0; value < 64; value++) {
        const token = canonical.slice(0, -1) + alphabet[value]!;
        const clean = (value & ((1 << spareBits) - 1)) === 0;
        for (const padded of [token, token.padEnd(Math.ceil(token.length / 4) * 4, '=')]) {
          const parsed = parseBasicAuth(`Basic ${padded}`);
          if (!clean) assert.equal(parsed, null, padded);
          else assert.notEqual(parsed, null, padded);
          if (token === canonical) assert.deepEqual(parsed, { username: 'a', password: text.slice(2) }, padded);
        }
      }
    }
  });

  test('unpadded base64 is accepted', () => {
    assert.deepEqual(parseBasicAuth('Basic dXNlcjpwYXNzd29yZA'), { username: 'user', password: 'password' });
  });

  test('other schemes, missing or empty credentials are null', () => {
    for (const header of [undefined, '', 'Basic', 'Basic ', 'Basic    ', 'Bearer dXNlcjpw', 'Basicdm9pZDp4', 'Digest username="a"']) {
      assert.equal(parseBasicAuth(header), null, String(header));
    }
  });

  test('a header over authorizationHeaderBytesMax is null; one just under it parses', () => {
    const fits = (extra: number): string => {
      // base64 grows 4/3: choose a password whose header lands exactly on the limit plus `extra`.
      const prefix = 'Basic ';
      const tokenChars = Math.floor((authorizationHeaderBytesMax - prefix.length) / 4) * 4;
      const text = `u:${'p'.repeat((tokenChars / 4) * 3 - 2)}`;
      return `${prefix}${Buffer.from(text).toString('base64')}${' '.repeat(extra)}`;
    };
    const under = fits(0);
    assert.ok(under.length <= authorizationHeaderBytesMax);
    assert.ok(parseBasicAuth(under) !== null);
    const over = fits(authorizationHeaderBytesMax - under.length + 1);
    assert.equal(over.length, authorizationHeaderBytesMax + 1);
    assert.equal(parseBasicAuth(over), null);
    assert.equal(parseBasicAuth(basic(`u:${'é'.repeat(authorizationHeaderBytesMax)}`)), null);
  });
});
