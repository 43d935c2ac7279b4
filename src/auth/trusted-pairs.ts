// The limiter's trusted (account, address) pairs: a fixed table of keyed 64-bit fingerprints and until-times, with no object or string kept per pair.
//
// Every successful authentication from a new address trusts a new pair. As a Map entry, each pair's key string
// and entry would outlive the young generation and die in the old one: under production traffic (an end user per
// address) a steady share of the collector's work. Here a pair is two 32-bit words and a time in typed arrays: set-associative buckets of trustedPairWays slots, a full bucket
// giving up the slot whose trust ends first. A fingerprint is HalfSipHash-2-4 of the pair key under a secret
// key, so no one who lacks the key can make a pair of theirs share the fingerprint of someone else's.

import { randomBytes } from 'node:crypto';

/** Slots per bucket: a pair is looked for in one bucket only. */
export const trustedPairWays = 8;

/** The bytes per pair of export() and import(): the fingerprint's two words, then the until time (ms), little-endian. */
export const trustedPairRecordBytes = 16;

/** The little-endian 32-bit word at byte i of src: a string read as its UTF-16LE bytes (i even), or bytes. */
function wordAt(src: string | Uint8Array, i: number): number {
  if (typeof src === 'string') return src.charCodeAt(i >> 1) | (src.charCodeAt((i >> 1) + 1) << 16);
  return src[i]! | (src[i + 1]! << 8) | (src[i + 2]! << 16) | (src[i + 3]! << 24);
}

/** The last length % 4 bytes of src as a little-endian number (the final block's low bytes). */
function tailOf(src: string | Uint8Array, whole: number, length: number): number {
  if (typeof src === 'string') return whole < length ? src.charCodeAt(whole >> 1) : 0;
  let tail = 0;
  for (let i = whole; i < length; i++) tail |= src[i]! << (8 * (i - whole));
  return tail;
}

/**
 * HalfSipHash-2-4 with a 64-bit result under the key (k0, k1), of src's bytes (a string's UTF-16LE bytes): into
 * out[0] and out[1]. The rounds are written out rather than called, so a fingerprint allocates nothing.
 */
function halfSipHash64(k0: number, k1: number, src: string | Uint8Array, out: Int32Array): void {
  const length = typeof src === 'string' ? src.length * 2 : src.length;
  let v0 = k0 | 0;
  let v1 = (k1 ^ 0xee) | 0;
  let v2 = (0x6c796765 ^ k0) | 0;
  let v3 = (0x74656462 ^ k1) | 0;
  const whole = length - (length % 4);
  // The final block: the length's low byte on top of the bytes left.
  const last = ((length << 24) | tailOf(src, whole, length)) | 0;
  for (let i = 0; i <= whole; i += 4) {
    const m = i < whole ? wordAt(src, i) | 0 : last;
    v3 ^= m;
    for (let r = 0; r < 2; r++) {
      v0 = (v0 + v1) | 0; v1 = (v1 << 5) | (v1 >>> 27); v1 ^= v0; v0 = (v0 << 16) | (v0 >>> 16);
      v2 = (v2 + v3) | 0; v3 = (v3 << 8) | (v3 >>> 24); v3 ^= v2;
      v0 = (v0 + v3) | 0; v3 = (v3 << 7) | (v3 >>> 25); v3 ^= v0;
      v2 = (v2 + v1) | 0; v1 = (v1 << 13) | (v1 >>> 19); v1 ^= v2; v2 = (v2 << 16) | (v2 >>> 16);
    }
    v0 ^= m;
  }
  v2 ^= 0xee;
  for (let half = 0; half < 2; half++) {
    if (half === 1) v1 ^= 0xdd;
    for (let r = 0; r < 4; r++) {
      v0 = (v0 + v1) | 0; v1 = (v1 << 5) | (v1 >>> 27); v1 ^= v0; v0 = (v0 << 16) | (v0 >>> 16);
      v2 = (v2 + v3) | 0; v3 = (v3 << 8) | (v3 >>> 24); v3 ^= v2;
      v0 = (v0 + v3) | 0; v3 = (v3 << 7) | (v3 >>> 25); v3 ^= v0;
      v2 = (v2 + v1) | 0; v1 = (v1 << 13) | (v1 >>> 19); v1 ^= v2; v2 = (v2 << 16) | (v2 >>> 16);
    }
    out[half] = v1 ^ v3;
  }
}

/** The two key words of an 8-byte key, little-endian. */
function keyWords(key: Uint8Array): [number, number] {
  return [wordAt(key, 0), wordAt(key, 4)];
}

/** HalfSipHash-2-4, 64-bit result, of bytes or of a string's UTF-16LE bytes, under an 8-byte key: for tests against published vectors. */
export function halfSipHash64Of(key: Uint8Array, src: string | Uint8Array): [number, number] {
  const out = new Int32Array(2);
  const [k0, k1] = keyWords(key);
  halfSipHash64(k0, k1, src, out);
  return [out[0]!, out[1]!];
}

export class TrustedPairs {
  readonly #fp0: Int32Array;
  readonly #fp1: Int32Array;
  /** Until when each slot's pair is trusted (ms); 0: the slot is free. */
  readonly #until: Float64Array;
  readonly #bucketMask: number;
  #k0 = 0;
  #k1 = 0;
  readonly #fp = new Int32Array(2);

  /** slots: a power of two, at least trustedPairWays. A random key until useKey(). */
  constructor(readonly slots: number) {
    if (!Number.isSafeInteger(slots) || slots < trustedPairWays || (slots & (slots - 1)) !== 0) {
      throw new RangeError(`slots must be a power of two of at least ${trustedPairWays}, not ${slots}`);
    }
    this.#fp0 = new Int32Array(slots);
    this.#fp1 = new Int32Array(slots);
    this.#until = new Float64Array(slots);
    this.#bucketMask = slots / trustedPairWays - 1;
    this.useKey(randomBytes(8));
  }

  /**
   * The fingerprint key, at least 8 bytes (the first 8 are used): the same one across restarts, so that pairs
   * read back from a file (import) are found again. Forgets every pair held, which another key would not find.
   */
  useKey(key: Uint8Array): void {
    if (key.length < 8) throw new RangeError('the trusted pairs key must hold at least 8 bytes');
    [this.#k0, this.#k1] = keyWords(key);
    this.#until.fill(0);
  }

  /** Until when the pair is trusted (ms since the epoch), 0 if it is not held. */
  until(pairKey: string): number {
    const slot = this.#find(this.#fingerprint(pairKey));
    return slot === -1 ? 0 : this.#until[slot]!;
  }

  /** Trusts the pair until `until` (see #put). */
  trust(pairKey: string, until: number): void {
    this.#put(this.#fingerprint(pairKey), until);
  }

  /** The pairs trusted after `now`, as trustedPairRecordBytes each: fingerprints and times only. */
  export(now: number): Buffer {
    let live = 0;
    for (let slot = 0; slot < this.slots; slot++) if (this.#until[slot]! > now) live++;
    const bytes = Buffer.alloc(live * trustedPairRecordBytes);
    let at = 0;
    for (let slot = 0; slot < this.slots; slot++) {
      if (this.#until[slot]! <= now) continue;
      bytes.writeInt32LE(this.#fp0[slot]!, at);
      bytes.writeInt32LE(this.#fp1[slot]!, at + 4);
      bytes.writeDoubleLE(this.#until[slot]!, at + 8);
      at += trustedPairRecordBytes;
    }
    return bytes;
  }

  /**
   * Pairs from export() (of an earlier process with the same key), each trusted until the earlier of its own
   * time and untilMax. Records whose time is no time are skipped; how many were taken.
   */
  import(bytes: Uint8Array, now: number, untilMax: number): number {
    const view = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength - (bytes.byteLength % trustedPairRecordBytes));
    let taken = 0;
    for (let at = 0; at < view.length; at += trustedPairRecordBytes) {
      const until = view.readDoubleLE(at + 8);
      if (!Number.isFinite(until) || until <= now) continue;
      this.#fp[0] = view.readInt32LE(at);
      this.#fp[1] = view.readInt32LE(at + 4);
      this.#put(this.#fp, Math.min(until, untilMax));
      taken++;
    }
    return taken;
  }

  /** Pairs held, expired ones included until their slots are taken (for tests). */
  get size(): number {
    let held = 0;
    for (let slot = 0; slot < this.slots; slot++) if (this.#until[slot]! > 0) held++;
    return held;
  }

  /** Holds fingerprint fp until `until`: in its own slot if held, else in its bucket's free slot or the one whose trust ends first. */
  #put(fp: Int32Array, until: number): void {
    let slot = this.#find(fp);
    if (slot === -1) slot = this.#victim(fp[0]!);
    this.#fp0[slot] = fp[0]!;
    this.#fp1[slot] = fp[1]!;
    this.#until[slot] = until;
  }

  #fingerprint(pairKey: string): Int32Array {
    halfSipHash64(this.#k0, this.#k1, pairKey, this.#fp);
    return this.#fp;
  }

  #find(fp: Int32Array): number {
    const first = (fp[0]! & this.#bucketMask) * trustedPairWays;
    for (let slot = first; slot < first + trustedPairWays; slot++) {
      if (this.#until[slot]! > 0 && this.#fp0[slot] === fp[0] && this.#fp1[slot] === fp[1]) return slot;
    }
    return -1;
  }

  /** The bucket's free slot, else the one whose trust ends first. */
  #victim(fp0: number): number {
    const first = (fp0 & this.#bucketMask) * trustedPairWays;
    let victim = first;
    for (let slot = first; slot < first + trustedPairWays; slot++) {
      if (this.#until[slot] === 0) return slot;
      if (this.#until[slot]! < this.#until[victim]!) victim = slot;
    }
    return victim;
  }
}
