// The search index's posting lists: ascending doc numbers delta-coded in blocks with a skip table, the table from trigram key to list, and the bulk build's sizing.
//
// A list is a stream of varints, one per doc: the doc minus the previous one minus one (the first doc: itself),
// 7 bits a byte, low bits first, the high bit set on every byte but a varint's last. Gaps between the docs of a
// trigram are mostly under 16,384 at a million users, so a doc takes one or two bytes rather than an Int32Array's
// four. The stream is cut into blocks of at most blockDocsMax docs, and the skip table holds each block's first
// doc and the offset of that doc's varint: a search skips whole blocks by their first doc and decodes only the
// block its target is in. The stream runs on across blocks (a block's first varint is its gap from the block
// before), so dropping docs only merges gaps, and a merged gap never takes more bytes than the gaps it replaces:
// stale docs are dropped in place.

/**
 * Trigram keys below this spell an ASCII trigram exactly (trigramKey in search.ts). The table and the build's
 * counts hold them in flat arrays: the build does ~80 lookups per user, a Map costs several times more.
 */
export const asciiKeys = 1 << 21;

/**
 * Docs per block: a search finds a doc by skipping blocks by their first doc, then reading on average half a
 * block's varints (about a byte each), while the skip table costs 8 bytes a block. Probing a long list for the
 * candidates of a rare one reads that half block per probe, so blocks are kept short.
 */
export const blockDocsMax = 64;
/** A varint of a gap below 2^31 takes at most this many bytes. */
const varintBytesMax = 5;
/** A list made outside the bulk build starts with room for a few docs and one block. */
const listBytesInitial = 8;
const skipIntsInitial = 2;
/**
 * The bulk build counts every list's docs and bytes before it makes any list, and makes each at that size
 * (plus this share, so the first users created after the build do not move it) as views into a few large
 * buffers. Lists grown as they fill, a new ArrayBuffer each time, would keep V8 over its external-memory
 * limit for the whole build, and every allocation would then advance the collector's marking on the
 * event loop, making short steps long stalls again and again.
 */
const bulkPostingsSlack = 1 / 16;
/** Bytes per buffer the bulk build carves lists from (16 MiB), or more if one list could need more. */
const bulkSlabBytes = 1 << 24;
/** A bound on what rounding adds to one list the bulk build makes: skip entries and bytes rounded up, alignment, minimums. */
const bulkListOverheadBytes = 32;

/** Bytes of the varint of v (0 <= v < 2^31). */
function varintBytes(v: number): number {
  return v < 0x80 ? 1 : v < 0x4000 ? 2 : v < 0x200000 ? 3 : v < 0x10000000 ? 4 : 5;
}

function writeVarint(bytes: Uint8Array, pos: number, v: number): number {
  while (v > 127) {
    bytes[pos++] = (v & 127) | 128;
    v >>>= 7;
  }
  bytes[pos++] = v;
  return pos;
}

/** Where the varint readVarint read last ends: set by every call, so a loop reads value and position without an object. */
let varintNext = 0;

/** The varint at pos (one byte, the common case, without the loop); its end goes to varintNext. */
function readVarint(bytes: Uint8Array, pos: number): number {
  let v = bytes[pos++]!;
  if (v > 127) {
    v &= 127;
    let shift = 7;
    let byte: number;
    do {
      byte = bytes[pos++]!;
      v |= (byte & 127) << shift;
      shift += 7;
    } while (byte > 127);
  }
  varintNext = pos;
  return v;
}

/** The offset just past the varint at pos. */
function varintEnd(bytes: Uint8Array, pos: number): number {
  while (bytes[pos++]! > 127);
  return pos;
}

/** The docs of one block and the bytes of a block re-encoded (with the varint after it), for an insert. */
const blockScratch = new Int32Array(blockDocsMax + 1);
const bytesScratch = new Uint8Array((blockDocsMax + 2) * varintBytesMax);
/** The docs a compaction step keeps, grown to the largest step. */
let keptScratch: Int32Array = new Int32Array(1024);

/**
 * Doc numbers ascending and distinct, delta-coded (see the top of this file): lists intersect by skipping
 * ahead (PostingsCursor), and results come out in creation order. Every block holds 1..blockDocsMax docs.
 */
export class Postings {
  /** Docs in the list. */
  length = 0;
  /** The varint stream (its first byteLength bytes), and per block its first doc and that doc's varint offset, [doc, offset] pairs. */
  bytes: Uint8Array;
  skips: Int32Array;
  byteLength = 0;
  blocks = 0;
  /** The last doc, -1 for none: new users and the build append. */
  private last = -1;
  /** Docs in the last block: an append opens a new block once it holds blockDocsMax. */
  private lastBlockDocs = 0;

  /** `skips` and `bytes`: the arrays to fill, as the bulk build sizes them (BulkSizing). */
  constructor(readonly key: number, skips?: Int32Array, bytes?: Uint8Array) {
    this.skips = skips ?? new Int32Array(skipIntsInitial);
    this.bytes = bytes ?? new Uint8Array(listBytesInitial);
  }

  /** False when doc is already listed (a repeated trigram, or a stale posting the doc earns back). */
  add(doc: number): boolean {
    if (doc > this.last) {
      this.append(doc);
      return true;
    }
    if (doc === this.last) return false;
    // Only an update that gives an older user a trigram inserts in place: one block re-encoded and the
    // bytes after it moved, at most the list, instead of a sort at search time.
    return this.insert(doc);
  }

  private append(doc: number): void {
    if (this.byteLength + varintBytesMax > this.bytes.length) this.bytes = grownBytes(this.bytes, this.byteLength, this.byteLength + varintBytesMax);
    if (this.blocks === 0 || this.lastBlockDocs === blockDocsMax) {
      const at = 2 * this.blocks;
      if (at + 2 > this.skips.length) this.skips = grownInts(this.skips, at, at + 2);
      this.skips[at] = doc;
      this.skips[at + 1] = this.byteLength;
      this.blocks++;
      this.lastBlockDocs = 0;
    }
    this.byteLength = writeVarint(this.bytes, this.byteLength, doc - this.last - 1);
    this.last = doc;
    this.lastBlockDocs++;
    this.length++;
  }

  /** Inserts doc below the last one, unless it is listed; a block that overflows is split in two. */
  private insert(doc: number): boolean {
    const b = this.blockAtMost(doc);
    const n = this.decodeBlock(b, blockScratch);
    let at = 0;
    while (at < n && blockScratch[at]! < doc) at++;
    if (at < n && blockScratch[at] === doc) return false;
    blockScratch.copyWithin(at + 1, at, n);
    blockScratch[at] = doc;
    const count = n + 1;
    const split = count > blockDocsMax ? count >> 1 : -1;
    // The bytes re-encoded: the block's varints and the next block's first, whose gap follows the block's last doc.
    const start = this.skips[2 * b + 1]!;
    const hasNext = b + 1 < this.blocks;
    const end = hasNext ? varintEnd(this.bytes, this.skips[2 * b + 3]!) : this.byteLength;
    let previous = this.docBefore(b);
    let w = 0;
    let splitOffset = 0;
    for (let k = 0; k < count; k++) {
      if (k === split) splitOffset = w;
      w = writeVarint(bytesScratch, w, blockScratch[k]! - previous - 1);
      previous = blockScratch[k]!;
    }
    const nextOffset = w;
    if (hasNext) w = writeVarint(bytesScratch, w, this.skips[2 * b + 2]! - previous - 1);
    const shift = w - (end - start);
    if (this.byteLength + shift > this.bytes.length) this.bytes = grownBytes(this.bytes, this.byteLength, this.byteLength + shift);
    this.bytes.copyWithin(start + w, end, this.byteLength);
    this.bytes.set(bytesScratch.subarray(0, w), start);
    this.byteLength += shift;
    this.skips[2 * b] = blockScratch[0]!;
    for (let c = b + 1; c < this.blocks; c++) this.skips[2 * c + 1]! += shift;
    if (hasNext) this.skips[2 * b + 3] = start + nextOffset;
    if (!hasNext) this.lastBlockDocs = split >= 0 ? count - split : count;
    if (split >= 0) this.insertBlock(b + 1, blockScratch[split]!, start + splitOffset);
    this.length++;
    return true;
  }

  /** A skip entry at block index b, the entries from there on moving up one. */
  private insertBlock(b: number, first: number, offset: number): void {
    const used = 2 * this.blocks;
    if (used + 2 > this.skips.length) this.skips = grownInts(this.skips, used, used + 2);
    this.skips.copyWithin(2 * b + 2, 2 * b, used);
    this.skips[2 * b] = first;
    this.skips[2 * b + 1] = offset;
    this.blocks++;
  }

  /**
   * Drops the docs `keep` refuses, block by block from the one holding fromDoc (or the first doc past it), until
   * at least `docsMax` docs are read or the list ends; the blocks kept are packed full again. Returns the docs
   * read and the doc to resume at next time (-1: the list's end was reached).
   */
  compact(fromDoc: number, docsMax: number, keep: (doc: number) => boolean): { read: number; resumeAt: number } {
    if (fromDoc > this.last) return { read: 0, resumeAt: -1 };
    const b0 = this.blockAtMost(fromDoc);
    const start = this.skips[2 * b0 + 1]!;
    const before = this.docBefore(b0);
    let b1 = b0;
    let read = 0;
    let kept = 0;
    while (b1 < this.blocks && read < docsMax) {
      if (kept + blockDocsMax > keptScratch.length) keptScratch = grownInts(keptScratch, kept, 2 * (kept + blockDocsMax));
      const n = this.decodeBlock(b1, blockScratch);
      for (let k = 0; k < n; k++) if (keep(blockScratch[k]!)) keptScratch[kept++] = blockScratch[k]!;
      read += n;
      b1++;
    }
    // Written over the blocks read, which were at least as long: every block held at most blockDocsMax docs,
    // so the kept ones need no more skip entries, and their gaps, sums of the gaps read, no more bytes.
    let w = start;
    let previous = before;
    let blockOut = b0;
    for (let k = 0; k < kept; k++) {
      const doc = keptScratch[k]!;
      if (k % blockDocsMax === 0) {
        this.skips[2 * blockOut] = doc;
        this.skips[2 * blockOut + 1] = w;
        blockOut++;
      }
      w = writeVarint(this.bytes, w, doc - previous - 1);
      previous = doc;
    }
    this.length -= read - kept;
    if (b1 === this.blocks) {
      this.blocks = blockOut;
      this.byteLength = w;
      this.last = previous;
      this.lastBlockDocs = kept > 0 ? (kept - 1) % blockDocsMax + 1 : this.blocks > 0 ? this.blockDocs(this.blocks - 1) : 0;
      return { read, resumeAt: -1 };
    }
    // The blocks not read move down behind those written, the first's varint re-encoded from the last doc kept.
    const next = this.skips[2 * b1]!;
    const end = varintEnd(this.bytes, this.skips[2 * b1 + 1]!);
    this.skips[2 * blockOut] = next;
    this.skips[2 * blockOut + 1] = w;
    w = writeVarint(this.bytes, w, next - previous - 1);
    const shift = w - end;
    this.bytes.copyWithin(w, end, this.byteLength);
    this.byteLength += shift;
    for (let c = b1 + 1; c < this.blocks; c++) {
      const to = blockOut + c - b1;
      this.skips[2 * to] = this.skips[2 * c]!;
      this.skips[2 * to + 1] = this.skips[2 * c + 1]! + shift;
    }
    this.blocks = blockOut + this.blocks - b1;
    return { read, resumeAt: next };
  }

  /** Every doc, ascending: for tests and checks, not for searches. */
  toArray(): number[] {
    const out: number[] = [];
    for (let b = 0; b < this.blocks; b++) {
      const n = this.decodeBlock(b, blockScratch);
      for (let k = 0; k < n; k++) out.push(blockScratch[k]!);
    }
    return out;
  }

  /** Each block's doc count, in order: for tests and checks. */
  blockDocCounts(): number[] {
    const counts: number[] = [];
    for (let b = 0; b < this.blocks; b++) counts.push(this.blockDocs(b));
    return counts;
  }

  /** The last block whose first doc is at most doc; block 0 when doc precedes every block. */
  private blockAtMost(doc: number): number {
    let lo = 0;
    let hi = this.blocks;
    while (hi - lo > 1) {
      const mid = (lo + hi) >>> 1;
      if (this.skips[2 * mid]! <= doc) lo = mid;
      else hi = mid;
    }
    return lo;
  }

  /** The doc before block b's first (-1 for block 0): its first minus its varint's gap. */
  private docBefore(b: number): number {
    return this.skips[2 * b]! - readVarint(this.bytes, this.skips[2 * b + 1]!) - 1;
  }

  /** Decodes block b into out; returns its doc count. */
  private decodeBlock(b: number, out: Int32Array): number {
    const bytes = this.bytes;
    let doc = this.skips[2 * b]!;
    let pos = varintEnd(bytes, this.skips[2 * b + 1]!);
    const end = b + 1 < this.blocks ? this.skips[2 * b + 3]! : this.byteLength;
    out[0] = doc;
    let n = 1;
    while (pos < end) {
      doc += readVarint(bytes, pos) + 1;
      pos = varintNext;
      out[n++] = doc;
    }
    return n;
  }

  private blockDocs(b: number): number {
    return this.decodeBlock(b, blockScratch);
  }
}

function grownBytes(bytes: Uint8Array, used: number, needed: number): Uint8Array {
  const grown = new Uint8Array(Math.max(needed, bytes.length * 2));
  grown.set(bytes.subarray(0, used));
  return grown;
}

function grownInts(ints: Int32Array, used: number, needed: number): Int32Array {
  const grown = new Int32Array(Math.max(needed, ints.length * 2));
  grown.set(ints.subarray(0, used));
  return grown;
}

/** PostingsCursor.nextFirst in the last block: no doc exceeds it, and a seek for it checks that a block follows. */
const noBlockAfter = 0x7fffffff;

/**
 * A reader of one list for an intersection, moving forward only: seek skips blocks by their first doc, then
 * reads varints within one. It reads the list's arrays as they were when it was made, so it lives within one
 * synchronous step: an append may replace them.
 */
export class PostingsCursor {
  private readonly bytes: Uint8Array;
  private readonly skips: Int32Array;
  private readonly blocks: number;
  private readonly byteLength: number;
  private block = 0;
  /** The next varint to read, and the end of the current block's. */
  private pos = 0;
  private end = 0;
  /** The doc the cursor is at; -1 past the end. */
  private doc = -1;
  /** The next block's first doc (noBlockAfter in the last block): a target from there on skips blocks. */
  private nextFirst = noBlockAfter;

  constructor(list: Postings) {
    this.bytes = list.bytes;
    this.skips = list.skips;
    this.blocks = list.blocks;
    this.byteLength = list.byteLength;
    if (this.blocks > 0) this.enter(0);
  }

  /**
   * Moves to the first doc >= target from the cursor's doc on and returns it; -1 if there is none. A target
   * below the cursor's doc leaves it there.
   */
  seek(target: number): number {
    let doc = this.doc;
    if (doc >= target || doc < 0) return doc;
    let b = this.block;
    if (this.nextFirst <= target && b + 1 < this.blocks) {
      b = this.lastBlockAtMost(b + 1, target);
      doc = this.enter(b);
      if (doc === target) return doc;
    }
    const bytes = this.bytes;
    const end = this.end;
    let pos = this.pos;
    while (pos < end) {
      doc += readVarint(bytes, pos) + 1;
      pos = varintNext;
      if (doc >= target) {
        this.pos = pos;
        this.doc = doc;
        return doc;
      }
    }
    // Past the block's last doc: the next block's first is beyond target, or there is none.
    if (b + 1 < this.blocks) return this.enter(b + 1);
    this.pos = end;
    this.doc = -1;
    return -1;
  }

  /** Positions the cursor at block b's first doc and returns it. */
  private enter(b: number): number {
    this.block = b;
    this.pos = varintEnd(this.bytes, this.skips[2 * b + 1]!);
    if (b + 1 < this.blocks) {
      this.end = this.skips[2 * b + 3]!;
      this.nextFirst = this.skips[2 * b + 2]!;
    } else {
      this.end = this.byteLength;
      this.nextFirst = noBlockAfter;
    }
    this.doc = this.skips[2 * b]!;
    return this.doc;
  }

  /** The last block in [from, blocks) whose first doc is at most target, block `from`'s being so: exponential probes, then bisection. */
  private lastBlockAtMost(from: number, target: number): number {
    const skips = this.skips;
    let lo = from;
    let hi = from + 1;
    for (let step = 1; hi < this.blocks && skips[2 * hi]! <= target; step *= 2) {
      lo = hi;
      hi += step;
    }
    if (hi > this.blocks) hi = this.blocks;
    while (hi - lo > 1) {
      const mid = (lo + hi) >>> 1;
      if (skips[2 * mid]! <= target) lo = mid;
      else hi = mid;
    }
    return lo;
  }
}

export class PostingTable {
  /** An ASCII key's list as its position in `lists` + 1 (0: none): 4 bytes a key outside the heap, where an array of lists took 8 on it. */
  private readonly ascii = new Int32Array(asciiKeys);
  private readonly other = new Map<number, Postings>();
  /** Every list in creation order, for the compaction to walk; lists are never removed. */
  readonly lists: Postings[] = [];

  get(key: number): Postings | undefined {
    if (key >= asciiKeys) return this.other.get(key);
    const at = this.ascii[key]!;
    return at === 0 ? undefined : this.lists[at - 1];
  }

  /** `sizing`: while the bulk build runs, where a new list's arrays come from. */
  getOrCreate(key: number, sizing?: BulkSizing): Postings {
    let p = this.get(key);
    if (p === undefined) {
      p = sizing === undefined ? new Postings(key) : sizing.listFor(key);
      this.lists.push(p);
      if (key < asciiKeys) this.ascii[key] = this.lists.length;
      else this.other.set(key, p);
    }
    return p;
  }
}

/**
 * The bulk build's list sizes: each trigram key's docs and varint bytes, taken by a pass over the haystacks
 * before any list is made, and the buffers the lists are carved from. The buffers are allocated as the
 * count grows, at most one per counting step, so V8 meets the new external memory while the build
 * allocates nothing else, rather than all at once when the lists are made.
 */
export class BulkSizing {
  private readonly asciiDocs = new Int32Array(asciiKeys);
  private readonly asciiBytes = new Int32Array(asciiKeys);
  private readonly otherDocs = new Map<number, number>();
  private readonly otherBytes = new Map<number, number>();
  /** The last doc counted per key plus one (0: none): a trigram a haystack repeats counts once, and the gap from it gives the bytes. */
  private lastAscii: Int32Array | undefined = new Int32Array(asciiKeys);
  private lastOther: Map<number, number> | undefined = new Map();
  private postings = 0;
  private streamBytes = 0;
  private keys = 0;
  /** The bytes the largest list there can be takes: a key is counted at most once per doc. */
  private readonly listBytesMax: number;
  private readonly slabBytes: number;
  private readonly slabs: ArrayBuffer[] = [];
  private slabsBytes = 0;
  private slabInUse = 0;
  private slabUsed = 0;
  /** Docs below this are counted. */
  countedUpTo: number;

  /** Counts docs [countFrom, countEnd); lists of other docs grow as usual. */
  constructor(countFrom: number, readonly countEnd: number) {
    this.countedUpTo = countFrom;
    const docs = countEnd - countFrom;
    // A varint takes at most one byte per 128 of its gap beyond the first, and the gaps of a list add up to at most countEnd.
    this.listBytesMax = listBytes(docs, docs + Math.ceil(countEnd / 128));
    this.slabBytes = Math.max(bulkSlabBytes, this.listBytesMax);
  }

  get done(): boolean {
    return this.countedUpTo >= this.countEnd;
  }

  /** Counts doc in key's list; a key the doc was counted in already is skipped. Docs come ascending. */
  countKey(doc: number, key: number): void {
    if (key < asciiKeys) {
      const lastAscii = this.lastAscii!;
      const last = lastAscii[key]!;
      if (last === doc + 1) return;
      lastAscii[key] = doc + 1;
      const bytes = varintBytes(doc - last);
      if (this.asciiDocs[key]!++ === 0) this.keys++;
      this.asciiBytes[key]! += bytes;
      this.streamBytes += bytes;
    } else {
      const last = this.lastOther!.get(key) ?? 0;
      if (last === doc + 1) return;
      this.lastOther!.set(key, doc + 1);
      const bytes = varintBytes(doc - last);
      const docs = this.otherDocs.get(key) ?? 0;
      if (docs === 0) this.keys++;
      this.otherDocs.set(key, docs + 1);
      this.otherBytes.set(key, (this.otherBytes.get(key) ?? 0) + bytes);
      this.streamBytes += bytes;
    }
    this.postings++;
  }

  /**
   * After a counting step: one more buffer if the lists counted so far would not fit those there are.
   * Once counting is done, one for what is missing (all of it for a small build).
   */
  reserve(): void {
    const needed = Math.ceil((this.streamBytes + (this.postings * 8) / blockDocsMax) * (1 + bulkPostingsSlack)) + this.keys * bulkListOverheadBytes;
    const missing = needed - this.slabsBytes;
    if (missing > 0) this.addSlab(this.done ? Math.max(missing, this.listBytesMax) : this.slabBytes);
  }

  private addSlab(bytes: number): void {
    this.slabs.push(new ArrayBuffer(bytes));
    this.slabsBytes += bytes;
  }

  /** Counting is over: the dedupe arrays go. */
  counted(): void {
    this.lastAscii = undefined;
    this.lastOther = undefined;
  }

  /** A new list, its arrays sized for the docs and bytes counted for its key. */
  listFor(key: number): Postings {
    const docs = key < asciiKeys ? this.asciiDocs[key]! : this.otherDocs.get(key) ?? 0;
    const bytes = key < asciiKeys ? this.asciiBytes[key]! : this.otherBytes.get(key) ?? 0;
    const skipInts = skipIntsFor(docs);
    const size = listBytes(docs, bytes);
    while (this.slabInUse < this.slabs.length && this.slabUsed + size > this.slabs[this.slabInUse]!.byteLength) {
      this.slabInUse++;
      this.slabUsed = 0;
    }
    if (this.slabInUse === this.slabs.length) this.addSlab(this.slabBytes);
    const slab = this.slabs[this.slabInUse]!;
    const at = this.slabUsed;
    this.slabUsed += size;
    return new Postings(key, new Int32Array(slab, at, skipInts), new Uint8Array(slab, at + skipInts * 4, size - skipInts * 4));
  }
}

/** Skip entries' ints for a bulk-built list of `docs` docs, with its slack. */
function skipIntsFor(docs: number): number {
  return 2 * Math.max(1, Math.ceil(Math.ceil(docs * (1 + bulkPostingsSlack)) / blockDocsMax));
}

/** The bytes a bulk-built list of `docs` docs and `bytes` bytes of varints takes, skip table included, a multiple of 4 (the next list's skip table is an Int32Array). */
function listBytes(docs: number, bytes: number): number {
  const stream = Math.max(listBytesInitial, Math.ceil(bytes * (1 + bulkPostingsSlack)) + varintBytesMax);
  return skipIntsFor(docs) * 4 + Math.ceil(stream / 4) * 4;
}
