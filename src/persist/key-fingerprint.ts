// The server key's fingerprint in the data directory: which key the data was written with, read and replaced atomically.
//
// <dir>/KEY-FINGERPRINT holds one line, `authd-key-fingerprint-v1 <32 hex digits>`. It is written at the
// first start (before any record), at the first start of a directory an older version wrote, and by
// `authctl rotate-key`; replaced as tmp -> fsync -> rename -> fsync dir, so a crash leaves the old or the new.

import { dirname, join, resolve } from 'node:path';
import { classifyDir, keyFingerprintFileName, tmpSuffix } from './layout.js';
import type { Storage } from './storage.js';

const formatTag = 'authd-key-fingerprint-v1';
const linePattern = /^authd-key-fingerprint-v1 ([0-9a-f]{32})\n?$/;

export class KeyFingerprintError extends Error {
  constructor(readonly path: string, message: string) {
    super(message);
    this.name = 'KeyFingerprintError';
  }
}

export function keyFingerprintPath(dir: string): string {
  return join(dir, keyFingerprintFileName);
}

/** The fingerprint recorded in dir, or undefined if none is (a new directory, or one an older version wrote). */
export async function readKeyFingerprint(storage: Storage, dir: string): Promise<string | undefined> {
  const path = keyFingerprintPath(dir);
  if (!(await storage.exists(path))) return undefined;
  const text = Buffer.from(await storage.readFile(path)).toString('latin1');
  const m = linePattern.exec(text);
  if (m === null) throw new KeyFingerprintError(path, `${path} is not a key fingerprint file (expected "${formatTag} <32 hex digits>")`);
  return m[1]!;
}

/** True if dir holds a log segment or a snapshot: data that some server key's API Key secrets belong to. */
export async function holdsData(storage: Storage, dir: string): Promise<boolean> {
  if (!(await storage.exists(dir))) return false;
  const listing = classifyDir(dir, await storage.list(dir));
  return listing.segments.length > 0 || listing.snapshots.length > 0;
}

/** Records fingerprint in dir (created if missing), replacing what was there, durably. */
export async function writeKeyFingerprint(storage: Storage, dir: string, fingerprint: string): Promise<void> {
  if (!/^[0-9a-f]{32}$/.test(fingerprint)) throw new TypeError('a key fingerprint is 32 hex digits');
  if (!(await storage.exists(dir))) {
    await storage.mkdirp(dir);
    // A new directory's own name must be durable before the file in it is.
    await storage.fsyncDir(dirname(resolve(dir)));
  }
  const path = keyFingerprintPath(dir);
  // Ends in tmpSuffix: recovery removes one a crash left behind.
  const tmp = `${path}${tmpSuffix}`;
  const file = await storage.create(tmp);
  try {
    await file.write(Buffer.from(`${formatTag} ${fingerprint}\n`, 'latin1'));
    await file.sync();
  } finally {
    await file.close();
  }
  await storage.rename(tmp, path);
  await storage.fsyncDir(dir);
}
