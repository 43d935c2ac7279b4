// API Key secrets: derived from a server key and the key's public nonce, never stored; plus that key's file.
//
// Design decision: an API Key's secret is DERIVED, not stored:
//   secret = base64url(HMAC-SHA256(serverKey, "authd-apikey-v1\0" + keyId + "\0" + nonce))   (32 bytes, 43 chars)
// The log and snapshots hold only the random public nonce. So the service can show the secret again
// (the API-key PUT response returns it) and can verify a presented secret with one keyed hash and a
// constant-time compare (microseconds; no argon2 needed because the secret has 256 bits of entropy),
// while whoever holds the data files alone learns nothing usable. The server key lives apart from the
// data (its own file, mode 0600, or an environment value). Rotating the server key invalidates every
// API Key secret at once; revoking one key means giving it a new nonce. The "v1" label lets a future
// derivation coexist. keyId and nonce cannot contain NUL, so the encoding is unambiguous.

import { closeSync, fstatSync, fsyncSync, linkSync, mkdirSync, openSync, readFileSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { dirname } from 'node:path';
import { ConfigError } from '../config/config.js';
import {
  apikeyDerivedSecretsMax, apikeyNonceBytes, apikeySecretBytes, apikeyServerKeyBytesMin, groupOtherModeBits, privateDirMode, privateFileMode,
} from '../config/limits.js';
import { KeyedHash, sameText } from './keyed-hash.js';

const derivationLabel = 'authd-apikey-v1\0';
/** Not a prefix of any derivation input (those start with derivationLabel), so a fingerprint is never a secret. */
const fingerprintLabel = 'authd-server-key-fingerprint-v1\0';
/** 128 bits: enough that two random keys never share a fingerprint, short enough to read in a message. */
const fingerprintBytes = 16;
const hmacSha256Bytes = 32;
// The secret is one whole HMAC-SHA256 output; a different apikeySecretBytes would silently mean another format.
if (apikeySecretBytes !== hmacSha256Bytes) throw new Error('apikeySecretBytes must equal the HMAC-SHA256 output (32 bytes)');
/** base64url without padding of apikeySecretBytes. */
const secretChars = Math.ceil((apikeySecretBytes * 4) / 3);
/** The server key made when none exists: the HMAC-SHA256 block is 64 bytes, but more than 32 adds no strength. */
const serverKeyBytesNew = 32;
/** What a presented secret for no key is compared with, so that refusing it costs what checking a real one does. */
const noSecret = 'A'.repeat(secretChars);

export class ApiKeySecrets {
  /** The server key is held only inside the KeyedHash: util.inspect and JSON never show its bytes. */
  private readonly serverKey: KeyedHash;
  /**
   * Secrets derived lately, by key id, with the nonce they were derived from: a key in use is checked
   * with a compare instead of a keyed hash, which would be a noticeable share of a POST /authenticate.
   * They are only ever in this process's memory, next to the server key, which derives every one of them
   * anyway; a new nonce (a regenerated key) misses and replaces its entry. Oldest derived first out.
   */
  readonly #derived = new Map<string, { readonly nonce: string; readonly secret: string }>();

  private constructor(serverKey: Buffer) {
    this.serverKey = new KeyedHash(serverKey);
    serverKey.fill(0);
  }

  /**
   * Loads the server key: from the environment-provided base64/hex value if given, else from keyFile
   * (raw bytes), creating keyFile with 32 random bytes (mode 0600, parent dir created, tmp + fsync + rename)
   * if missing. A key shorter than 32 bytes is refused, and so is a key file group or others may read or write
   * (a ConfigError: the operator fixes it with chmod).
   */
  static load(opts: { keyFile: string; keyValue?: string }): ApiKeySecrets {
    if (opts.keyValue !== undefined) return ApiKeySecrets.fromValue(opts.keyValue);
    return ApiKeySecrets.fromKey(readOrCreateKeyFile(opts.keyFile), `API key server key file ${opts.keyFile}`);
  }

  /** From the environment-provided base64/hex value (SERVER_KEY). */
  static fromValue(keyValue: string): ApiKeySecrets {
    return ApiKeySecrets.fromKey(decodeKeyValue(keyValue), 'the API key server key value');
  }

  /** From the key's bytes, which are wiped; source names where they came from in the refusal of a short key. */
  static fromKey(key: Buffer, source: string): ApiKeySecrets {
    if (key.length < apikeyServerKeyBytesMin) {
      key.fill(0);
      throw new Error(`${source} holds fewer than ${apikeyServerKeyBytesMin} bytes`);
    }
    return new ApiKeySecrets(key);
  }

  /**
   * Names the server key without revealing it: the first 16 bytes, as hex, of an HMAC under the key of a
   * label no API Key derivation uses. Kept in the data directory to tell a missing or different key at start.
   */
  fingerprint(): string {
    return Buffer.from(this.serverKey.mac(fingerprintLabel), 'latin1').subarray(0, fingerprintBytes).toString('hex');
  }

  /**
   * A key for another use of the server key (the trusted-pairs file's): an HMAC of a label no API Key
   * derivation can take, since key ids are 25 characters of [0-9A-Z] and labels hold lowercase letters.
   */
  subkey(label: string): Buffer {
    if (!/^[a-z][a-z0-9-]*$/.test(label)) throw new TypeError('a subkey label is lowercase letters, digits and dashes');
    return Buffer.from(this.serverKey.mac(`${label}\0`), 'latin1');
  }

  /** 16 random bytes, base64url: the public input of a new key's secret. */
  newNonce(): string {
    return randomBytes(apikeyNonceBytes).toString('base64url');
  }

  /** The derived secret for this key id and nonce (43 chars of base64url). */
  secretFor(keyId: string, nonce: string): string {
    return Buffer.from(this.derive(keyId, nonce), 'latin1').toString('base64url');
  }

  /** Constant time in the secret; false (never a throw) for a presented value of the wrong length or alphabet. */
  verify(keyId: string, nonce: string, presented: string): boolean {
    // Length and ASCII-ness are properties of the presented value alone, so checking them early leaks nothing.
    if (!wellFormed(presented)) return false;
    if (keyId.includes('\0') || nonce.includes('\0')) return false;
    // Compare the text itself, not its decoding: Node's base64 decoder skips stray characters.
    return sameText(this.derived(keyId, nonce), presented);
  }

  /**
   * False, after the work verify() does for a key in use: for a presented secret of a key that does not
   * exist, so that the answer takes as long as a wrong secret for one that does. Nothing is derived or kept.
   */
  refuse(presented: string): false {
    if (wellFormed(presented)) sameText(noSecret, presented);
    return false;
  }

  private derived(keyId: string, nonce: string): string {
    const known = this.#derived.get(keyId);
    if (known !== undefined && known.nonce === nonce) return known.secret;
    const secret = this.secretFor(keyId, nonce);
    this.#derived.delete(keyId);
    if (this.#derived.size >= apikeyDerivedSecretsMax) this.#derived.delete(this.#derived.keys().next().value!);
    this.#derived.set(keyId, { nonce, secret });
    return secret;
  }

  /** The HMAC's 32 bytes as latin1 text (see KeyedHash). */
  private derive(keyId: string, nonce: string): string {
    if (keyId.includes('\0') || nonce.includes('\0')) throw new TypeError('API key id and nonce must not contain NUL');
    return this.serverKey.mac(`${derivationLabel}${keyId}\0${nonce}`);
  }
}

/** Hex if it is only hex digits of even length (a 64-char hex key is also valid base64; hex wins), else strict base64 or base64url. */
function decodeKeyValue(value: string): Buffer {
  const text = value.trim();
  if (text.length > 0 && text.length % 2 === 0 && isAll(text, isHexChar)) return Buffer.from(text, 'hex');
  const unpadded = text.endsWith('==') ? text.slice(0, -2) : text.endsWith('=') ? text.slice(0, -1) : text;
  if (unpadded.length % 4 === 1 || !isAll(unpadded, isBase64OrUrlChar)) {
    throw new Error('the API key server key value is neither hex nor base64');
  }
  return Buffer.from(unpadded, 'base64'); // Node's base64 decoder reads both alphabets
}

function readOrCreateKeyFile(keyFile: string): Buffer {
  return readKeyFile(keyFile) ?? writeNewKeyFile(keyFile);
}

/**
 * Writes 32 new random bytes to keyFile and returns them. `create` never replaces a key file: when another
 * process made one meanwhile (two first starts at once), its key is returned instead, so both use one key.
 * `replace` (authctl rotate-key) swaps it atomically.
 */
export function writeNewKeyFile(keyFile: string, mode: 'create' | 'replace' = 'create'): Buffer {
  const dir = dirname(keyFile);
  mkdirSync(dir, { recursive: true, mode: privateDirMode });
  const key = randomBytes(serverKeyBytesNew);
  const tmp = `${keyFile}.tmp-${process.pid}-${randomBytes(6).toString('hex')}`;
  // 'wx' + 0600: the key is never readable by others, not even for the moment before a chmod.
  const fd = openSync(tmp, 'wx', privateFileMode);
  try {
    writeSync(fd, key);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  if (mode === 'replace') {
    renameSync(tmp, keyFile);
  } else {
    try {
      // link() fails if keyFile exists, where rename() would replace it.
      linkSync(tmp, keyFile);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      key.fill(0);
      const theirs = readKeyFile(keyFile);
      if (theirs === undefined) throw err;
      return theirs;
    } finally {
      try { unlinkSync(tmp); } catch { /* gone already */ }
    }
  }
  // The new name is durable only once the directory entry is on disk.
  const dirFd = openSync(dir, 'r');
  try {
    fsyncSync(dirFd);
  } finally {
    closeSync(dirFd);
  }
  return key;
}

/** The key file's bytes, or undefined if it is missing; refused if group or others have any access to it. */
export function readKeyFile(keyFile: string): Buffer | undefined {
  let fd: number;
  try {
    fd = openSync(keyFile, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  try {
    // The mode of the file actually opened, not of whatever the name points to a moment later.
    const mode = fstatSync(fd).mode & 0o777;
    if ((mode & groupOtherModeBits) !== 0) {
      throw new ConfigError(`KEY_FILE ${keyFile} is readable or writable by other users (mode 0${mode.toString(8)}); run: chmod 600 ${keyFile}`);
    }
    return readFileSync(fd);
  } finally {
    closeSync(fd);
  }
}

function isAll(s: string, test: (c: number) => boolean): boolean {
  for (let i = 0; i < s.length; i++) if (!test(s.charCodeAt(i))) return false;
  return true;
}

function isHexChar(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46);
}

function isBase64OrUrlChar(c: number): boolean {
  return (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39) ||
    c === 0x2b || c === 0x2f || c === 0x2d || c === 0x5f;
}

function wellFormed(presented: string): boolean {
  return typeof presented === 'string' && presented.length === secretChars && isAll(presented, (c) => c < 0x80);
}
