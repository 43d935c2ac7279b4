// The data directory's own mode: tightened to 0700 at start when it was left open to group or others.
//
// Files inside an existing directory may be 0644 from an older version; a 0700 directory keeps every one
// of them out of other users' reach without touching each file.

import { chmodSync, statSync } from 'node:fs';
import { groupOtherModeBits, privateDirMode } from '../config/limits.js';
import type { PersistLogger } from './replayable.js';

/** Sets dir to privateDirMode if group or others had any access, with a warning naming the old mode; nothing if dir is missing. */
export function restrictDataDir(dir: string, logger: PersistLogger): void {
  let mode: number;
  try {
    mode = statSync(dir).mode & 0o777;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  if ((mode & groupOtherModeBits) === 0) return;
  chmodSync(dir, privateDirMode);
  logger.warn({ dataDir: dir, mode: octal(mode), now: octal(privateDirMode) }, 'data directory was open to other users; its mode is now 0700');
}

function octal(mode: number): string {
  return `0${mode.toString(8).padStart(3, '0')}`;
}
