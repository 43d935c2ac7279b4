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
// Layout: the 8 bytes `authdtp3`, then trustedPairRecordBytes per pair (its fingerprint, keyed tags of its account
// and caller, its time and whether it is a Basic caller's). Written to a temporary file (0600), fsynced, renamed
// over the old one, the directory fsynced. A file of another layout (an older version's `authdtp2`, whose pairs
// named no caller) is ignored whole, with a log line: its pairs are trusted again at their next success.

import { closeSync, openSync, readSync, fstatSync } from 'node:fs';
import { open, rename } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { bruteForceTrustedPairSlots, privateFileMode } from '../config/limits.js';
import type { BruteForceLimiter } from './limiter.js';
import { trustedPairRecordBytes } from './trusted-pairs.js';

const magic = Buffer.from('authdtp3', 'latin1');
const fileBytesMax = magic.length + trustedPairRecordBytes * bruteForceTrustedPairSlots;

/** The file's name in the data directory. */
export const trustedPairsFileName = 'trusted-pairs';

/** Reads into all of `into` from `position` on, or up to the end of the file: how many bytes were read. */
function readFully(fd: number, into: Buffer, position: number): number {
  let read = 0;
  while (read < into.length) {
    const n = readSync(fd, into, read, into.length - read, position + read);
    if (n === 0) break;
    read += n;
  }
  return read;
}

/** Where a file that is ignored is told of. */
export interface TrustedPairsLogger {
  warn(obj: object, msg: string): void;
}

export class TrustedPairsFile {
  readonly #path: string;
  readonly #limiter: BruteForceLimiter;
  readonly #logger: TrustedPairsLogger | undefined;
  #timer: NodeJS.Timeout | undefined;
  /** The save under way: saves never overlap (two renames racing could put the older file last). */
  #saving: Promise<void> = Promise.resolve();

  /** The limiter's trust key (useTrustKey) must be the one the file was written with for its pairs to be found. */
  constructor(opts: { dataDir: string; limiter: BruteForceLimiter; logger?: TrustedPairsLogger }) {
    this.#path = join(opts.dataDir, trustedPairsFileName);
    this.#limiter = opts.limiter;
    this.#logger = opts.logger;
  }

  /**
   * Hands the pairs of the file to the limiter: how many it took. A missing file holds none; a damaged one (a
   * bad header, a torn length) or one of another layout is ignored whole, as if missing, with a log line, and a
   * pair whose time is no time is skipped: trust is only an exemption, and losing it is what happened at every
   * restart before this file existed.
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
      // The header first: another version's layout is told apart from damage in the log line.
      const header = Buffer.alloc(magic.length);
      if (readFully(fd, header, 0) !== magic.length || !header.equals(magic)) return this.#ignored(`its header is not ${magic.toString('latin1')}: another version's layout, or damaged`);
      if (size > fileBytesMax || (size - magic.length) % trustedPairRecordBytes !== 0) return this.#ignored('its length is not a whole number of pairs within the table');
      bytes = Buffer.alloc(size - magic.length);
      if (readFully(fd, bytes, magic.length) !== bytes.length) return this.#ignored('it was cut short while read');
    } finally {
      closeSync(fd);
    }
    return this.#limiter.importTrusted(bytes);
  }

  /** A file not read: no pair taken, and a line that says why (no pair, name or address: there are none in the file). */
  #ignored(why: string): number {
    this.#logger?.warn({ file: this.#path, why }, 'trusted pairs file ignored; its pairs are trusted again at their next success');
    return 0;
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
