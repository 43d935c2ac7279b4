// What persistence needs from its owner: the replayable state (src/store/state.ts satisfies it) and a logger.

import type { EntityKind, LogRecord } from '../domain/entities.js';

export interface SnapshotSection {
  readonly kind: EntityKind;
  /** A fresh iterator over the live values. It is consumed across many event-loop turns while the
   *  state keeps changing; Map iterators tolerate that, and replaying the log after baseSeq repairs it. */
  readonly entries: () => Iterator<unknown>;
}

export interface SnapshotSource {
  /** The state's lastSeq at the moment the source was taken. */
  readonly baseSeq: number;
  readonly sections: readonly SnapshotSection[];
  /**
   * The form an entity is written in: a copy whose repeated strings went through `share`, which puts
   * them in the snapshot's dictionary (src/store/compact.ts says which). Without it, entities are written as they are.
   */
  readonly shareStrings?: (kind: EntityKind, value: unknown, share: (s: string) => unknown, shareList: (list: readonly string[]) => unknown) => unknown;
}

/**
 * The state machine as persistence sees it. Contract with the writer of records: a record is passed
 * to Persistence.append() and to apply() in the same synchronous turn, so between turns
 * `lastSeq + 1` is always the seq the log expects next.
 */
export interface Replayable {
  readonly lastSeq: number;
  /** Pure, deterministic, idempotent for whole-entity puts and deletes. */
  apply(record: LogRecord): void;
  /**
   * Bulk-loads snapshot entities of one kind, before any apply(): once per chunk, kinds in file order
   * (meta, organizations, applications, groups, then users, as written). It owns `values` from then on.
   */
  loadSection(kind: EntityKind, values: readonly unknown[]): void;
  /** Sets lastSeq = baseSeq after a snapshot load. */
  finishLoad(baseSeq: number): void;
  snapshotSource(): SnapshotSource;
}

/** The subset of pino this layer uses, so it does not depend on pino. */
export interface PersistLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}
