// Finds a published uWebSockets.js build whose native binary loads on this Node and host; never a package's pure-JS fallback.

import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type * as Uws from 'uWebSockets.js';

/** A published build: its npm package, where its root and binaries sit from its main file's directory, and whether its binaries trace to official sources. */
interface UwsBuild {
  readonly packageName: string;
  readonly rootFromMain: string;
  readonly binariesFromRoot: string;
  readonly traceable: boolean;
}

/**
 * Traceable builds first. Each ships one binary per platform, architecture and Node ABI
 * (process.versions.modules). The binary is required directly: the packages' own loaders answer a failed
 * load with a slow pure-JS server (trufflesuite's) or an error that hides the cause. docs/uws-builds.md
 * says what each build is: the btc-vision binaries come from changed sources that are not published, so
 * they are loaded only when the operator asks for uWS by name (FRONT_END=uws).
 */
const uwsBuilds: readonly UwsBuild[] = [
  // `uWebSockets.js` is our alias of @trufflesuite/uws-js-unofficial (package.json).
  { packageName: 'uWebSockets.js', rootFromMain: '..', binariesFromRoot: 'binaries', traceable: true },
  { packageName: '@btc-vision/uwebsockets.js', rootFromMain: '.', binariesFromRoot: '.', traceable: false },
];

export type UwsLoad =
  | { readonly loaded: true; readonly uws: typeof Uws; readonly build: string }
  | { readonly loaded: false; readonly reason: string };

/** The first line of an error, without the stack: what a log line can carry. */
function firstLine(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return text.split('\n').find((line) => line.trim() !== '')?.trim() ?? 'no reason given';
}

/** Loads the first build with a binary for this platform, architecture and ABI that the host can load; untraceable builds only if asked. */
export function loadUws(opts: { readonly untraceable: boolean }): UwsLoad {
  const require = createRequire(import.meta.url);
  const binaryName = `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`;
  const failures: string[] = [];
  for (const build of uwsBuilds) {
    let root: string;
    let version: string;
    try {
      root = join(dirname(require.resolve(build.packageName)), build.rootFromMain);
      version = (require(join(root, 'package.json')) as { version: string }).version;
    } catch {
      failures.push(`${build.packageName}: not installed`);
      continue;
    }
    const binary = join(root, build.binariesFromRoot, binaryName);
    if (!existsSync(binary)) {
      failures.push(`${build.packageName} ${version}: no binary for this platform and Node ABI`);
      continue;
    }
    if (!build.traceable && !opts.untraceable) {
      failures.push(`${build.packageName} ${version}: not traceable to published sources, used only with FRONT_END=uws (docs/uws-builds.md)`);
      continue;
    }
    try {
      const uws = require(binary) as typeof Uws;
      return { loaded: true, uws, build: `${build.packageName} ${version}` };
    } catch (err) {
      failures.push(`${build.packageName} ${version}: ${firstLine(err)}`);
    }
  }
  return { loaded: false, reason: `no uWebSockets.js build loads ${binaryName} (Node ${process.versions.node}): ${failures.join('; ')}` };
}
