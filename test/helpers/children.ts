// The test process's child processes and temporary directories, killed and removed when it exits (normally or by signal), so none is ever left behind.

import type { ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';

/** Children still running: add on spawn, delete on exit. */
export const liveChildren = new Set<ChildProcess>();
/** Temporary roots not yet disposed of: add on creation, delete once removed. */
export const liveRoots = new Set<string>();

function killAllChildren(): void {
  for (const child of liveChildren) {
    try { child.kill('SIGKILL'); } catch { /* already gone */ }
  }
  liveChildren.clear();
  for (const root of liveRoots) {
    try { rmSync(root, { recursive: true, force: true }); } catch { /* best effort: a dying child may still hold it */ }
  }
  liveRoots.clear();
}

process.on('exit', killAllChildren);
for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143], ['SIGHUP', 129]] as const) {
  process.once(signal, () => {
    killAllChildren();
    process.exit(code);
  });
}
