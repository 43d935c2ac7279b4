// HMAC-SHA256 (RFC 2104) over short UTF-8 strings with a fixed key, as two one-shot hashes into reused buffers (or its inner hash alone, for lookup keys), and a constant-time text compare: the verify cache, API Key secrets and known callers run them on every request.
//
// node:crypto's createHmac builds a native Hmac object per call; crypto.hash over the padded key and
// the message needs no object and gives the same bytes (checked against createHmac by the tests).
// Digests come out as latin1 text (one char per byte; 'binary' is its name in node:crypto): crypto.hash
// makes a string faster than a Buffer, and a string is what the callers compare and look up.
// The key exists only as its two pads, in private fields: util.inspect and JSON never show them.

import { hash, randomBytes } from 'node:crypto';
import { keyedHashMessageBytesMax, perProcessKeyBytes } from '../config/limits.js';

/** SHA-256's block and output sizes. */
const blockBytes = 64;
const digestBytes = 32;

export class KeyedHash {
  /** (key ^ ipad) followed by room for the message. */
  readonly #inner = Buffer.alloc(blockBytes + keyedHashMessageBytesMax);
  /** (key ^ opad) followed by the inner digest. */
  readonly #outer = Buffer.alloc(blockBytes + digestBytes);

  /** Under a fresh random key that exists nowhere else and dies with the process (its bytes are wiped once the pads hold it). */
  static withRandomKey(): KeyedHash {
    const key = randomBytes(perProcessKeyBytes);
    const keyed = new KeyedHash(key);
    key.fill(0);
    return keyed;
  }

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

  /** HMAC-SHA256(key, UTF-8 of message, then `bytes` as they are): its 32 bytes as a latin1 string of 32 chars. */
  mac(message: string, bytes?: Uint8Array): string {
    this.#outer.write(this.digest(message, bytes), blockBytes, 'latin1');
    return hash('sha256', this.#outer, 'binary');
  }

  /**
   * HMAC's inner hash alone, SHA-256 over the keyed pad and the message: half the cost (one crypto.hash
   * call, each with its fixed cost, instead of two). For lookup keys no one ever sees, by which a text
   * is found without being kept (KnownCallers): what the outer hash guards against, extending a known
   * digest to one of a longer message, needs a digest in hand, and would only name a different text.
   */
  digest(message: string, bytes?: Uint8Array): string {
    const extra = bytes?.length ?? 0;
    // A UTF-8 byte count is at most 3 per UTF-16 unit, so short messages skip the exact count.
    const fits = message.length * 3 + extra <= keyedHashMessageBytesMax || Buffer.byteLength(message, 'utf8') + extra <= keyedHashMessageBytesMax;
    const input = fits ? this.#inner : Buffer.concat([this.#inner.subarray(0, blockBytes), Buffer.from(message, 'utf8'), bytes ?? new Uint8Array(0)]);
    let end = input.length;
    if (fits) {
      end = blockBytes + this.#inner.write(message, blockBytes, 'utf8');
      if (bytes !== undefined) {
        this.#inner.set(bytes, end);
        end += extra;
      }
    }
    const inner = hash('sha256', input.subarray(0, end), 'binary');
    // The message is often a password: it does not stay behind in the scratch buffer.
    input.fill(0, blockBytes, end);
    return inner;
  }
}

/** Texts compared in time that depends on their length only (keyed hashes as latin1, API Key secrets): false for unequal lengths. */
export function sameText(a: string, b: string): boolean {
  let diff = a.length ^ b.length;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}
