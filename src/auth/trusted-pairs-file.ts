// The limiter's trusted (account, address) pairs kept across a restart: a small file of keyed hashes in the data directory, replaced atomically.
//
// A pair that succeeded lately is exempt from its account's lockout and its address's slowing, and its
// verifications go first in the hash pool (src/auth/limiter.ts). Forgotten at a restart, every owner would
// meet an attack in progress as a stranger. The file holds, per pair, only the first trustedPairDigestBytes
// of HMAC-SHA256(key, pair key) and until when the pair is trusted: never an account name, an address or a
// credential. The key comes from the server key (see main.ts), which lives outside the data directory, so the
// file alone does not even tell whether a given account used a given address. Another key (a rotation) finds
// nothing in an old file, which costs only the trust.
//
// Layout: the 8 bytes `authdtp1`, then per pair the digest and the time as a big-endian float64 of ms since
// the epoch. Written to a temporary file (0600), fsynced, renamed over the old one, the directory fsynced.

import { closeSync, openSync, readSync, fstatSync } from 'node:fs';
import { open, rename } from 'node:fs/promises';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { dirname, join } from 'node:path';
import { bruteForceTrustedPairsMax, privateFileMode, trustedPairDigestBytes, trustedPairDigestsPerTurn } from '../config/limits.js';
import { KeyedHash } from './keyed-hash.js';
import type { BruteForceLimiter } from './limiter.js';

const magic = Buffer.from('authdtp1', 'latin1');
const recordBytes = trustedPairDigestBytes + 8;
const fileBytesMax = magic.length + recordBytes * bruteForceTrustedPairsMax;

/**
 * The limiter's export with every pair key replaced by its digest, perTurn digests per event-loop turn: a keyed
 * hash costs about a microsecond, and a full table holds bruteForceTrustedPairsMax pairs.
 */
export async function digestedPairs(
  pairs: ReadonlyArray<readonly [key: string, untilMs: number, digested: boolean]>, digest: (pairKey: string) => string, perTurn: number,
): Promise<Array<[digest: string, untilMs: number]>> {
  const out: Array<[string, number]> = [];
  for (const [key, until, digested] of pairs) {
    out.push([digested ? key : digest(key), until]);
    if (out.length % perTurn === 0) await nextTurn();
  }
  return out;
}

/** The file's name in the data directory. */
export const trustedPairsFileName = 'trusted-pairs';

export class TrustedPairsFile {
  readonly #path: string;
  /** The key is held only inside the KeyedHash: util.inspect and JSON never show its bytes. */
  readonly #keyed: KeyedHash;
  readonly #limiter: BruteForceLimiter;
  readonly #digest = (pairKey: string): string => this.#keyed.mac(pairKey).slice(0, trustedPairDigestBytes);
  #timer: NodeJS.Timeout | undefined;
  /** The save under way: saves never overlap (two renames racing could put the older file last). */
  #saving: Promise<void> = Promise.resolve();

  /** key: at least 32 bytes, derived from the server key; the caller may wipe it afterwards. */
  constructor(opts: { dataDir: string; key: Uint8Array; limiter: BruteForceLimiter }) {
    if (opts.key.length < 32) throw new RangeError('the trusted pairs key must hold at least 32 bytes');
    this.#path = join(opts.dataDir, trustedPairsFileName);
    this.#keyed = new KeyedHash(opts.key);
    this.#limiter = opts.limiter;
  }

  /**
   * Hands the pairs of the file to the limiter: how many. A missing file holds none; a damaged one (a bad
   * header, a torn length, a time that is no time) is ignored whole, as if missing: trust is only an
   * exemption, and losing it is what happened at every restart before this file existed.
   */
  load(): number {
    let fd: number;
    try {
      fd = openSync(this.#path, 'r');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 0;
      throw err;
    }
    let bytes: Buffer;
    try {
      const size = fstatSync(fd).size;
      if (size > fileBytesMax || size < magic.length || (size - magic.length) % recordBytes !== 0) return 0;
      bytes = Buffer.alloc(size);
      let read = 0;
      while (read < size) {
        const n = readSync(fd, bytes, read, size - read, read);
        if (n === 0) return 0;
        read += n;
      }
    } finally {
      closeSync(fd);
    }
    if (!bytes.subarray(0, magic.length).equals(magic)) return 0;
    const entries: Array<[string, number]> = [];
    for (let at = magic.length; at < bytes.length; at += recordBytes) {
      const until = bytes.readDoubleBE(at + trustedPairDigestBytes);
      if (!Number.isFinite(until)) return 0;
      entries.push([bytes.toString('latin1', at, at + trustedPairDigestBytes), until]);
    }
    this.#limiter.importTrusted(entries, this.#digest);
    return entries.length;
  }

  /** Writes the limiter's trusted pairs now; resolves once the file is durable. */
  save(): Promise<void> {
    const saving = this.#saving.then(() => this.write());
    this.#saving = saving.catch(() => undefined);
    return saving;
  }

  /** Saves every intervalMs, on a timer that does not keep the process alive. */
  start(intervalMs: number): void {
    this.#timer ??= setInterval(() => void this.save().catch(() => undefined), intervalMs);
    this.#timer.unref();
  }

  /** Stops the timer and saves a last time (a graceful shutdown). */
  close(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    return this.save();
  }

  private async write(): Promise<void> {
    const pairs = await digestedPairs(this.#limiter.exportTrusted(), this.#digest, trustedPairDigestsPerTurn);
    const bytes = Buffer.alloc(magic.length + recordBytes * pairs.length);
    magic.copy(bytes, 0);
    let at = magic.length;
    for (const [digest, until] of pairs) {
      bytes.write(digest, at, trustedPairDigestBytes, 'latin1');
      bytes.writeDoubleBE(until, at + trustedPairDigestBytes);
      at += recordBytes;
    }
    const tmp = `${this.#path}.tmp`;
    const file = await open(tmp, 'w', privateFileMode);
    try {
      // An existing tmp file (a save cut short) keeps its mode through open(): set it again.
      await file.chmod(privateFileMode);
      await file.writeFile(bytes);
      await file.sync();
    } finally {
      await file.close();
    }
    await rename(tmp, this.#path);
    const dir = await open(dirname(this.#path), 'r');
    try {
      await dir.sync();
    } finally {
      await dir.close();
    }
  }
}
