// The service's signing keys: making one (jose), which are current, and which are still published.

import { calculateJwkThumbprint, exportJWK, exportPKCS8, generateKeyPair } from 'jose';
import { signingKeyPublishedAfterRetireMs } from '../config/limits.js';
import type { JsonObject, SigningAlg, SigningKey } from '../domain/entities.js';
import type { Sealer } from './sealer.js';

export const signingAlgs: readonly SigningAlg[] = ['EdDSA', 'ES256'];

/** A new key pair for alg, its private half sealed; current (retiredAt 0) until a rotation replaces it, which also sets createdAt. */
export async function newSigningKey(alg: SigningAlg, sealer: Sealer): Promise<SigningKey> {
  const { publicKey, privateKey } = await generateKeyPair(alg, { extractable: true, ...(alg === 'EdDSA' ? { crv: 'Ed25519' } : {}) });
  const jwk = await exportJWK(publicKey);
  const publicJwk: JsonObject = {};
  for (const [k, v] of Object.entries(jwk)) if (typeof v === 'string') publicJwk[k] = v;
  const kid = await calculateJwkThumbprint(jwk);
  return { kid, alg, publicJwk, sealedPrivate: sealer.seal(await exportPKCS8(privateKey), 'signing-key'), createdAt: 0, retiredAt: 0 };
}

export function currentKey(keys: readonly SigningKey[] | undefined, alg: SigningAlg): SigningKey | undefined {
  return keys?.find((k) => k.alg === alg && k.retiredAt === 0);
}

/** Until when (µs) a key is published: for ever while current, else until every token it signed has expired. */
export function publishedUntil(key: SigningKey): number {
  return key.retiredAt === 0 ? Infinity : key.retiredAt + signingKeyPublishedAfterRetireMs * 1000;
}

export function isPublished(key: SigningKey, now: number): boolean {
  return publishedUntil(key) > now;
}
