// Msgpack snapshots: written a chunk per event-loop turn into <name>.tmp, fsynced, renamed, directory fsynced; read back with every frame checked.
//
// File format (snapshotFormatVersion; the only one read: a file of any other version is refused, naming both):
// a sequence of frames like log frames ([u32 LE length][u32 LE checksum][payload]), the checksum zlib's
// CRC-32, which Node computes natively, several times faster than our CRC32C in JavaScript over a whole
// snapshot (the log keeps CRC32C: its records are small).
// Each payload is one or more concatenated msgpack values, the first a descriptor:
//   header   { t: 'header', magic, version, baseSeq }
//   chunk    { t: 'chunk', kind, n, strings?, lists? } followed by n entities of that kind
//   trailer  { t: 'trailer', counts: { <kind>: n, ... }, chunks }
// A file without its trailer (say, cut short by a crash before the rename) is invalid.
// Any change to what is written, however small, takes a new version number (docs/operations.md, Format versions).
//
// String dictionary: a string that many entities repeat (an Organization's id, a status, a common
// custom_data value; src/store/compact.ts picks them) is written once, in the `strings` of the first chunk
// that uses it, and everywhere as a reference: msgpack ext sharedStringExt holding its index among all the
// chunks' strings so far. Decoding turns each reference into the one copy, so a load makes no duplicate to
// throw away and no lookup to share it: a smaller file, a faster load and less memory than sharing strings
// after decoding through a lookup table.
// List dictionary: a User's membership list (its Applications, its Groups) is written once, in the `lists`
// of the first chunk that uses it, as the indices of its strings in the string dictionary, and everywhere as
// a reference (ext sharedListExt holding its index among all the chunks' lists so far). Decoding makes each
// list once, frozen, and hands that array to every User that has it: a million Users in a few hundred
// combinations of Applications hold a few hundred arrays instead of a million (and their backing stores),
// which is that many fewer objects to allocate on load and to mark in every full collection.
//
// Strings of their own: a string that is not in the dictionary and that a decoded entity keeps (a User's
// id, email, name, password hash) is written with a 16-bit (or 32-bit) length header whatever its length,
// which msgpack allows. msgpackr's native string extraction decodes runs of short ASCII strings a frame
// holds as one string, of all the frame's bytes from the first to the last, and hands out slices of it:
// one kept slice keeps the whole run, so a million loaded Users would keep most of the bytes of the
// snapshot file in memory besides their strings. A string with such a header is made on its own, so the
// runs hold only the short strings between, which slicing copies (V8 copies slices under 13 characters)
// and which die with the run. Any msgpack reader reads it as a string: the format does not change.
//
// Entities in a chunk use msgpackr records in sequential mode: each key set is defined inline once
// per frame and later entities refer to it, so a frame still decodes on its own (no shared
// structures), while keys are not repeated for every entity: a smaller file and a faster bulk decode
// than plain maps (useRecords: false).

import assert from 'node:assert/strict';
import { basename, join } from 'node:path';
import { crc32 as zlibCrc32 } from 'node:zlib';
import { addExtension, Packr, Unpackr } from 'msgpackr';
import { entityKinds, type EntityKind } from '../domain/entities.js';
import {
  snapshotChunkBytesMax, snapshotChunkEntities, snapshotSharedListItemsMax, snapshotSharedListsMax, snapshotSharedStringCharsMax,
  snapshotSharedStringsMax, walRecordBytesMax,
} from '../config/limits.js';
import { frameHeaderBytes, isEntityKind, isObject, packr } from './codec.js';
import { parseSnapshotFileName, snapshotFileName, tmpSuffix } from './layout.js';
import type { SnapshotSource } from './replayable.js';
import type { ReadableFile, Storage, WritableFile } from './storage.js';

export const snapshotMagic = 'authd-snapshot';
/** The format this build writes and the only one it reads. */
export const snapshotFormatVersion = 4;

/** A frame's checksum: CRC-32 of data[start, end). */
function checksum(data: Uint8Array, start: number, end: number): number {
  return zlibCrc32(data.subarray(start, end));
}

/**
 * A chunk stops growing once it reaches snapshotChunkBytesMax, so it can overshoot by one entity,
 * and no entity is larger than the log record that put it. Anything longer is a damaged length field,
 * refused before it can make us allocate gigabytes.
 */
const snapshotFrameBytesMax = snapshotChunkBytesMax + walRecordBytesMax + 4096;
/** Room for a whole chunk (it may overshoot snapshotChunkBytesMax by one entity) and msgpackr's word alignment. */
const snapshotScratchBytes = 2 * snapshotChunkBytesMax + 64 * 1024;
assert.ok(snapshotFrameBytesMax < 2 ** 32, 'snapshot frames must fit the u32 frame length');

export type SnapshotErrorCode = 'snapshot_invalid' | 'snapshot_write';

export class SnapshotError extends Error {
  constructor(
    readonly code: SnapshotErrorCode,
    readonly file: string,
    /** Byte offset of the bad frame, when the problem has one. */
    readonly offset: number | undefined,
    /** What is wrong, without the file and offset. */
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(`${file}${offset === undefined ? '' : ` at offset ${offset}`}: ${reason}`, options);
    this.name = 'SnapshotError';
  }
}

export type EntityCounts = Record<EntityKind, number>;

function zeroCounts(): EntityCounts {
  return { meta: 0, organization: 0, application: 0, group: 0, user: 0 };
}

export interface SnapshotWritten {
  readonly path: string;
  readonly baseSeq: number;
  readonly bytes: number;
  readonly entities: number;
  readonly counts: EntityCounts;
  /** Chunk frames, not counting header and trailer. */
  readonly chunks: number;
  readonly durationMs: number;
}

/**
 * A new encoder per chunk so the chunk's structure definitions start empty, and a new options object
 * per instance because msgpackr keeps the structures it learns on the options object it was given.
 */
function chunkPackr(): Packr {
  return new Packr({ sequential: true, useRecords: true, mapsAsObjects: true });
}

/** Decodes any frame: plain maps (header, trailer, descriptors) and a chunk's inline records alike. */
function frameUnpackr(): Unpackr {
  return new Unpackr({ sequential: true, useRecords: true, mapsAsObjects: true, copyBuffers: true });
}

/** msgpack extension type of a reference into the snapshot's string dictionary ('S'; msgpackr's own types avoid it). */
const sharedStringExt = 0x53;

/** A dictionary entry as the encoder meets it, packed as its index: one per distinct string, reused. */
class SharedString {
  constructor(readonly index: number) {}
}

/** A string packed with a str16 or str32 header whatever its length, so a load makes it a string of its own (see the top of this file). */
class SeparateString {
  constructor(readonly value: string) {}
}

/** Shorter strings are copied out of a run anyway (V8 makes no slice under 13 characters), so they are written as usual. */
const separateStringCharsMin = 13;

/** The string as the snapshot writer should pack it (see SeparateString). */
function separate(s: string): unknown {
  return s.length < separateStringCharsMin ? s : new SeparateString(s);
}

/** Writes the string in place with no extension header: what msgpackr does with a pack() that allocates rather than returns bytes. */
function packSeparate(str: SeparateString, allocateForWrite: (bytes: number) => { target: Buffer; position: number }): undefined {
  const bytes = Buffer.byteLength(str.value, 'utf8');
  const header = bytes <= 0xffff ? 3 : 5;
  const { target, position } = allocateForWrite(header + bytes);
  if (header === 3) {
    target[position] = 0xda;
    target.writeUInt16BE(bytes, position + 1);
  } else {
    target[position] = 0xdb;
    target.writeUInt32BE(bytes, position + 1);
  }
  target.write(str.value, position + header, bytes, 'utf8');
  return undefined;
}

addExtension({
  Class: SeparateString,
  // Never written (packSeparate writes a plain msgpack string), but msgpackr wants one; data of this type is refused.
  type: 0x46,
  // msgpackr's types leave out the second argument, with which a pack() writes in place.
  pack: packSeparate as unknown as (value: unknown) => Buffer,
  unpack: () => {
    throw new Error('extension type 0x46 is never written');
  },
});

/** msgpack extension type of a reference into the snapshot's list dictionary ('L'). */
const sharedListExt = 0x4c;

/** A list in the dictionary, packed as its index. */
class SharedList {
  constructor(readonly index: number) {}
}

/**
 * The dictionaries of the snapshot being decoded. msgpackr's extensions are global, so they are set only
 * for the length of one synchronous decode (decodeValues): reads of two files can never mix, and a
 * reference anywhere else (a log record can hold none) finds no dictionary and fails.
 */
let decodingDictionary: readonly string[] | undefined;
let decodingLists: readonly (readonly string[])[] | undefined;

/**
 * A msgpack extension that packs a dictionary reference as its index and reads it back as the entry of
 * `entries()` (the dictionary being decoded), failing for an index that dictionary does not hold.
 */
function addReferenceExtension(
  Class: new (index: number) => { readonly index: number }, type: number, entries: () => readonly unknown[] | undefined, dictionary: string,
): void {
  addExtension({
    Class,
    type,
    write: (ref: { readonly index: number }) => ref.index,
    read: (index: unknown) => {
      const entry = typeof index === 'number' ? entries()?.[index] : undefined;
      if (entry === undefined) throw new Error(`reference ${String(index)} is not in the ${dictionary} dictionary`);
      return entry;
    },
  });
}

addReferenceExtension(SharedString, sharedStringExt, () => decodingDictionary, 'string');
addReferenceExtension(SharedList, sharedListExt, () => decodingLists, 'list');

/** A node of DictionaryWriter's list trie: the list ending here, and the lists that go on from here, by their next string. */
interface ListNode {
  ref?: SharedList;
  next?: Map<SharedString, ListNode>;
}

/** The writer's side of the dictionaries: a string's or list's first use adds it; the chunk being encoded carries what it added. */
class DictionaryWriter {
  private readonly refs = new Map<string, SharedString>();
  private added: string[] = [];
  /** Lists already in the dictionary, as a trie on their strings' references: found with no key to build. */
  private readonly listRoot: ListNode = {};
  private listsCount = 0;
  private addedLists: number[][] = [];
  /** Encoded bytes the added strings can take (UTF-8 at most 3 per UTF-16 unit, plus a header): counted towards the chunk's size. */
  addedBytes = 0;

  /** `repeated`: whether the string is worth a dictionary entry; one that does not get one is written as a string of its own. */
  readonly share = (s: string, repeated = true): unknown => {
    if (!repeated || s.length > snapshotSharedStringCharsMax) return separate(s);
    let ref = this.refs.get(s);
    if (ref === undefined) {
      if (this.refs.size >= snapshotSharedStringsMax) return separate(s);
      ref = new SharedString(this.refs.size);
      this.refs.set(s, ref);
      this.added.push(s);
      this.addedBytes += 3 * s.length + 5;
    }
    return ref;
  };

  /** share() for the items of a list: a function of one argument, as map() calls it with the index second. */
  private readonly shareRepeated = (s: string): unknown => this.share(s);

  /**
   * A list whose strings all went into the dictionary, as one reference; otherwise its strings one by one.
   * A snapshot shares two lists per User, so finding one must be cheap: a walk down the trie of its strings'
   * references, one Map lookup by object per string, rather than a key joined into a new string per list,
   * which is far slower.
   */
  readonly shareList = (list: readonly string[]): unknown => {
    if (list.length === 0) return list;
    if (list.length > snapshotSharedListItemsMax) return list.map(this.shareRepeated);
    let node = this.listRoot;
    for (const s of list) {
      const ref = this.share(s);
      if (!(ref instanceof SharedString)) return list.map(this.shareRepeated);
      let child = node.next?.get(ref);
      if (child === undefined) {
        if (this.listsCount >= snapshotSharedListsMax) return list.map(this.shareRepeated);
        child = {};
        (node.next ??= new Map()).set(ref, child);
      }
      node = child;
    }
    if (node.ref === undefined) {
      if (this.listsCount >= snapshotSharedListsMax) return list.map(this.shareRepeated);
      node.ref = new SharedList(this.listsCount++);
      const indices = list.map((s) => this.refs.get(s)!.index);
      this.addedLists.push(indices);
      this.addedBytes += 5 * indices.length + 5;
    }
    return node.ref;
  };

  /** The strings and lists added since the last call, for the chunk descriptor. */
  take(): { strings: string[]; lists: number[][] } {
    const taken = { strings: this.added, lists: this.addedLists };
    this.added = [];
    this.addedLists = [];
    this.addedBytes = 0;
    return taken;
  }
}

function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * Frames a payload made of several msgpack values without joining them first, into `into` when it is
 * large enough (a reused buffer) or a new one. Returns the frame (a view of `into` when it was used).
 */
function frameParts(parts: readonly Uint8Array[], payloadBytes: number, into?: Buffer): Buffer {
  const size = frameHeaderBytes + payloadBytes;
  const out = into !== undefined && into.length >= size ? into.subarray(0, size) : Buffer.allocUnsafe(size);
  let at = frameHeaderBytes;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  out.writeUInt32LE(payloadBytes, 0);
  out.writeUInt32LE(checksum(out, frameHeaderBytes, at), 4);
  return out;
}

/** One payload as a snapshot frame. */
export function snapshotFrame(payload: Uint8Array): Buffer {
  return frameParts([payload], payload.length);
}

/** Writes frames with at most one write in flight, so encoding the next chunk overlaps writing the last. */
class FrameWriter {
  bytes = 0;
  private inFlight: Promise<void> | undefined;

  constructor(private readonly file: WritableFile) {}

  async put(data: Buffer): Promise<void> {
    if (data.length - frameHeaderBytes > snapshotFrameBytesMax) throw new Error(`snapshot frame of ${data.length} bytes exceeds the readable maximum`);
    await this.inFlight;
    const write = this.file.write(data);
    // Observed now so a failure while we encode the next chunk is not an unhandled rejection; it is rethrown on the next put/drain.
    write.catch(() => undefined);
    this.inFlight = write;
    this.bytes += data.length;
  }

  async drain(): Promise<void> {
    await this.inFlight;
  }
}

/**
 * Writes snapshot-<baseSeq>.msgpack from a fuzzy source: the state keeps changing between chunks,
 * which is fine because every later change is also in the log after baseSeq and replays idempotently.
 * No event-loop turn encodes more than snapshotChunkEntities entities or snapshotChunkBytesMax bytes.
 */
export async function writeSnapshot(
  storage: Storage, dir: string, source: SnapshotSource,
  /** Runs after the file is complete and synced, before it takes its name; throwing abandons it. */
  beforeRename?: () => Promise<void>,
): Promise<SnapshotWritten> {
  const started = performance.now();
  const path = join(dir, snapshotFileName(source.baseSeq));
  const tmpPath = path + tmpSuffix;
  let file: WritableFile | undefined;
  try {
    file = await storage.create(tmpPath);
    const writer = new FrameWriter(file);
    const counts = zeroCounts();
    let chunks = 0;
    await writer.put(snapshotFrame(packr.pack({ t: 'header', magic: snapshotMagic, version: snapshotFormatVersion, baseSeq: source.baseSeq })));
    // Reused for every chunk: a fresh buffer per chunk would churn ~the snapshot's size in external
    // memory, and V8 answers external-memory growth with full mark-compacts of the whole (large) heap,
    // long pauses at a million users. msgpackr encodes into `scratch`; frames are
    // assembled in two buffers taken in turn, as the writer keeps at most one write in flight.
    // msgpackr's target buffer is shared by every Packr in the process, so log records encoded between
    // chunks land in `scratch` too; that is safe because a frame copies its payload at once.
    const scratch = Buffer.allocUnsafe(snapshotScratchBytes);
    const frameBuffers = [Buffer.allocUnsafe(snapshotScratchBytes), Buffer.allocUnsafe(snapshotScratchBytes)];
    const dictionary = new DictionaryWriter();
    const { shareStrings } = source;
    for (const section of source.sections) {
      const entries = section.entries();
      for (let done = false; !done; ) {
        // Packed one by one so the chunk can stop at snapshotChunkBytesMax before it grows huge.
        // pack() returns views into the encoder's own buffer, which later packs never overwrite (it
        // only moves forward or starts a fresh buffer), so each entity is copied once, into the frame.
        const entityPackr = chunkPackr();
        entityPackr.useBuffer(scratch);
        const parts: Uint8Array[] = [];
        let bytes = 0;
        while (parts.length < snapshotChunkEntities && bytes + dictionary.addedBytes < snapshotChunkBytesMax) {
          const next = entries.next();
          if (next.done === true) {
            done = true;
            break;
          }
          const packed = entityPackr.pack(shareStrings === undefined ? next.value : shareStrings(section.kind, next.value, dictionary.share, dictionary.shareList));
          parts.push(packed);
          bytes += packed.length;
        }
        if (parts.length === 0) break;
        // Plain map, packed last but placed first: it touches no record structure, so order does not matter.
        const { strings, lists } = dictionary.take();
        const descriptor = packr.pack({
          t: 'chunk', kind: section.kind, n: parts.length, ...(strings.length === 0 ? {} : { strings }), ...(lists.length === 0 ? {} : { lists }),
        });
        await writer.put(frameParts([descriptor, ...parts], descriptor.length + bytes, frameBuffers[chunks % 2]));
        counts[section.kind] += parts.length;
        chunks++;
        await yieldToEventLoop();
      }
    }
    await writer.put(snapshotFrame(packr.pack({ t: 'trailer', counts, chunks })));
    await writer.drain();
    await file.sync();
    const closing = file;
    file = undefined;
    await closing.close();
    await beforeRename?.();
    await storage.rename(tmpPath, path);
    await storage.fsyncDir(dir);
    const entities = entityKinds.reduce((sum, kind) => sum + counts[kind], 0);
    return { path, baseSeq: source.baseSeq, bytes: writer.bytes, entities, counts, chunks, durationMs: performance.now() - started };
  } catch (err) {
    if (file !== undefined) await file.close().catch(() => undefined);
    await storage.unlink(tmpPath).catch(() => undefined);
    throw new SnapshotError('snapshot_write', tmpPath, undefined, `writing the snapshot failed: ${(err as Error).message}`, { cause: err });
  }
}

/** What a snapshot's trailer vouched for, once every frame of it checked out. */
export interface SnapshotSummary {
  readonly path: string;
  readonly baseSeq: number;
  readonly counts: EntityCounts;
  readonly bytes: number;
}

export interface LoadedSnapshot extends SnapshotSummary {
  /** Every kind present, its entities in file order. */
  readonly sections: Map<EntityKind, unknown[]>;
}

/**
 * Takes each chunk's entities as soon as its frame checked out, in file order; it owns them from then
 * on. The file is only known to be valid when readSnapshotChunks resolves: whatever took the chunks
 * of a file that turns out invalid must be thrown away.
 */
export type SnapshotChunkConsumer = (kind: EntityKind, values: unknown[]) => void;

/**
 * Reads frames one by one with positioned reads: a chunk at a time in memory, never the whole file.
 * Each payload is read together with the header of the frame after it, so a frame costs one read, and
 * the read that readFrames starts ahead is in flight at once instead of waiting, behind the decoding
 * of the current chunk, for its header's read to be resumed (start-up time spent idle).
 */
class FrameReader {
  offset = 0;
  private header = Buffer.allocUnsafe(frameHeaderBytes);
  /** The offset whose frame header `header` holds, read along with the payload before it (-1: none). */
  private headerAt = -1;
  /**
   * Payloads are read into two buffers taken in turn (one is decoded while the next frame is read
   * into the other), grown to the largest frame. A fresh buffer per frame would put the snapshot's whole
   * size through malloc and V8's external-memory accounting, which prompts collections during the load.
   * Safe because decoding copies everything out of the payload (strings, and binary values too with
   * copyBuffers).
   */
  private payloads = [Buffer.alloc(0), Buffer.alloc(0)];
  private turn = 0;

  constructor(private readonly file: ReadableFile) {}

  get atEnd(): boolean {
    return this.offset >= this.file.size;
  }

  invalid(message: string, offset = this.offset): SnapshotError {
    return new SnapshotError('snapshot_invalid', this.file.path, offset, message);
  }

  /** The next frame's payload, checked; advances past it. Valid until the next call but one. */
  async next(): Promise<Buffer> {
    const at = this.offset;
    const size = this.file.size;
    if (size - at < frameHeaderBytes) throw this.invalid(`frame header cut short (${size - at} bytes left)`);
    if (this.headerAt !== at) await this.readFully(this.header, frameHeaderBytes, at);
    const length = this.header.readUInt32LE(0);
    const crc = this.header.readUInt32LE(4);
    if (length === 0 || length > snapshotFrameBytesMax) throw this.invalid(`bad frame length ${length}`);
    const end = at + frameHeaderBytes + length;
    if (end > size) throw this.invalid(`frame of ${length} bytes runs past the end of the file`);
    const nextHeader = size - end >= frameHeaderBytes ? frameHeaderBytes : 0;
    this.turn ^= 1;
    if (this.payloads[this.turn]!.length < length + nextHeader) this.payloads[this.turn] = Buffer.allocUnsafe(length + nextHeader);
    const read = this.payloads[this.turn]!;
    await this.readFully(read, length + nextHeader, at + frameHeaderBytes);
    const payload = read.subarray(0, length);
    if (checksum(payload, 0, length) !== crc) throw this.checksumMismatch(payload, at);
    if (nextHeader !== 0) {
      read.copy(this.header, 0, length, length + nextHeader);
      this.headerAt = end;
    }
    this.offset = end;
    return payload;
  }

  /**
   * A frame whose checksum does not match. The header frame is decoded all the same, only to tell a file of
   * another format version (whose frames may carry another checksum) from damage: it is refused as a format
   * this build does not read, so that nobody takes a sound file of another release for a damaged one.
   */
  private checksumMismatch(payload: Buffer, at: number): SnapshotError {
    if (at === 0) {
      let header: unknown;
      try {
        header = frameUnpackr().unpack(payload);
      } catch {
        header = undefined;
      }
      if (isObject(header) && header['t'] === 'header' && header['magic'] === snapshotMagic && header['version'] !== snapshotFormatVersion) {
        return this.invalid(`${unsupportedVersion(header['version'])} (and the header's checksum is not this version's: a file of another release, or damaged)`, 0);
      }
    }
    return this.invalid('checksum mismatch', at);
  }

  private async readFully(target: Buffer, length: number, position: number): Promise<void> {
    let done = 0;
    while (done < length) {
      const n = await this.file.read(done === 0 ? target : target.subarray(done), length - done, position + done);
      if (n <= 0) throw this.invalid(`file ended while reading ${length} bytes`, position);
      done += n;
    }
  }
}

/** What a read has met of a snapshot's dictionaries so far (a chunk adds to them; later chunks refer back). */
interface Dictionaries {
  readonly strings: string[];
  readonly lists: (readonly string[])[];
}

/** A chunk's `lists`: each a non-empty list of at most snapshotSharedListItemsMax indices into the strings. */
function isListIndices(lists: unknown, strings: number): lists is number[][] {
  return Array.isArray(lists) && lists.every((l) => Array.isArray(l) && l.length > 0 && l.length <= snapshotSharedListItemsMax &&
    l.every((i) => Number.isInteger(i) && i >= 0 && i < strings));
}

/**
 * A frame's values. The first, a chunk's descriptor, adds its strings, then its lists (which name those
 * strings), to the dictionaries before the entities after it are decoded, since they may refer to them.
 */
function decodeValues(reader: FrameReader, payload: Buffer, at: number, dictionaries: Dictionaries): unknown[] {
  const values: unknown[] = [];
  let bad: string | undefined;
  decodingDictionary = dictionaries.strings;
  decodingLists = dictionaries.lists;
  try {
    frameUnpackr().unpackMultiple(payload, (value: unknown) => {
      if (values.length === 0 && isObject(value)) {
        const { strings, lists } = value;
        if (strings !== undefined) {
          if (!Array.isArray(strings) || !strings.every((s) => typeof s === 'string')) bad = 'the chunk\'s strings are not a list of strings';
          else for (const s of strings as string[]) dictionaries.strings.push(s);
        }
        if (bad === undefined && lists !== undefined) {
          if (!isListIndices(lists, dictionaries.strings.length)) bad = 'the chunk\'s lists are not lists of indices into its strings';
          else for (const l of lists) dictionaries.lists.push(Object.freeze(l.map((i) => dictionaries.strings[i]!)));
        }
        if (bad !== undefined) return false; // stops decoding
      }
      values.push(value);
      return true;
    });
  } catch (err) {
    throw reader.invalid(`payload is not msgpack: ${(err as Error).message}`, at);
  } finally {
    decodingDictionary = undefined;
    decodingLists = undefined;
  }
  if (bad !== undefined) throw reader.invalid(bad, at);
  if (dictionaries.strings.length > snapshotSharedStringsMax) throw reader.invalid(`the string dictionary holds more than ${snapshotSharedStringsMax} strings`, at);
  if (dictionaries.lists.length > snapshotSharedListsMax) throw reader.invalid(`the list dictionary holds more than ${snapshotSharedListsMax} lists`, at);
  return values;
}

/**
 * Reads and fully validates a snapshot (header, every chunk's checksum and shape, the trailer's
 * counts), handing each chunk's entities to onChunk as it goes. Streaming the chunks lets their
 * consumer keep only what it needs of each, so the whole decoded file is never in memory beside the
 * state built from it. Chunks are decoded in bulk (one unpackMultiple per chunk), which is most of start-up
 * time; a download's next part arrives meanwhile (a local file is read synchronously: src/persist/storage.ts).
 */
export async function readSnapshotChunks(storage: Storage, path: string, onChunk: SnapshotChunkConsumer): Promise<SnapshotSummary> {
  let file: ReadableFile;
  try {
    file = await storage.openRead(path);
  } catch (err) {
    throw new SnapshotError('snapshot_invalid', path, undefined, `cannot open: ${(err as Error).message}`, { cause: err });
  }
  try {
    return await readSnapshotFile(file, onChunk);
  } finally {
    await file.close().catch(() => undefined);
  }
}

/** readSnapshotChunks on a file already open, read front to back (a snapshot still arriving, src/cluster/snapshot-bucket.ts). */
export async function readSnapshotFile(file: ReadableFile, onChunk: SnapshotChunkConsumer): Promise<SnapshotSummary> {
  try {
    return await readFrames(new FrameReader(file), file.path, onChunk);
  } catch (err) {
    if (err instanceof SnapshotError) throw err;
    throw new SnapshotError('snapshot_invalid', file.path, undefined, `cannot read: ${(err as Error).message}`, { cause: err });
  }
}

/** readSnapshotChunks, every kind's entities gathered in memory (for checks and tools; recovery streams). */
export async function readSnapshot(storage: Storage, path: string): Promise<LoadedSnapshot> {
  const chunksByKind = new Map<EntityKind, unknown[][]>();
  const summary = await readSnapshotChunks(storage, path, (kind, values) => {
    let list = chunksByKind.get(kind);
    if (list === undefined) chunksByKind.set(kind, (list = []));
    list.push(values);
  });
  const sections = new Map<EntityKind, unknown[]>();
  for (const [kind, list] of chunksByKind) sections.set(kind, list.length === 1 ? list[0]! : ([] as unknown[]).concat(...list));
  return { ...summary, sections };
}

/** Why a header naming `version` is refused: the version found and the one this build reads. */
function unsupportedVersion(version: unknown): string {
  return `snapshot format version ${String(version)}; this build reads format version ${snapshotFormatVersion} only`;
}

async function readFrames(reader: FrameReader, path: string, onChunk: SnapshotChunkConsumer): Promise<SnapshotSummary> {
  const dictionaries: Dictionaries = { strings: [], lists: [] };
  const header = decodeValues(reader, await reader.next(), 0, dictionaries);
  const h = header[0];
  if (header.length !== 1 || !isObject(h) || h['t'] !== 'header' || h['magic'] !== snapshotMagic) throw reader.invalid('not a snapshot header', 0);
  if (h['version'] !== snapshotFormatVersion) throw reader.invalid(unsupportedVersion(h['version']), 0);
  const baseSeq = h['baseSeq'];
  if (typeof baseSeq !== 'number' || !Number.isSafeInteger(baseSeq) || baseSeq < 0) throw reader.invalid('header has no valid baseSeq', 0);
  const named = parseSnapshotFileName(basename(path));
  if (named !== undefined && named !== baseSeq) throw reader.invalid(`header says baseSeq ${baseSeq} but the file name says ${named}`, 0);

  const counts = zeroCounts();
  let chunks = 0;
  // The next frame is read while this one is decoded and consumed. A read left in flight when we stop
  // early is waited for (its failure ignored) so the file is never closed under it.
  let at = reader.offset;
  let next = reader.atEnd ? undefined : reader.next();
  try {
    for (;;) {
      if (next === undefined) throw reader.invalid('missing trailer: the file ends after its last chunk');
      const payload = await next;
      const frameAt = at;
      at = reader.offset;
      next = reader.atEnd ? undefined : reader.next();
      next?.catch(() => undefined);
      const values = decodeValues(reader, payload, frameAt, dictionaries);
      const d = values[0];
      if (!isObject(d)) throw reader.invalid('frame has no descriptor', frameAt);
      if (d['t'] === 'trailer') {
        checkTrailer(reader, d, counts, chunks, frameAt);
        if (next !== undefined) throw reader.invalid('data after the trailer', at);
        return { path, baseSeq, counts, bytes: reader.offset };
      }
      if (d['t'] !== 'chunk') throw reader.invalid(`unknown frame type ${String(d['t'])}`, frameAt);
      const kind = d['kind'];
      if (!isEntityKind(kind)) throw reader.invalid(`unknown entity kind ${String(kind)}`, frameAt);
      if (d['n'] !== values.length - 1) throw reader.invalid(`chunk says ${String(d['n'])} entities but holds ${values.length - 1}`, frameAt);
      values.shift();
      for (const v of values) if (!isObject(v)) throw reader.invalid(`a ${kind} entity is not a map`, frameAt);
      counts[kind] += values.length;
      chunks++;
      onChunk(kind, values);
    }
  } finally {
    await next?.catch(() => undefined);
  }
}

function checkTrailer(reader: FrameReader, d: Record<string, unknown>, counts: EntityCounts, chunks: number, at: number): void {
  const claimed = d['counts'];
  if (!isObject(claimed)) throw reader.invalid('trailer has no counts', at);
  for (const kind of entityKinds) {
    const n = claimed[kind] ?? 0;
    if (n !== counts[kind]) throw reader.invalid(`trailer counts ${String(n)} ${kind} entities but the file holds ${counts[kind]}`, at);
  }
  if (d['chunks'] !== chunks) throw reader.invalid(`trailer counts ${String(d['chunks'])} chunks but the file holds ${chunks}`, at);
}
