// Pins KeyedHash to RFC 2104 HMAC-SHA256 as node:crypto computes it, for every key length and message the service can give it, and shows it keeps neither key nor message in view.

import assert from 'node:assert/strict';
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { inspect } from 'node:util';
import { KeyedHash } from '../src/auth/keyed-hash.js';
import { keyedHashMessageBytesMax } from '../src/config/limits.js';

const messages = [
  '', 'a', 'admin-pass-123', 'pässwörd ✓ 🔑', '\u0000inner\u0000nul', 'x'.repeat(63), 'y'.repeat(64), 'z'.repeat(65),
  'é'.repeat(keyedHashMessageBytesMax / 2), 'é'.repeat(keyedHashMessageBytesMax / 2 + 1), 'w'.repeat(keyedHashMessageBytesMax + 10), 'short after long',
];

test('equals createHmac for keys shorter than, equal to and longer than the block, message after message', () => {
  for (const keyBytes of [1, 16, 32, 64, 65, 200]) {
    const key = randomBytes(keyBytes);
    const keyed = new KeyedHash(key);
    for (const message of messages) {
      assert.equal(keyed.mac(message), createHmac('sha256', key).update(message, 'utf8').digest('binary'), `key ${keyBytes} B, message of ${message.length} chars`);
    }
  }
});

test('with bytes after the message: equals createHmac over both, in the reused buffer and past it', () => {
  const key = randomBytes(32);
  const keyed = new KeyedHash(key);
  const tails = [new Uint8Array(0), Buffer.from('{"type":"apikey"}'), randomBytes(300), randomBytes(keyedHashMessageBytesMax - 20), randomBytes(keyedHashMessageBytesMax + 1)];
  for (const message of ['', '10.0.0.1\u0000', 'é'.repeat(10)]) {
    for (const tail of tails) {
      const expected = createHmac('sha256', key).update(message, 'utf8').update(tail).digest('binary');
      assert.equal(keyed.mac(message, tail), expected, `message of ${message.length} chars, ${tail.length} bytes after`);
    }
  }
  assert.equal(keyed.mac('after'), createHmac('sha256', key).update('after').digest('binary'), 'nothing of the bytes stays behind');
});

test('digest is HMAC\'s inner hash: SHA-256 over the key XOR ipad, the message and the bytes; a different text never gives the same digest', () => {
  const key = randomBytes(32);
  const keyed = new KeyedHash(key);
  const innerPad = Buffer.alloc(64, 0x36);
  for (let i = 0; i < key.length; i++) innerPad[i]! ^= key[i]!;
  const seen = new Set<string>();
  for (const message of messages) {
    for (const tail of [undefined, Buffer.from('{"type":"apikey"}'), randomBytes(keyedHashMessageBytesMax)]) {
      const expected = createHash('sha256').update(innerPad).update(message, 'utf8').update(tail ?? new Uint8Array(0)).digest('binary');
      const digest = keyed.digest(message, tail);
      assert.equal(digest, expected, `message of ${message.length} chars, ${tail?.length ?? 0} bytes after`);
      assert.ok(!seen.has(digest));
      seen.add(digest);
    }
  }
  assert.equal(keyed.mac('after'), createHmac('sha256', key).update('after').digest('binary'), 'mac still rests on the same pads');
});

test('the key can be wiped after construction, and neither it nor the last message shows in inspect or JSON', () => {
  const key = Buffer.from('k'.repeat(32));
  const expected = createHmac('sha256', key).update('hunter2-secret').digest('binary');
  const keyed = new KeyedHash(key);
  key.fill(0);
  assert.equal(keyed.mac('hunter2-secret'), expected);
  const shown = `${inspect(keyed, { showHidden: true, depth: 5 })}${JSON.stringify(keyed)}`;
  assert.ok(!shown.includes('hunter2'), 'the message is not visible');
  assert.ok(!shown.includes('kkkk') && !shown.includes('6b6b6b'), 'the key is not visible');
});
