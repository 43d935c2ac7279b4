// HMAC-SHA256 (RFC 2104) over short UTF-8 strings with a fixed key, as two one-shot hashes into reused buffers: the verify cache and API Key secrets run it on every request.
//
// node:crypto's createHmac builds a native Hmac object per call (~2 us); crypto.hash over the padded
// key and the message needs no object and gives the same bytes (checked against createHmac by the tests).
// The key exists only as its two pads, in private fields: util.inspect and JSON never show them.

import { hash } from 'node:crypto';
import { keyedHashMessageBytesMax } from '../config/limits.js';

/** SHA-256's block and output sizes. */
const blockBytes = 64;
const digestBytes = 32;

export class KeyedHash {
  /** (key ^ ipad) followed by room for the message. */
  readonly #inner = Buffer.alloc(blockBytes + keyedHashMessageBytesMax);
  /** (key ^ opad) followed by the inner digest. */
  readonly #outer = Buffer.alloc(blockBytes + digestBytes);

  /** key: any length (a key longer than the block is hashed first, as RFC 2104 says). The caller may wipe it afterwards. */
  constructor(key: Uint8Array) {
    const k = key.length > blockBytes ? hash('sha256', key, 'buffer') : key;
    this.#inner.fill(0x36, 0, blockBytes);
    this.#outer.fill(0x5c, 0, blockBytes);
    for (let i = 0; i < k.length; i++) {
      this.#inner[i]! ^= k[i]!;
      this.#outer[i]! ^= k[i]!;
    }
  }

  /** HMAC-SHA256(key, UTF-8 of message): 32 new bytes. */
  mac(message: string): Buffer {
    // A UTF-8 byte count is at most 3 per UTF-16 unit, so short messages skip the exact count.
    const fits = message.length * 3 <= keyedHashMessageBytesMax || Buffer.byteLength(message, 'utf8') <= keyedHashMessageBytesMax;
    const input = fits ? this.#inner : Buffer.concat([this.#inner.subarray(0, blockBytes), Buffer.from(message, 'utf8')]);
    const end = fits ? blockBytes + this.#inner.write(message, blockBytes, 'utf8') : input.length;
    hash('sha256', input.subarray(0, end), 'buffer').copy(this.#outer, blockBytes);
    // The message is often a password: it does not stay behind in the scratch buffer.
    input.fill(0, blockBytes, end);
    return hash('sha256', this.#outer, 'buffer');
  }
}
