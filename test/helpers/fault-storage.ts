// A power-loss storage double behind the Storage seam: files in memory, with everything since the last fsync kept apart so a simulated crash can apply, drop or garble it (seeded).
//
// The model, close to what ext4/xfs promise and no more:
//   - file data becomes durable only through datasync()/sync() of that file; writes and truncates
//     since then are pending, and at a crash each one is applied, dropped, cut short or garbled
//     (whole 512-byte sectors zeroed or filled with noise), independently and in any combination;
//   - creates, renames and unlinks become durable only through fsyncDir() of their directory; at a
//     crash a prefix of the pending ones survives (journaled metadata is ordered);
//   - a crash can also be armed to happen at the N-th mutating operation, wherever that falls
//     (mid-batch, between a snapshot's rename and its directory fsync, during recovery itself...):
//     that operation and every later one then never complete, like a process that lost its power.
// I/O errors can be injected per operation (ENOSPC on write, partial writes, EIO on fsync).

import { posix } from 'node:path';
import type { FileLock, ReadableFile, Storage, WritableFile } from '../../src/persist/storage.js';
import { prng } from './prng.js';

/** The shared seeded generator (test/helpers/prng.ts) with the draws these tests need: the same seed replays the same crash. */
export class Rng {
  /** Uniform in [0, 1). */
  readonly next: () => number;
  constructor(readonly seed: number) {
    this.next = prng(seed);
  }

  /** Integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)]!;
  }

  bytes(n: number): Uint8Array {
    const out = new Uint8Array(n);
    for (let i = 0; i < n; i++) out[i] = Math.floor(this.next() * 256);
    return out;
  }
}

const sectorBytes = 512;

type DataOp = { readonly kind: 'write'; readonly offset: number; readonly bytes: Uint8Array } | { readonly kind: 'truncate'; readonly length: number };
type DirOp =
  | { readonly kind: 'link'; readonly name: string; readonly inode: Inode }
  | { readonly kind: 'unlink'; readonly name: string }
  | { readonly kind: 'rename'; readonly from: string; readonly to: string };

class Inode {
  data: Uint8Array;
  durable: Uint8Array;
  pending: DataOp[] = [];
  constructor(data: Uint8Array = new Uint8Array(0), durable: Uint8Array = data) {
    this.data = data;
    this.durable = durable;
  }

  write(offset: number, bytes: Uint8Array): void {
    this.data = writeAt(this.data, offset, bytes);
    this.pending.push({ kind: 'write', offset, bytes: bytes.slice() });
  }

  truncate(length: number): void {
    this.data = resize(this.data, length);
    this.pending.push({ kind: 'truncate', length });
  }

  sync(): void {
    this.durable = this.data.slice();
    this.pending = [];
  }
}

class Dir {
  entries = new Map<string, Inode>();
  durable = new Map<string, Inode>();
  pending: DirOp[] = [];
}

function writeAt(data: Uint8Array, offset: number, bytes: Uint8Array): Uint8Array {
  const out = data.length >= offset + bytes.length ? data.slice() : resize(data, offset + bytes.length);
  out.set(bytes, offset);
  return out;
}

/** Cut or extend (with zeros, as a hole reads). */
function resize(data: Uint8Array, length: number): Uint8Array {
  const out = new Uint8Array(length);
  out.set(data.subarray(0, Math.min(length, data.length)));
  return out;
}

function errno(code: string, message: string): Error {
  return Object.assign(new Error(`${code}: ${message}`), { code });
}

export type MutatingOp = 'write' | 'datasync' | 'sync' | 'truncate' | 'create' | 'openAppend' | 'lockExclusive' | 'rename' | 'unlink' | 'fsyncDir';

export interface FaultPlan {
  /** The crash happens at this mutating operation (1-based); undefined: never. */
  crashAtOp?: number;
  /** Throw instead of performing op (an injected I/O error); return undefined to let it run. */
  fail?: (op: MutatingOp, path: string) => Error | undefined;
  /** For a failing write: how many of its bytes reach the file first (a partial write before ENOSPC). */
  partialWriteBytes?: (length: number) => number;
  /** Runs synchronously at the crash instant, before anything else: take the crash image here. */
  onCrash?: () => void;
  /** Event-loop turns op takes before it happens (a slow disk), so flushes and snapshots interleave in every order. */
  latencyTurns?: (op: MutatingOp) => number;
}

/** What the crash image keeps of each pending change, drawn per change. */
export interface CrashStats {
  applied: number;
  dropped: number;
  torn: number;
  garbled: number;
  dirOpsKept: number;
  dirOpsLost: number;
}

/** The in-memory file system. Paths are absolute POSIX paths; directories are durable once made. */
export class PowerLossStorage implements Storage {
  private readonly dirs = new Map<string, Dir>();
  private readonly locked = new Set<string>();
  private ops = 0;
  private crashedAt: { op: MutatingOp; path: string } | undefined;
  private wakeOnCrash: Array<() => void> = [];
  plan: FaultPlan = {};
  /** Resolves when the armed crash happens. */
  readonly whenCrashed: Promise<void>;

  constructor() {
    this.whenCrashed = new Promise((resolve) => this.wakeOnCrash.push(resolve));
  }

  get crashed(): boolean {
    return this.crashedAt !== undefined;
  }

  get crashPoint(): string {
    return this.crashedAt === undefined ? 'none' : `${this.crashedAt.op} ${posix.basename(this.crashedAt.path)}`;
  }

  /** Mutating operations performed so far. */
  get opCount(): number {
    return this.ops;
  }

  /** Arms a crash at the n-th mutating operation from now. */
  crashAfter(n: number): void {
    this.plan = { ...this.plan, crashAtOp: this.ops + n };
  }

  /** Crashes now, whatever is in flight. */
  crashNow(): void {
    if (this.crashedAt === undefined) this.crash('write', '(crashed by the test)');
  }

  // ---- faults ----

  /** Counts op; throws an injected error; or, at the armed crash, stops the world (a promise that never settles). */
  private async gate(op: MutatingOp, path: string, partial?: () => void): Promise<void> {
    for (let turns = this.plan.latencyTurns?.(op) ?? 0; turns > 0; turns--) await new Promise((resolve) => setImmediate(resolve));
    if (this.crashedAt !== undefined) return new Promise<void>(() => undefined);
    this.ops++;
    if (this.plan.crashAtOp !== undefined && this.ops >= this.plan.crashAtOp) {
      // A write the crash interrupts may already sit in the page cache: it is pending, and the crash image decides.
      partial?.();
      this.crash(op, path);
      return new Promise<void>(() => undefined);
    }
    const err = this.plan.fail?.(op, path);
    if (err !== undefined) throw err;
  }

  private crash(op: MutatingOp, path: string): void {
    this.crashedAt = { op, path };
    this.plan.onCrash?.();
    for (const wake of this.wakeOnCrash.splice(0)) wake();
  }

  // ---- paths ----

  private dir(path: string): Dir {
    const dir = this.dirs.get(posix.resolve(path));
    if (dir === undefined) throw errno('ENOENT', `no directory ${path}`);
    return dir;
  }

  private parts(path: string): { dir: Dir; name: string } {
    const full = posix.resolve(path);
    return { dir: this.dir(posix.dirname(full)), name: posix.basename(full) };
  }

  private inode(path: string): Inode {
    const { dir, name } = this.parts(path);
    const inode = dir.entries.get(name);
    if (inode === undefined) throw errno('ENOENT', `no file ${path}`);
    return inode;
  }

  private link(path: string, inode: Inode): void {
    const { dir, name } = this.parts(path);
    dir.entries.set(name, inode);
    dir.pending.push({ kind: 'link', name, inode });
  }

  // ---- Storage ----

  async mkdirp(path: string): Promise<void> {
    let current = '/';
    for (const part of posix.resolve(path).split('/').filter((p) => p !== '')) {
      current = posix.join(current, part);
      if (!this.dirs.has(current)) this.dirs.set(current, new Dir());
    }
    if (!this.dirs.has('/')) this.dirs.set('/', new Dir());
  }

  async list(path: string): Promise<string[]> {
    return [...this.dir(path).entries.keys()];
  }

  async exists(path: string): Promise<boolean> {
    const full = posix.resolve(path);
    if (this.dirs.has(full)) return true;
    const dir = this.dirs.get(posix.dirname(full));
    return dir?.entries.has(posix.basename(full)) ?? false;
  }

  async readFile(path: string): Promise<Uint8Array> {
    return this.inode(path).data.slice();
  }

  async openRead(path: string): Promise<ReadableFile> {
    const data = this.inode(path).data.slice();
    return {
      path,
      size: data.length,
      read: async (target, length, position) => {
        const n = Math.max(0, Math.min(length, data.length - position));
        target.set(data.subarray(position, position + n), 0);
        return n;
      },
      close: async () => undefined,
    };
  }

  async openAppend(path: string): Promise<WritableFile> {
    await this.gate('openAppend', path);
    const { dir, name } = this.parts(path);
    let inode = dir.entries.get(name);
    if (inode === undefined) {
      inode = new Inode();
      this.link(path, inode);
    }
    return this.writable(path, inode);
  }

  async create(path: string): Promise<WritableFile> {
    await this.gate('create', path);
    return this.writable(path, this.emptied(path));
  }

  /** The file at path, made if missing, else cut to nothing (O_CREAT | O_TRUNC). */
  private emptied(path: string): Inode {
    const { dir, name } = this.parts(path);
    let inode = dir.entries.get(name);
    if (inode === undefined) {
      inode = new Inode();
      this.link(path, inode);
    } else {
      inode.truncate(0);
    }
    return inode;
  }

  /** One holder per path within this storage (one simulated process); a crash image starts with none held. */
  async lockExclusive(path: string, info: Uint8Array): Promise<FileLock | undefined> {
    await this.gate('lockExclusive', path);
    const full = posix.resolve(path);
    if (this.locked.has(full)) return undefined;
    this.locked.add(full);
    const inode = this.emptied(path);
    inode.write(0, info);
    return { path, release: () => Promise.resolve(void this.locked.delete(full)) };
  }

  async rename(from: string, to: string): Promise<void> {
    await this.gate('rename', from);
    const a = this.parts(from);
    const b = this.parts(to);
    if (a.dir !== b.dir) throw errno('EXDEV', 'renames stay within one directory here');
    const inode = a.dir.entries.get(a.name);
    if (inode === undefined) throw errno('ENOENT', `no file ${from}`);
    a.dir.entries.delete(a.name);
    a.dir.entries.set(b.name, inode);
    a.dir.pending.push({ kind: 'rename', from: a.name, to: b.name });
  }

  async unlink(path: string): Promise<void> {
    await this.gate('unlink', path);
    const { dir, name } = this.parts(path);
    if (!dir.entries.delete(name)) throw errno('ENOENT', `no file ${path}`);
    dir.pending.push({ kind: 'unlink', name });
  }

  async fsyncDir(path: string): Promise<void> {
    await this.gate('fsyncDir', path);
    const dir = this.dir(path);
    dir.durable = new Map(dir.entries);
    dir.pending = [];
  }

  private writable(path: string, inode: Inode): WritableFile {
    return {
      path,
      write: async (data) => {
        const bytes = new Uint8Array(data);
        try {
          await this.gate('write', path, () => inode.write(inode.data.length, bytes));
        } catch (err) {
          // A write that fails part-way (ENOSPC) may still have put its first bytes in the file.
          const partial = this.plan.partialWriteBytes?.(bytes.length) ?? 0;
          if (partial > 0) inode.write(inode.data.length, bytes.subarray(0, partial));
          throw err;
        }
        inode.write(inode.data.length, bytes);
      },
      datasync: async () => {
        await this.gate('datasync', path);
        inode.sync();
      },
      sync: async () => {
        await this.gate('sync', path);
        inode.sync();
      },
      truncate: async (length) => {
        await this.gate('truncate', path);
        inode.truncate(length);
      },
      close: async () => undefined,
    };
  }

  // ---- the crash ----

  /**
   * What the disk holds after a power loss now: durable data and directory entries, plus what the
   * seeded draw keeps of everything pending. `moveTo` re-roots the files. The image holds no lock, as
   * after the death of the process that held one. Every file of the image is durable.
   */
  crashImage(rng: Rng, moveFrom: string, moveTo: string, stats?: CrashStats): PowerLossStorage {
    const image = new PowerLossStorage();
    const resolvedInodes = new Map<Inode, Uint8Array>();
    const contentOf = (inode: Inode): Uint8Array => {
      let content = resolvedInodes.get(inode);
      if (content === undefined) {
        content = afterCrash(inode, rng, stats);
        resolvedInodes.set(inode, content);
      }
      return content;
    };
    for (const [path, dir] of this.dirs) {
      const entries = new Map(dir.durable);
      const kept = rng.int(0, dir.pending.length);
      dir.pending.slice(0, kept).forEach((op) => applyDirOp(entries, op));
      if (stats !== undefined) {
        stats.dirOpsKept += kept;
        stats.dirOpsLost += dir.pending.length - kept;
      }
      const target = path === moveFrom || path.startsWith(`${moveFrom}/`) ? moveTo + path.slice(moveFrom.length) : path;
      const copy = new Dir();
      for (const [name, inode] of entries) copy.entries.set(name, new Inode(contentOf(inode)));
      copy.durable = new Map(copy.entries);
      image.dirs.set(target, copy);
    }
    return image;
  }

  /** The current bytes of every file under dir (for tests that damage files by hand). */
  files(dir: string): Map<string, Uint8Array> {
    const out = new Map<string, Uint8Array>();
    for (const [name, inode] of this.dir(dir).entries) out.set(name, inode.data);
    return out;
  }

  /** Replaces a file's bytes, durably (damage done "on disk" by a test). */
  putFile(path: string, data: Uint8Array): void {
    const { dir, name } = this.parts(path);
    const inode = new Inode(data.slice());
    dir.entries.set(name, inode);
    dir.durable.set(name, inode);
  }

  removeFile(path: string): void {
    const { dir, name } = this.parts(path);
    dir.entries.delete(name);
    dir.durable.delete(name);
  }

  /** A durable copy of everything, re-rooted, as after a clean crash with nothing pending. */
  clone(moveFrom: string, moveTo: string): PowerLossStorage {
    const image = new PowerLossStorage();
    for (const [path, dir] of this.dirs) {
      const target = path === moveFrom || path.startsWith(`${moveFrom}/`) ? moveTo + path.slice(moveFrom.length) : path;
      const copy = new Dir();
      for (const [name, inode] of dir.entries) copy.entries.set(name, new Inode(inode.data.slice()));
      copy.durable = new Map(copy.entries);
      image.dirs.set(target, copy);
    }
    return image;
  }
}

function applyDirOp(entries: Map<string, Inode>, op: DirOp): void {
  if (op.kind === 'link') entries.set(op.name, op.inode);
  else if (op.kind === 'unlink') entries.delete(op.name);
  else {
    const inode = entries.get(op.from);
    entries.delete(op.from);
    if (inode !== undefined) entries.set(op.to, inode);
  }
}

/** Durable bytes plus each pending change applied, dropped, cut short or garbled (by sector), as drawn. */
function afterCrash(inode: Inode, rng: Rng, stats?: CrashStats): Uint8Array {
  let data: Uint8Array = inode.durable.slice();
  for (const op of inode.pending) {
    const fate = rng.next();
    if (op.kind === 'truncate') {
      if (fate < 0.5) data = resize(data, op.length);
      continue;
    }
    if (fate < 0.35) {
      data = writeAt(data, op.offset, op.bytes);
      if (stats !== undefined) stats.applied++;
    } else if (fate < 0.6) {
      if (stats !== undefined) stats.dropped++;
    } else if (fate < 0.8) {
      data = writeAt(data, op.offset, op.bytes.subarray(0, rng.int(0, op.bytes.length)));
      if (stats !== undefined) stats.torn++;
    } else {
      data = writeAt(data, op.offset, garble(op.offset, op.bytes, rng));
      if (stats !== undefined) stats.garbled++;
    }
  }
  return data;
}

/** Each disk sector the write touches lands as written, as zeros, or as noise; the last one may be cut short. */
function garble(offset: number, bytes: Uint8Array, rng: Rng): Uint8Array {
  const out = bytes.slice();
  let at = 0;
  while (at < out.length) {
    const sectorEnd = Math.min(out.length, sectorBytes - ((offset + at) % sectorBytes) + at);
    const fate = rng.next();
    if (fate < 0.3) out.fill(0, at, sectorEnd);
    else if (fate < 0.5) out.set(rng.bytes(sectorEnd - at), at);
    at = sectorEnd;
  }
  return rng.chance(0.3) ? out.subarray(0, rng.int(0, out.length)) : out;
}
