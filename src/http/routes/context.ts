// What route handlers are given to work with, and the small helpers they share.

import type { ApiKeySecrets } from '../../auth/apikey-secrets.js';
import type { HashPool } from '../../auth/hash-pool.js';
import { DomainError } from '../../domain/errors.js';
import type { Authenticator } from '../../service/authenticator.js';
import type { Committer } from '../../service/committer.js';
import { isWellFormedId } from '../../store/ids.js';
import type { State } from '../../store/state.js';
import type { SnapshotWritten } from '../../persist/snapshot.js';
import type { BodyPiece } from '../adapter.js';
import type { Metrics } from '../metrics.js';
import type { Renderer } from '../render.js';

export interface RouteDeps {
  readonly state: State;
  readonly committer: Committer;
  readonly authenticator: Authenticator;
  readonly renderer: Renderer;
  readonly pool: HashPool;
  readonly secrets: ApiKeySecrets;
  readonly snapshots: { snapshot(): Promise<SnapshotWritten | undefined> };
  readonly metrics: Metrics;
}

/** A path id, checked before any lookup. */
export function pathId(params: Readonly<Record<string, string>>, name: string): string {
  const value = params[name] ?? '';
  if (!isWellFormedId(value)) throw new DomainError('invalid_id', `${name}: not a well-formed identifier.`);
  return value;
}

/** `{"<key>":<json>}` in pieces, so a large cached json is not copied into a new string (BodyText, src/http/adapter.ts). */
export function keyed(key: string, json: BodyPiece): readonly BodyPiece[] {
  return [`{"${key}":`, json, '}'];
}

export function list(key: string, items: readonly string[]): string {
  return `{"${key}":[${items.join(',')}]}`;
}

export const deletedTrue = '{"deleted":true}';
