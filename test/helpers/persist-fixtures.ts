// Test doubles and fixtures for the persistence tests: a tiny Replayable state, records, a recording logger, temp dirs, and storage wrappers that gate or fail operations.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EntityKind, LogRecord, Op, User } from '../../src/domain/entities.js';
import { entityKinds } from '../../src/domain/entities.js';
import type { PersistLogger, Replayable, SnapshotSource } from '../../src/persist/replayable.js';
import { NodeStorage, type FileLock, type ReadableFile, type Storage, type WritableFile } from '../../src/persist/storage.js';

/** A stand-in for src/store/state.ts: one Map per kind, id -> value, changed only by whole-entity puts and deletes. */
export class FakeState implements Replayable {
  lastSeq = 0;
  readonly maps = new Map<EntityKind, Map<string, unknown>>(entityKinds.map((k) => [k, new Map<string, unknown>()]));
  loadCalls = 0;

  apply(record: LogRecord): void {
    for (const op of record.ops) {
      const map = this.maps.get(op.kind)!;
      if (op.op === 'put') map.set(idOf(op.value), op.value);
      else map.delete(op.id);
    }
    this.lastSeq = record.seq;
  }

  loadSection(kind: EntityKind, values: readonly unknown[]): void {
    this.loadCalls++;
    const map = this.maps.get(kind)!;
    for (const v of values) map.set(idOf(v), v);
  }

  finishLoad(baseSeq: number): void {
    this.lastSeq = baseSeq;
  }

  snapshotSource(): SnapshotSource {
    return {
      baseSeq: this.lastSeq,
      sections: entityKinds.map((kind) => ({ kind, entries: () => this.maps.get(kind)!.values() })),
    };
  }

  /** Everything, as sorted plain data, for deepEqual between two states. */
  dump(): Record<string, unknown> {
    const out: Record<string, unknown> = { lastSeq: this.lastSeq };
    for (const [kind, map] of this.maps) out[kind] = [...map.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return out;
  }
}

function idOf(value: unknown): string {
  return (value as { id?: string }).id ?? 'meta';
}

export function user(id: string, name = `user ${id}`, extra: Partial<User> = {}): User {
  return {
    id, email: `${id}@example.com`, name, status: 'ENABLED', customData: { note: `custom ${id}` },
    passwordHash: '$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaA',
    organization: 'org-1', applications: ['app-1'], groups: [], apikeys: [], createdAt: 1_700_000_000_000_000, modifiedAt: 1_700_000_000_000_000,
    ...extra,
  };
}

export function putUser(id: string, name?: string): Op {
  return { op: 'put', kind: 'user', value: user(id, name) };
}

export function record(seq: number, ...ops: Op[]): LogRecord {
  return { seq, at: 1_700_000_000_000_000 + seq, ops: ops.length > 0 ? ops : [putUser(`u${seq}`)] };
}

/** What the Committer does: append and apply in one synchronous turn, then wait for durability. */
export function commit(p: { append(r: LogRecord): Promise<void> }, state: FakeState, r: LogRecord): Promise<void> {
  const durable = p.append(r);
  state.apply(r);
  return durable;
}

/** Commits records seq from..to (inclusive), all in one turn, and waits for all of them. */
export async function commitRange(p: { append(r: LogRecord): Promise<void> }, state: FakeState, from: number, to: number): Promise<void> {
  const pending: Promise<void>[] = [];
  for (let seq = from; seq <= to; seq++) pending.push(commit(p, state, record(seq)));
  await Promise.all(pending);
}

export interface LogEntry {
  readonly level: 'info' | 'warn' | 'error';
  readonly obj: Record<string, unknown>;
  readonly msg: string | undefined;
}

export class RecordingLogger implements PersistLogger {
  readonly entries: LogEntry[] = [];
  info(obj: object, msg?: string): void { this.entries.push({ level: 'info', obj: obj as Record<string, unknown>, msg }); }
  warn(obj: object, msg?: string): void { this.entries.push({ level: 'warn', obj: obj as Record<string, unknown>, msg }); }
  error(obj: object, msg?: string): void { this.entries.push({ level: 'error', obj: obj as Record<string, unknown>, msg }); }
  at(level: LogEntry['level']): LogEntry[] { return this.entries.filter((e) => e.level === level); }
}

/** A fresh directory under the OS temp dir; remove it with the returned cleanup. */
export function tempDir(prefix = 'persist-'): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export function turn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

export function ioError(code: string): Error {
  return Object.assign(new Error(`${code}: simulated`), { code });
}

export type StorageOp = 'write' | 'datasync' | 'sync' | 'truncate' | 'close' | 'create' | 'openAppend' | 'rename' | 'fsyncDir';

/**
 * Real files, with hooks: `before(op, path)` runs before each file operation and may throw (an
 * injected I/O error) or return a promise to hold the operation (a slow disk). Counts every op and
 * the most datasyncs ever in flight at once.
 */
export class HookedStorage implements Storage {
  readonly counts = new Map<StorageOp, number>();
  inFlightDatasyncs = 0;
  maxInFlightDatasyncs = 0;
  before: (op: StorageOp, path: string) => void | Promise<void> = () => undefined;
  private readonly real = new NodeStorage();

  private async hook(op: StorageOp, path: string): Promise<void> {
    this.counts.set(op, (this.counts.get(op) ?? 0) + 1);
    await this.before(op, path);
  }

  count(op: StorageOp): number {
    return this.counts.get(op) ?? 0;
  }

  private wrap(file: WritableFile): WritableFile {
    return {
      path: file.path,
      write: async (data) => { await this.hook('write', file.path); await file.write(data); },
      datasync: async () => {
        this.inFlightDatasyncs++;
        this.maxInFlightDatasyncs = Math.max(this.maxInFlightDatasyncs, this.inFlightDatasyncs);
        try {
          await this.hook('datasync', file.path);
          await file.datasync();
        } finally {
          this.inFlightDatasyncs--;
        }
      },
      sync: async () => { await this.hook('sync', file.path); await file.sync(); },
      truncate: async (n) => { await this.hook('truncate', file.path); await file.truncate(n); },
      close: async () => { await this.hook('close', file.path); await file.close(); },
    };
  }

  mkdirp(dir: string): Promise<void> { return this.real.mkdirp(dir); }
  list(dir: string): Promise<string[]> { return this.real.list(dir); }
  exists(path: string): Promise<boolean> { return this.real.exists(path); }
  readFile(path: string): Promise<Uint8Array> { return this.real.readFile(path); }
  openRead(path: string): Promise<ReadableFile> { return this.real.openRead(path); }
  async openAppend(path: string): Promise<WritableFile> { await this.hook('openAppend', path); return this.wrap(await this.real.openAppend(path)); }
  async create(path: string): Promise<WritableFile> { await this.hook('create', path); return this.wrap(await this.real.create(path)); }
  lockExclusive(path: string, info: Uint8Array): Promise<FileLock | undefined> { return this.real.lockExclusive(path, info); }
  async rename(from: string, to: string): Promise<void> { await this.hook('rename', from); await this.real.rename(from, to); }
  unlink(path: string): Promise<void> { return this.real.unlink(path); }
  async fsyncDir(dir: string): Promise<void> { await this.hook('fsyncDir', dir); await this.real.fsyncDir(dir); }
}

/** A promise with its resolve exposed, to hold a storage operation until the test lets it go. */
export function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => { open = resolve; });
  return { promise, open };
}
