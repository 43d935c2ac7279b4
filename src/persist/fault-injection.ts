// Test-only fault injection for the real server process: kill points at the dangerous moments of the log and snapshot writers, and simulated disk-full / fsync errors. Off (and absent from every code path) unless its environment variables are set.
//
// Installed by main.ts as a wrapper around the real Storage only when one of these is set:
//   AUTHD_TEST_CRASH_AT=<point>:<n>      SIGKILL this process at the n-th time it reaches <point>:
//     before-fsync    before an fdatasync of a log segment
//     after-fsync     after that fdatasync succeeded, before any reply is sent
//     snapshot-write  at a write into a snapshot's temporary file (mid-snapshot)
//     before-rename   before a snapshot's temporary file is renamed into place
//     after-rename    after the rename, before its directory fsync (and before any clean-up)
//     before-cleanup  before an obsolete log segment or snapshot is removed (rename done and synced)
//   AUTHD_TEST_FAIL_WRITES_WHILE=<path>  while <path> exists, every write fails with ENOSPC (disk full)
//   AUTHD_TEST_FAIL_FSYNC_WHILE=<path>   while <path> exists, every log fdatasync fails with EIO
// Nothing here runs when they are unset: main.ts passes the plain NodeStorage then.

import { existsSync } from 'node:fs';
import { basename } from 'node:path';
import type { ReadableFile, Storage, WritableFile } from './storage.js';

export const crashPoints = ['before-fsync', 'after-fsync', 'snapshot-write', 'before-rename', 'after-rename', 'before-cleanup'] as const;
export type CrashPoint = (typeof crashPoints)[number];

export interface FaultSettings {
  readonly crashAt?: { readonly point: CrashPoint; readonly n: number };
  readonly failWritesWhile?: string;
  readonly failFsyncWhile?: string;
}

/** The settings from the environment, or undefined when none is set (the normal case). Throws on a malformed value. */
export function faultSettingsFromEnv(env: NodeJS.ProcessEnv): FaultSettings | undefined {
  const crash = env['AUTHD_TEST_CRASH_AT'];
  const failWritesWhile = env['AUTHD_TEST_FAIL_WRITES_WHILE'] || undefined;
  const failFsyncWhile = env['AUTHD_TEST_FAIL_FSYNC_WHILE'] || undefined;
  if ((crash === undefined || crash === '') && failWritesWhile === undefined && failFsyncWhile === undefined) return undefined;
  let crashAt: FaultSettings['crashAt'];
  if (crash !== undefined && crash !== '') {
    const colon = crash.lastIndexOf(':');
    const point = crash.slice(0, colon) as CrashPoint;
    const n = Number(crash.slice(colon + 1));
    if (colon < 0 || !crashPoints.includes(point) || !Number.isSafeInteger(n) || n < 1) {
      throw new Error(`AUTHD_TEST_CRASH_AT must be <point>:<n> with point one of ${crashPoints.join(', ')}, got "${crash}"`);
    }
    crashAt = { point, n };
  }
  return { crashAt, failWritesWhile, failFsyncWhile };
}

function errno(code: string, message: string): Error {
  return Object.assign(new Error(`${code}: ${message} (injected by AUTHD_TEST_*)`), { code });
}

const isSegment = (path: string): boolean => basename(path).startsWith('wal-');
const isSnapshotTmp = (path: string): boolean => basename(path).startsWith('snapshot-') && path.endsWith('.tmp');

/** Wraps storage with the faults of settings. */
export function withFaults(storage: Storage, settings: FaultSettings): Storage {
  const reached = new Map<CrashPoint, number>();
  const at = (point: CrashPoint): void => {
    if (settings.crashAt?.point !== point) return;
    const n = (reached.get(point) ?? 0) + 1;
    reached.set(point, n);
    // SIGKILL, not exit: no handler, no flush, exactly what a crash leaves behind.
    if (n === settings.crashAt.n) process.kill(process.pid, 'SIGKILL');
  };
  const fails = (path: string | undefined): boolean => path !== undefined && existsSync(path);

  const wrap = (file: WritableFile): WritableFile => ({
    path: file.path,
    write: async (data) => {
      if (isSnapshotTmp(file.path)) at('snapshot-write');
      if (fails(settings.failWritesWhile)) throw errno('ENOSPC', `no space left writing ${file.path}`);
      return file.write(data);
    },
    datasync: async () => {
      if (isSegment(file.path)) {
        at('before-fsync');
        if (fails(settings.failFsyncWhile)) throw errno('EIO', `fdatasync of ${file.path} failed`);
      }
      await file.datasync();
      if (isSegment(file.path)) at('after-fsync');
    },
    sync: () => file.sync(),
    truncate: (length) => file.truncate(length),
    close: () => file.close(),
  });

  let renamed = false;
  return {
    mkdirp: (dir) => storage.mkdirp(dir),
    list: (dir) => storage.list(dir),
    exists: (path) => storage.exists(path),
    readFile: (path) => storage.readFile(path),
    openRead: (path): Promise<ReadableFile> => storage.openRead(path),
    openAppend: async (path) => wrap(await storage.openAppend(path)),
    create: async (path) => wrap(await storage.create(path)),
    lockExclusive: (path, info) => storage.lockExclusive(path, info),
    rename: async (from, to) => {
      at('before-rename');
      await storage.rename(from, to);
      renamed = true;
    },
    unlink: async (path) => {
      if (!path.endsWith('.tmp') && basename(path) !== 'LOCK') at('before-cleanup');
      return storage.unlink(path);
    },
    fsyncDir: async (dir) => {
      if (renamed) {
        renamed = false;
        at('after-rename');
      }
      return storage.fsyncDir(dir);
    },
  };
}
