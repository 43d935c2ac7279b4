// Which of the service's signing keys is current for an algorithm, and until when a key is published in the JWKS.

import { signingKeyPublishedAfterRetireMs } from '../config/limits.js';
import type { SigningAlg, SigningKey } from './entities.js';

export function currentKey(keys: readonly SigningKey[] | undefined, alg: SigningAlg): SigningKey | undefined {
  return keys?.find((k) => k.alg === alg && k.retiredAt === 0);
}

/** Until when (µs) a key is published: for ever while current, else until every token it signed has expired. */
export function publishedUntil(key: SigningKey): number {
  return key.retiredAt === 0 ? Infinity : key.retiredAt + signingKeyPublishedAfterRetireMs * 1000;
}

/** now: µs. */
export function isPublished(key: SigningKey, now: number): boolean {
  return publishedUntil(key) > now;
}
