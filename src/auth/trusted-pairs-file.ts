// The limiter's trusted (account, address) pairs kept across a restart: a small file of keyed fingerprints in the data directory, replaced atomically.
//
// A pair that succeeded lately is exempt from its account's lockout and its address's slowing, and its
// verifications go first in the hash pool (src/auth/limiter.ts). Forgotten at a restart, every owner would
// meet an attack in progress as a stranger. The file holds, per pair, only its 64-bit fingerprint (HalfSipHash
// of the pair key under a key derived from the server key, src/auth/trusted-pairs.ts) and until when it is
// trusted: never an account name, an address or a credential. The server key lives outside the data directory,
// so the file alone does not even tell whether a given account used a given address. Another key (a rotation)
// finds nothing in an old file, which costs only the trust.
//
// Layout: the 8 bytes `authdtp2`, then trustedPairRecordBytes per pair. Written to a temporary file (0600),
// fsynced, renamed over the old one, the directory fsynced. A file of another layout is ignored whole.

import { closeSync, openSync, readSync, fstatSync } from 'node:fs';
import { open, rename } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { bruteForceTrustedPairSlots, privateFileMode } from '../config/limits.js';
import type { BruteForceLimiter } from './limiter.js';
import { trustedPairRecordBytes } from './trusted-pairs.js';

const magic = Buffer.from('authdtp2', 'latin1');
const fileBytesMax = magic.length + trustedPairRecordBytes * bruteForceTrustedPairSlots;

/** The file's name in the data directory. */
export const trustedPairsFileName = 'trusted-pairs';

export class TrustedPairsFile {
  readonly #path: string;
  readonly #limiter: BruteForceLimiter;
  #timer: NodeJS.Timeout | undefined;
  /** The save under way: saves never overlap (two renames racing could put the older file last). */
  #saving: Promise<void> = Promise.resolve();

  /** The limiter's trust key (useTrustKey) must be the one the file was written with for its pairs to be found. */
  constructor(opts: { dataDir: string; limiter: BruteForceLimiter }) {
    this.#path = join(opts.dataDir, trustedPairsFileName);
    this.#limiter = opts.limiter;
  }

  /**
   * Hands the pairs of the file to the limiter: how many it took. A missing file holds none; a damaged one (a
   * bad header, a torn length) is ignored whole, as if missing, and a pair whose time is no time is skipped:
   * trust is only an exemption, and losing it is what happened at every restart before this file existed.
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
      if (size > fileBytesMax || size < magic.length || (size - magic.length) % trustedPairRecordBytes !== 0) return 0;
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
    return this.#limiter.importTrusted(bytes.subarray(magic.length));
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
    const bytes = Buffer.concat([magic, this.#limiter.exportTrusted()]);
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
