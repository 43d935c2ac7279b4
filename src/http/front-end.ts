// Chooses the HTTP front end (uWebSockets.js where a build loads, else node:http, or the one FRONT_END names) and starts it.

import type { FrontEndSetting } from '../config/config.js';
import type { AdapterOptions, RunningServer } from './adapter.js';
import { startNodeServer } from './front-node.js';
import { startUwsServer } from './front-uws.js';
import { loadUws } from './uws-loader.js';

export interface FrontEnd {
  readonly kind: 'uws' | 'node';
  /** The uWS build (package and version), for uws. */
  readonly build: string | undefined;
  /** Why this one: what the start log says. */
  readonly reason: string;
  start(opts: AdapterOptions): Promise<RunningServer>;
}

export class FrontEndError extends Error {}

/** Decided before any data is touched: a server that cannot serve must not bootstrap a data directory either. */
export function chooseFrontEnd(setting: FrontEndSetting): FrontEnd {
  if (setting === 'node') {
    return { kind: 'node', build: undefined, reason: 'FRONT_END=node', start: startNodeServer };
  }
  // Asking for uWS by name is also consent to a build whose sources are not published (docs/uws-builds.md).
  const load = loadUws({ untraceable: setting === 'uws' });
  if (load.loaded) {
    return {
      kind: 'uws', build: load.build, reason: setting === 'uws' ? 'FRONT_END=uws' : 'a uWebSockets.js build loads on this host',
      start: (opts) => startUwsServer(load.uws, opts),
    };
  }
  if (setting === 'uws') throw new FrontEndError(`FRONT_END=uws, but ${load.reason}`);
  return { kind: 'node', build: undefined, reason: load.reason, start: startNodeServer };
}
