// The storage seam: every file operation of the log, snapshots and lock goes through Storage, so tests can simulate power loss and I/O errors.
//
// The interface is shaped by what a crash simulator needs to know: data becomes durable only through
// WritableFile.datasync()/sync(), and a create, rename or unlink only through fsyncDir() of its
// directory. A double can keep everything since the last of those apart and drop or garble it.

import { constants as fsConstants, promises as fsp, readSync } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { privateDirMode, privateFileMode } from '../config/limits.js';
import { holdFileLock, type FileLock } from './lock.js';

export type { FileLock } from './lock.js';

/** A file open for writing at its end. Writes are not durable until datasync() or sync() resolves. */
export interface WritableFile {
  readonly path: string;
  /** Appends every byte of data (short writes are continued, never silently dropped). */
  write(data: Uint8Array): Promise<void>;
  /** fdatasync: the data and the size, not the times. Enough for an append-only log. */
  datasync(): Promise<void>;
  /** fsync: data and all metadata. Used before a snapshot is renamed into place. */
  sync(): Promise<void>;
  /** Cuts the file to length bytes; later writes continue from there. */
  truncate(length: number): Promise<void>;
  close(): Promise<void>;
}

/** A file open for positioned reads. */
export interface ReadableFile {
  readonly path: string;
  readonly size: number;
  /** Reads up to length bytes at position into target[0..]; resolves with the count read (0 at end of file). */
  read(target: Uint8Array, length: number, position: number): Promise<number>;
  close(): Promise<void>;
}

/** A Node errno-style error: Storage implementations reject with these so callers can test `code`. */
export interface StorageError extends Error {
  code?: string;
}

export interface Storage {
  /** Creates dir and its parents if missing (mode privateDirMode). */
  mkdirp(dir: string): Promise<void>;
  /** The names (not paths) of the entries of dir, in no particular order. */
  list(dir: string): Promise<string[]>;
  exists(path: string): Promise<boolean>;
  readFile(path: string): Promise<Uint8Array>;
  openRead(path: string): Promise<ReadableFile>;
  /** Opens path for appending, creating it empty if missing. */
  openAppend(path: string): Promise<WritableFile>;
  /** Creates path empty (cutting it to zero if it exists) and opens it for writing; used for snapshot temporaries. */
  create(path: string): Promise<WritableFile>;
  /**
   * Locks path (created if missing) against every other opener, and writes info into it (not fsynced);
   * undefined while another holds it. Used for the data directory's LOCK file (lock.ts).
   */
  lockExclusive(path: string, info: Uint8Array): Promise<FileLock | undefined>;
  rename(from: string, to: string): Promise<void>;
  unlink(path: string): Promise<void>;
  /** Makes creates, renames and unlinks inside dir durable. */
  fsyncDir(dir: string): Promise<void>;
}

class NodeWritableFile implements WritableFile {
  constructor(readonly path: string, private readonly handle: FileHandle) {}

  async write(data: Uint8Array): Promise<void> {
    // Opened with O_APPEND, so the kernel places every write at the current end, including after truncate().
    let done = 0;
    while (done < data.length) {
      const { bytesWritten } = await this.handle.write(data, done, data.length - done);
      if (bytesWritten <= 0) throw Object.assign(new Error(`write to ${this.path} made no progress`), { code: 'EIO' });
      done += bytesWritten;
    }
  }

  datasync(): Promise<void> {
    return this.handle.datasync();
  }

  sync(): Promise<void> {
    return this.handle.sync();
  }

  truncate(length: number): Promise<void> {
    return this.handle.truncate(length);
  }

  close(): Promise<void> {
    return this.handle.close();
  }
}

class NodeReadableFile implements ReadableFile {
  constructor(readonly path: string, readonly size: number, private readonly handle: FileHandle) {}

  /**
   * Synchronous: a positioned read of a regular file is mostly a copy out of the page cache, cheaper than the
   * round trip through libuv's thread pool, which on cores busy with a start-up's decoding and collections
   * kept the snapshot load waiting for longer than the copies took. A read from the disk holds the event loop
   * meanwhile, which is why only start-up and offline tools read files.
   */
  read(target: Uint8Array, length: number, position: number): Promise<number> {
    try {
      return Promise.resolve(readSync(this.handle.fd, target, 0, length, position));
    } catch (err) {
      return Promise.reject(err as Error);
    }
  }

  close(): Promise<void> {
    return this.handle.close();
  }
}

/** The real file system. */
export class NodeStorage implements Storage {
  async mkdirp(dir: string): Promise<void> {
    // An explicit mode: the umask can only take bits away, so nothing created here is ever more open.
    await fsp.mkdir(dir, { recursive: true, mode: privateDirMode });
  }

  list(dir: string): Promise<string[]> {
    return fsp.readdir(dir);
  }

  async exists(path: string): Promise<boolean> {
    try {
      await fsp.access(path, fsConstants.F_OK);
      return true;
    } catch (err) {
      if ((err as StorageError).code === 'ENOENT') return false;
      throw err;
    }
  }

  async readFile(path: string): Promise<Uint8Array> {
    return fsp.readFile(path);
  }

  async openRead(path: string): Promise<ReadableFile> {
    const handle = await fsp.open(path, 'r');
    try {
      const { size } = await handle.stat();
      return new NodeReadableFile(path, size, handle);
    } catch (err) {
      await handle.close();
      throw err;
    }
  }

  async openAppend(path: string): Promise<WritableFile> {
    return new NodeWritableFile(path, await fsp.open(path, 'a', privateFileMode));
  }

  async create(path: string): Promise<WritableFile> {
    // 'w' would not append after a truncate(); O_APPEND keeps both kinds of file behaving the same.
    const flags = fsConstants.O_CREAT | fsConstants.O_TRUNC | fsConstants.O_WRONLY | fsConstants.O_APPEND;
    return new NodeWritableFile(path, await fsp.open(path, flags, privateFileMode));
  }

  async lockExclusive(path: string, info: Uint8Array): Promise<FileLock | undefined> {
    // A kernel lock that dies with this process: see lock.ts.
    return holdFileLock(path, info);
  }

  rename(from: string, to: string): Promise<void> {
    return fsp.rename(from, to);
  }

  unlink(path: string): Promise<void> {
    return fsp.unlink(path);
  }

  async fsyncDir(dir: string): Promise<void> {
    const handle = await fsp.open(dir, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  }
}
