// The data directory lock: an exclusive flock(2) on <dir>/LOCK, held by an open file for the process's lifetime, so the kernel drops it when the holder dies.
//
// Node has no flock call and the service ships no native addon, so the lock is taken by util-linux's `flock`
// command on our own open file, passed to it as its fd 3. A flock(2) lock belongs to the open file description,
// which the child shares with us: when the child exits the lock stays held by our descriptor, and only closing it
// (release(), or the death of this process, SIGKILL included) drops it. No pid is ever read back: the pid written
// into the file is for people (`cat LOCK`), and a lock whose holder is alive is held whatever the file says,
// in whichever pid namespace (container) the holder runs.

import { spawnSync } from 'node:child_process';
import { closeSync, constants as fsConstants, fchmodSync, fstatSync, ftruncateSync, openSync, statSync, writeSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { flockCommandMsMax, privateFileMode } from '../config/limits.js';
import { lockFileName } from './layout.js';

/** The directory is locked by another open file: another authd or authctl, here or in another container. */
export class LockError extends Error {
  readonly code = 'dir_locked';
  constructor(readonly path: string, message: string) {
    super(message);
    this.name = 'LockError';
  }
}

/** The lock could not be taken at all (no `flock` command, or it failed): nothing may open the directory. */
export class LockUnavailableError extends Error {
  readonly code = 'lock_unavailable';
  constructor(readonly path: string, message: string) {
    super(message);
    this.name = 'LockUnavailableError';
  }
}

/** An exclusive lock on a file, held until release() or until this process dies, whichever comes first. */
export interface FileLock {
  readonly path: string;
  /** Drops the lock; the file stays. Safe to call more than once. */
  release(): Promise<void>;
}

/** The held lock; release() drops it, and the LOCK file stays (see holdFileLock). */
export type DirLock = FileLock;

/** What acquireLock asks of a Storage (src/persist/storage.ts, which takes its locks from holdFileLock below). */
interface LockingStorage {
  lockExclusive(path: string, info: Uint8Array): Promise<FileLock | undefined>;
  readFile(path: string): Promise<Uint8Array>;
}

/** The lock command, looked up on PATH: util-linux's; busybox's lists the same short options (`-x -n FD`). */
const flockCommand = 'flock';
/** A LOCK replaced between our open and our lock (by hand, or an older version's release) is opened again, this many times. */
const lockAttemptsMax = 3;
/** How much of a held LOCK file's content an error message quotes. */
const holderInfoCharsMax = 80;

/**
 * Takes <dir>/LOCK, or refuses with LockError while any other open file holds it (another process, or
 * another opener in this one). Throws LockUnavailableError when no lock can be taken: the directory is
 * then not opened at all, since without the lock two processes could both append to the log.
 */
export async function acquireLock(storage: LockingStorage, dir: string): Promise<DirLock> {
  const path = resolve(join(dir, lockFileName));
  const held = await storage.lockExclusive(path, Buffer.from(`${process.pid}\n`));
  if (held === undefined) {
    const holder = await holderInfo(storage, path);
    throw new LockError(path, `data directory ${dir} is in use: another process holds the lock on ${path}${holder}; \`flock -n ${path} true\` exits 0 once it is free`);
  }
  return held;
}

/** What the last holder wrote into the file (its pid, in its own pid namespace), for the message only. */
async function holderInfo(storage: LockingStorage, path: string): Promise<string> {
  try {
    const text = Buffer.from(await storage.readFile(path)).toString('utf8').trim().slice(0, holderInfoCharsMax);
    return /^[\x20-\x7e]+$/.test(text) ? `; its last holder wrote "${text}" into it` : '';
  } catch {
    return '';
  }
}

/**
 * The real file system's lock (NodeStorage.lockExclusive): opens path (created mode privateFileMode), takes
 * flock(LOCK_EX | LOCK_NB) on that open file through the `flock` command, and writes info into it. Returns
 * undefined when another open file holds the lock. The file is never removed, not even on release: a process
 * that opened it before the removal could then lock the removed file while a third locks a new one.
 */
export function holdFileLock(path: string, info: Uint8Array): FileLock | undefined {
  for (let attempt = 0; attempt < lockAttemptsMax; attempt++) {
    // A raw descriptor, not a FileHandle: a FileHandle nobody references any more is closed by the garbage collector.
    const fd = openSync(path, fsConstants.O_RDWR | fsConstants.O_CREAT | fsConstants.O_NOFOLLOW, privateFileMode);
    let keep = false;
    try {
      if (!flockExclusive(fd, path)) return undefined;
      // Locked the file we opened; if LOCK is by now another file, that one is what the next opener will lock.
      const opened = fstatSync(fd);
      const current = statOrUndefined(path);
      if (current === undefined || current.ino !== opened.ino || current.dev !== opened.dev) continue;
      if ((opened.mode & 0o777) !== privateFileMode) fchmodSync(fd, privateFileMode);
      ftruncateSync(fd, 0);
      writeSync(fd, info, 0, info.length, 0);
      keep = true;
      return descriptorLock(path, fd);
    } finally {
      if (!keep) closeSync(fd);
    }
  }
  throw new LockUnavailableError(path, `could not lock ${path}: it was replaced ${lockAttemptsMax} times while being locked`);
}

/** True when fd now holds the lock, false when another open file does. */
function flockExclusive(fd: number, path: string): boolean {
  // fd becomes the child's fd 3: the same open file description, so the lock the child takes is ours.
  const result = spawnSync(flockCommand, ['-x', '-n', '3'], { stdio: ['ignore', 'ignore', 'pipe', fd], timeout: flockCommandMsMax });
  const stderr = result.stderr?.toString('utf8').trim() ?? '';
  if (result.error !== undefined) {
    if ((result.error as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new LockUnavailableError(path,
        `cannot lock ${path}: the \`${flockCommand}\` command is not on PATH (${process.env['PATH'] ?? ''}). The data directory lock needs it ` +
        '(Debian, Ubuntu, Fedora: package util-linux; Alpine: busybox or util-linux; macOS: `brew install flock`)');
    }
    throw new LockUnavailableError(path, `cannot lock ${path}: running \`${flockCommand}\` failed: ${result.error.message}`);
  }
  if (result.status === 0) return true;
  // -n: exit status 1, and nothing on stderr, when the lock is held. Anything else is reported as a failure: a
  // refusal either way, never a start without the lock.
  if (result.status === 1 && stderr === '') return false;
  const how = result.signal !== null ? `was killed by ${result.signal}` : `exited with status ${result.status}`;
  throw new LockUnavailableError(path, `cannot lock ${path}: \`${flockCommand} -x -n 3\` ${how}${stderr === '' ? '' : `: ${stderr}`}`);
}

function statOrUndefined(path: string): ReturnType<typeof statSync> | undefined {
  try {
    return statSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

function descriptorLock(path: string, fd: number): FileLock {
  let open = true;
  return {
    path,
    release(): Promise<void> {
      if (open) {
        open = false;
        closeSync(fd);
      }
      return Promise.resolve();
    },
  };
}
