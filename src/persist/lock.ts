// The data directory lock: a LOCK file holding the owner's pid, created exclusively; a dead owner's lock is taken over.

import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { lockFileName } from './layout.js';
import type { PersistLogger } from './replayable.js';
import type { Storage, StorageError } from './storage.js';

export class LockError extends Error {
  readonly code = 'dir_locked';
  constructor(readonly path: string, readonly ownerPid: number | undefined, message: string) {
    super(message);
    this.name = 'LockError';
  }
}

export interface DirLock {
  readonly path: string;
  /** Removes the lock file; safe to call more than once. */
  release(): Promise<void>;
}

/** Lock files this process holds, so opening the same directory twice in one process is refused. */
const heldByThisProcess = new Set<string>();

function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: the process exists but belongs to someone else, which still means the directory is in use.
    return (err as StorageError).code === 'EPERM';
  }
}

/**
 * This boot of the machine, or '-' where Linux does not say. A lock written before a reboot (a power
 * loss) names a pid that may now belong to an unrelated live process: the boot id tells them apart.
 */
function currentBootId(): string {
  try {
    const id = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    return id.length > 0 && !id.includes(' ') ? id : '-';
  } catch {
    return '-';
  }
}

const bootId = currentBootId();

/** `<pid> <boot id>\n`. */
function lockContent(): Buffer {
  return Buffer.from(`${process.pid} ${bootId}\n`);
}

/**
 * The owner a lock file names, or undefined for a stale one. Only a complete line counts: the lock is
 * written without an fsync, so after a power loss it may hold a cut-short pid ("1" of "1234") or noise.
 * A bare pid line (an older version's lock) still counts.
 */
function parseOwner(content: Uint8Array): number | undefined {
  const text = Buffer.from(content).toString('utf8');
  if (!text.endsWith('\n')) return undefined;
  const [pidText, boot, ...rest] = text.slice(0, -1).split(' ');
  if (rest.length > 0 || pidText === undefined || !/^[1-9][0-9]{0,9}$/.test(pidText)) return undefined;
  if (boot !== undefined && boot !== '-' && bootId !== '-' && boot !== bootId) return undefined;
  const pid = Number(pidText);
  return Number.isSafeInteger(pid) ? pid : undefined;
}

async function readOwner(storage: Storage, path: string): Promise<number | undefined | 'gone'> {
  try {
    return parseOwner(await storage.readFile(path));
  } catch (err) {
    if ((err as StorageError).code === 'ENOENT') return 'gone';
    throw err;
  }
}

/**
 * Takes <dir>/LOCK. A lock naming a live process refuses with LockError. A lock naming a dead
 * process, or an earlier boot of the machine, or no complete line (a crash between creating and
 * writing it, or a power loss that cut it short), is stale and taken over.
 * A lock naming our own pid that this process does not hold is stale too: in a container the
 * service is usually pid 1 on every start. Two processes taking over the same stale lock at the same
 * moment can both succeed; closing that window needs flock(2), which Node does not offer.
 */
export async function acquireLock(storage: Storage, dir: string, logger: PersistLogger): Promise<DirLock> {
  const path = resolve(join(dir, lockFileName));
  if (heldByThisProcess.has(path)) throw new LockError(path, process.pid, `data directory ${dir} is already open in this process`);
  const content = lockContent();
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      await storage.createExclusive(path, content);
      heldByThisProcess.add(path);
      return makeLock(storage, path);
    } catch (err) {
      if ((err as StorageError).code !== 'EEXIST') throw err;
    }
    const owner = await readOwner(storage, path);
    if (owner === 'gone') continue;
    if (owner !== undefined && owner !== process.pid && isProcessAlive(owner)) {
      throw new LockError(path, owner, `data directory ${dir} is in use by process ${owner} (${path}); stop that process first, or delete the lock file if it is not an authd`);
    }
    logger.warn({ lock: path, stalePid: owner ?? null }, 'taking over a stale lock file');
    try {
      await storage.unlink(path);
    } catch (err) {
      if ((err as StorageError).code !== 'ENOENT') throw err;
    }
  }
  throw new LockError(path, undefined, `could not take ${path}: another process keeps creating it`);
}

function makeLock(storage: Storage, path: string): DirLock {
  let released = false;
  return {
    path,
    async release(): Promise<void> {
      if (released) return;
      released = true;
      heldByThisProcess.delete(path);
      try {
        await storage.unlink(path);
      } catch (err) {
        if ((err as StorageError).code !== 'ENOENT') throw err;
      }
    },
  };
}
