// Random identifiers: 22 base62 characters for entities (~131 bits), 25 of [0-9A-Z] for API keys (~129 bits).

import { randomFillSync } from 'node:crypto';
import { apikeyIdChars, entityIdChars, randomPoolBytes } from '../config/limits.js';

const base62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const base36 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ';

/** Random bytes drawn from the system a block at a time: a getrandom call per id is a noticeable part of a create under load. */
const pool = Buffer.alloc(randomPoolBytes);
let poolUsed = pool.length;

function randomByte(): number {
  if (poolUsed === pool.length) {
    randomFillSync(pool);
    poolUsed = 0;
  }
  return pool[poolUsed++]!;
}

/** Rejection sampling keeps every character uniform (a plain modulo would favour the first ones). */
function randomString(alphabet: string, length: number): string {
  const limit = 256 - (256 % alphabet.length);
  let out = '';
  while (out.length < length) {
    const b = randomByte();
    if (b < limit) out += alphabet[b % alphabet.length];
  }
  return out;
}

export function newEntityId(): string {
  return randomString(base62, entityIdChars);
}

export function newApikeyId(): string {
  return randomString(base36, apikeyIdChars);
}
