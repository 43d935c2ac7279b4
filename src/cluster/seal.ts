// Sealing what authd puts on NATS: AES-256-GCM under a subkey of the server key, with what a message is and where it belongs (kind, stream, subject, sequence) as associated data.
//
// Whoever reaches the cluster's NATS without the server key reads nothing of a sealed message (emails, password
// hashes, API Key nonces, sealed signing keys) and cannot make one that opens: a forged, altered or cut message
// fails the tag. The associated data binds each message to its place, so a sealed message copied elsewhere does not
// open either: a log message in another stream, a failure on the log's subject, a snapshot's part under another
// name or index, a status answer to another request. A log message's sequence is not in its associated data: its
// records carry the sequence they were decided for, and one that lands elsewhere opens but is void (replica.ts).
//
// A sealed message is nonce (12 bytes) | ciphertext | tag (16 bytes). The nonce is a random prefix drawn per
// ClusterSeal (per process) and a counter, so nonces never repeat under the key, however many messages a node
// seals; a new prefix is drawn before the counter would wrap.

import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { sealNonceBytes, sealTagBytes } from '../config/limits.js';

/** The server key's subkey (ApiKeySecrets.subkey) that seals the cluster's messages; a new format takes a new label. */
export const clusterSealSubkeyLabel = 'authd-cluster-v1';

/** Bytes a sealed message has beyond its plaintext. */
export const sealOverheadBytes = sealNonceBytes + sealTagBytes;

/** What a sealed message is; part of its associated data, so one kind never opens as another. */
export type SealedKind = 'log' | 'failure' | 'snapshot' | 'key' | 'status';

const noncePrefixBytes = 8;
const counterWrap = 2 ** 32;

/** The associated data of a message of kind, at the place its parts name (stream, subject, sequence, ...). */
export function sealContext(kind: SealedKind, ...place: readonly (string | number)[]): Buffer {
  return Buffer.from(`${clusterSealSubkeyLabel}\0${kind}\0${place.join('\0')}`, 'utf8');
}

export class ClusterSeal {
  /** Held only here; util.inspect shows a private field's presence, not its bytes. */
  readonly #key: Buffer;
  readonly #nonce = Buffer.alloc(sealNonceBytes);
  #counter = counterWrap;

  /** key: 32 bytes, ApiKeySecrets.subkey(clusterSealSubkeyLabel). */
  constructor(key: Buffer) {
    if (key.length !== 32) throw new TypeError('the cluster sealing key is 32 bytes');
    this.#key = Buffer.from(key);
  }

  /** The parts, back to back, sealed under context (sealContext): one AEAD however many parts. */
  seal(parts: Uint8Array | readonly Uint8Array[], context: Buffer): Buffer {
    const list: readonly Uint8Array[] = parts instanceof Uint8Array ? [parts] : parts;
    let plainBytes = 0;
    for (const part of list) plainBytes += part.length;
    const nonce = this.#nextNonce();
    const out = Buffer.allocUnsafe(sealNonceBytes + plainBytes + sealTagBytes);
    nonce.copy(out, 0);
    const cipher = createCipheriv('aes-256-gcm', this.#key, nonce, { authTagLength: sealTagBytes });
    cipher.setAAD(context);
    let at = sealNonceBytes;
    for (const part of list) at += cipher.update(part).copy(out, at);
    at += cipher.final().copy(out, at);
    cipher.getAuthTag().copy(out, at);
    return out;
  }

  /** The plaintext, or undefined when sealed is not a message sealed under this key for context (forged, altered, cut, misplaced). */
  open(sealed: Uint8Array, context: Buffer): Buffer | undefined {
    if (sealed.length < sealOverheadBytes) return undefined;
    const end = sealed.length - sealTagBytes;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.#key, sealed.subarray(0, sealNonceBytes), { authTagLength: sealTagBytes });
      decipher.setAAD(context);
      decipher.setAuthTag(sealed.subarray(end));
      const body = decipher.update(sealed.subarray(sealNonceBytes, end));
      // final() throws when the tag does not match: nothing of body is used before it has passed.
      const last = decipher.final();
      return last.length === 0 ? body : Buffer.concat([body, last]);
    } catch {
      return undefined;
    }
  }

  #nextNonce(): Buffer {
    if (this.#counter >= counterWrap) {
      randomBytes(noncePrefixBytes).copy(this.#nonce, 0);
      this.#counter = 0;
    }
    this.#nonce.writeUInt32BE(this.#counter++, noncePrefixBytes);
    return this.#nonce;
  }
}

/**
 * The log's messages, each sealed for its stream and subject: record frames, or nothing at all for a barrier (a
 * message whose only use is the sequence the stream's leader gives it, cluster-node.ts).
 */
export class LogSeal {
  readonly #context: Buffer;

  constructor(private readonly seal: ClusterSeal, readonly stream: string, readonly subject: string) {
    this.#context = sealContext('log', stream, subject);
  }

  /** The message that holds these record frames ([] for a barrier). */
  close(frames: Uint8Array | readonly Uint8Array[]): Buffer {
    return this.seal.seal(frames, this.#context);
  }

  /** The record frames of a message (empty for a barrier), or undefined when it does not open. */
  open(data: Uint8Array): Buffer | undefined {
    return this.seal.open(data, this.#context);
  }
}

/** The bytes that tell one sealed message from every other: its nonce, which no two seals share. */
export function sealedMessageId(sealed: Uint8Array): Uint8Array {
  return sealed.subarray(0, sealNonceBytes);
}
