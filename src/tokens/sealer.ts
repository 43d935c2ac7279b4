// Secrets the service must read back (HS256 secrets, signing keys' private halves), sealed with AES-256-GCM under a subkey of the server key.
//
// A sealed value is `v1.` + base64url(nonce | ciphertext | tag). The purpose (`jwt-secret`, `signing-key`) is
// authenticated data, so a value sealed for one use does not open as another. Whoever holds the data files
// without the key file learns nothing; rotating the server key (authctl rotate-key) leaves them unreadable,
// and the service then makes new signing keys at start and refuses HS256 until the secret is rotated.

import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { sealNonceBytes, sealTagBytes } from '../config/limits.js';

const version = 'v1.';

export type SealPurpose = 'jwt-secret' | 'signing-key';

/** The server key's subkey (ApiKeySecrets.subkey) that seals them. */
export const sealerSubkeyLabel = 'authd-sealed-v1';

/** A sealed value that does not open: sealed under another server key, or damaged. */
export class SealError extends Error {
  constructor() {
    super('a sealed secret does not open under this server key');
    this.name = 'SealError';
  }
}

export class Sealer {
  /** Held only here; util.inspect shows a private field's presence, not its bytes. */
  readonly #key: Buffer;

  /** key: 32 bytes (a subkey of the server key: ApiKeySecrets.subkey(sealerSubkeyLabel)). */
  constructor(key: Buffer) {
    if (key.length !== 32) throw new TypeError('the sealing key is 32 bytes');
    this.#key = Buffer.from(key);
  }

  seal(plain: string, purpose: SealPurpose): string {
    const nonce = randomBytes(sealNonceBytes);
    const cipher = createCipheriv('aes-256-gcm', this.#key, nonce);
    cipher.setAAD(Buffer.from(purpose));
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return version + Buffer.concat([nonce, body, cipher.getAuthTag()]).toString('base64url');
  }

  /** Whether the value opens: sealed for this purpose under this key, and whole. */
  opens(sealed: string, purpose: SealPurpose): boolean {
    try {
      this.open(sealed, purpose);
      return true;
    } catch {
      return false;
    }
  }

  /** The plaintext; a SealError if it was not sealed for this purpose under this key. */
  open(sealed: string, purpose: SealPurpose): string {
    if (!sealed.startsWith(version)) throw new SealError();
    const bytes = Buffer.from(sealed.slice(version.length), 'base64url');
    if (bytes.length < sealNonceBytes + sealTagBytes) throw new SealError();
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.#key, bytes.subarray(0, sealNonceBytes));
      decipher.setAAD(Buffer.from(purpose));
      decipher.setAuthTag(bytes.subarray(bytes.length - sealTagBytes));
      return Buffer.concat([decipher.update(bytes.subarray(sealNonceBytes, bytes.length - sealTagBytes)), decipher.final()]).toString('utf8');
    } catch {
      throw new SealError();
    }
  }
}
