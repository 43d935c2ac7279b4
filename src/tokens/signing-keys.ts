// Making the service's signing keys (jose); which is current and which are published: src/domain/signing-keys.ts.

import type { JsonObject, SigningAlg, SigningKey } from '../domain/entities.js';
import { jose } from './jose.js';
import type { Sealer } from './sealer.js';

/** A new key pair for alg, its private half sealed; current (retiredAt 0) until a rotation replaces it, which also sets createdAt. */
export async function newSigningKey(alg: SigningAlg, sealer: Sealer): Promise<SigningKey> {
  const { calculateJwkThumbprint, exportJWK, exportPKCS8, generateKeyPair } = await jose();
  const { publicKey, privateKey } = await generateKeyPair(alg, { extractable: true, ...(alg === 'EdDSA' ? { crv: 'Ed25519' } : {}) });
  const jwk = await exportJWK(publicKey);
  const publicJwk: JsonObject = {};
  for (const [k, v] of Object.entries(jwk)) if (typeof v === 'string') publicJwk[k] = v;
  const kid = await calculateJwkThumbprint(jwk);
  return { kid, alg, publicJwk, sealedPrivate: sealer.seal(await exportPKCS8(privateKey), 'signing-key'), createdAt: 0, retiredAt: 0 };
}
