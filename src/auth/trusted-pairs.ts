// The limiter's trusted (account, address) pairs: a fixed table of keyed 64-bit fingerprints and until-times, with no object or string kept per pair.
//
// Every successful authentication from a new address trusts a new pair. As a Map entry, each pair's key string
// and entry would outlive the young generation and die in the old one: under production traffic (an end user per
// address) a steady share of the collector's work. Here a pair is a few 32-bit words and a time in typed arrays:
// set-associative buckets of trustedPairWays slots, every pair of one account in the same bucket (chosen by its
// account's tag). A pair is its account's tag and its caller's (keyed 32-bit HalfSipHash-2-4 of the account key and
// of the caller's User id, none for a Basic caller), and a 64-bit HalfSipHash-2-4 of its address under a key derived
// from both tags: all under a secret key, so no one who lacks it can make a pair of theirs share the fingerprint, or
// the bucket, of someone else's. Hashing the parts apart, never the pair key they make, and keeping the last caller's
// tag, keeps the bytes hashed per success to the account's and the address's.
//
// Who may push whom out. A slot also holds 32-bit keyed tags of its pair's account and of its caller (the scope of
// its address: the User id of the client application that named it in POST /authenticate; none for the admin API's
// Basic callers, keyed by the TCP peer), and two flags. An account holds as of right at most
// bruteForceTrustedPairAccountWaysMax slots (of its one bucket), and a caller at most
// bruteForceTrustedPairCallerWaysMax of each bucket; a pair that comes
// when its account or caller already holds its quota there still takes a free slot, but as a guest (flagged). When a
// new pair finds its bucket full:
//   - if its account or its caller holds its quota there, it replaces the slot of that account (or caller) whose trust
//     ends first: one account, or one caller, at its quota only replaces its own;
//   - else it takes the place of a guest, else of the slot whose trust ends first;
//   - a pair of a caller never takes the place of a Basic caller's pair that is not a guest (the admin API's trust
//     cannot be pushed out by POST /authenticate traffic).
// So one caller with one valid account, succeeding from as many ip_address values as it likes, takes from others at
// most its account's quota of slots in all, and every slot it holds past that gives way first to anyone else's; a
// caller with many accounts takes at most its quota of each bucket. Each decision reads one bucket: O(trustedPairWays).

import { randomBytes } from 'node:crypto';
import { bruteForceTrustedPairAccountWaysMax, bruteForceTrustedPairCallerWaysMax } from '../config/limits.js';

/** Slots per bucket: a pair is looked for in one bucket only. */
export const trustedPairWays = 8;

/**
 * The bytes per pair of export() and import(), little-endian: the fingerprint's two words, the account's and the
 * caller's tags, the until time (ms, a double), then the flags byte (only trustedPairBasic is read back).
 */
export const trustedPairRecordBytes = 25;

/** A flag: the pair is a Basic caller's of the admin API (no scope). */
const trustedPairBasic = 1;
/** A flag: the pair came when its account or caller held its quota of the bucket; any newcomer replaces it first. */
const trustedPairGuest = 2;

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
  /** Each slot's keyed tag of its pair's account (the limiter's account key). */
  readonly #account: Int32Array;
  /** Each slot's keyed tag of its pair's caller (scope); 0 for a Basic caller's pair. */
  readonly #scope: Int32Array;
  /** Until when each slot's pair is trusted (ms); 0: the slot is free (and so is one whose time has passed). */
  readonly #until: Float64Array;
  /** trustedPairBasic, trustedPairGuest. */
  readonly #flags: Uint8Array;
  readonly #bucketMask: number;
  #k0 = 0;
  #k1 = 0;
  /** The tag of the last caller placed (scope): few callers make most successes. */
  #lastScope = '';
  #lastScopeTag = 0;
  readonly #fp = new Int32Array(2);

  /** slots: a power of two, at least trustedPairWays. A random key until useKey(). */
  constructor(readonly slots: number) {
    if (!Number.isSafeInteger(slots) || slots < trustedPairWays || (slots & (slots - 1)) !== 0) {
      throw new RangeError(`slots must be a power of two of at least ${trustedPairWays}, not ${slots}`);
    }
    for (const quota of [bruteForceTrustedPairAccountWaysMax, bruteForceTrustedPairCallerWaysMax]) {
      if (!Number.isInteger(quota) || quota < 1 || quota > trustedPairWays) throw new RangeError(`a trusted pair quota must be 1 to ${trustedPairWays} slots of a bucket`);
    }
    this.#fp0 = new Int32Array(slots);
    this.#fp1 = new Int32Array(slots);
    this.#account = new Int32Array(slots);
    this.#scope = new Int32Array(slots);
    this.#until = new Float64Array(slots);
    this.#flags = new Uint8Array(slots);
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
    this.#lastScope = '';
    this.#until.fill(0);
  }

  /**
   * Until when the pair is trusted (ms since the epoch), 0 if it is not held. accountKey: the limiter's key of the
   * pair's account; scope: its caller's User id, '' for a Basic caller of the admin API; address: as the limiter's
   * addressKey() makes it.
   */
  until(accountKey: string, scope: string, address: string): number {
    const account = this.#tag(accountKey);
    const caller = this.#scopeTag(scope);
    const fp = this.#fingerprint(account, caller, address);
    const slot = this.#find(account, caller, fp[0]!, fp[1]!);
    return slot === -1 ? 0 : this.#until[slot]!;
  }

  /**
   * Trusts the pair until `until`: renewed in place if held, else placed as the top of this file says (whether it
   * was: a full bucket may have no slot it may take). The pair is named as for until().
   */
  trust(accountKey: string, scope: string, address: string, until: number, now: number): boolean {
    const account = this.#tag(accountKey);
    const caller = this.#scopeTag(scope);
    const fp = this.#fingerprint(account, caller, address);
    const fp0 = fp[0]!;
    const fp1 = fp[1]!;
    const held = this.#find(account, caller, fp0, fp1);
    if (held !== -1) {
      this.#until[held] = until;
      return true;
    }
    return this.#place(fp0, fp1, account, caller, scope === '' ? trustedPairBasic : 0, until, now) !== -1;
  }

  /** The pairs trusted after `now`, as trustedPairRecordBytes each: fingerprints, tags and times only. */
  export(now: number): Buffer {
    let live = 0;
    for (let slot = 0; slot < this.slots; slot++) if (this.#until[slot]! > now) live++;
    const bytes = Buffer.alloc(live * trustedPairRecordBytes);
    let at = 0;
    for (let slot = 0; slot < this.slots; slot++) {
      if (this.#until[slot]! <= now) continue;
      bytes.writeInt32LE(this.#fp0[slot]!, at);
      bytes.writeInt32LE(this.#fp1[slot]!, at + 4);
      bytes.writeInt32LE(this.#account[slot]!, at + 8);
      bytes.writeInt32LE(this.#scope[slot]!, at + 12);
      bytes.writeDoubleLE(this.#until[slot]!, at + 16);
      bytes.writeUInt8(this.#flags[slot]!, at + 24);
      at += trustedPairRecordBytes;
    }
    return bytes;
  }

  /**
   * Pairs from export() (of an earlier process with the same key), each trusted until the earlier of its own
   * time and untilMax, placed by the same rules as a success. Records whose time is no time are skipped; how many
   * were taken.
   */
  import(bytes: Uint8Array, now: number, untilMax: number): number {
    const view = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength - (bytes.byteLength % trustedPairRecordBytes));
    let taken = 0;
    for (let at = 0; at < view.length; at += trustedPairRecordBytes) {
      const until = view.readDoubleLE(at + 16);
      if (!Number.isFinite(until) || until <= now) continue;
      const fp0 = view.readInt32LE(at);
      const fp1 = view.readInt32LE(at + 4);
      const account = view.readInt32LE(at + 8);
      const flags = view.readUInt8(at + 24) & trustedPairBasic;
      // A Basic caller's pair has no caller tag: whatever the record says, it is compared with no caller's.
      const scope = flags === trustedPairBasic ? 0 : view.readInt32LE(at + 12);
      const held = this.#find(account, scope, fp0, fp1);
      if (held !== -1) this.#until[held] = Math.min(until, untilMax);
      else if (this.#place(fp0, fp1, account, scope, flags, Math.min(until, untilMax), now) === -1) continue;
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

  /**
   * Places a pair not held (see the top of this file): the slot it took, or -1 when its bucket has none it may take.
   * One pass over the bucket finds the first free slot, what the pair's account and caller hold there (guests
   * aside), and the candidates of each rule, each the slot whose trust ends first.
   */
  #place(fp0: number, fp1: number, account: number, scope: number, flags: number, until: number, now: number): number {
    const basic = (flags & trustedPairBasic) !== 0;
    const first = this.#bucketOf(account);
    let free = -1;
    let ownAccount = -1;
    let ownScope = -1;
    let guest = -1;
    let any = -1;
    let accountHeld = 0;
    let scopeHeld = 0;
    for (let slot = first; slot < first + trustedPairWays; slot++) {
      const slotUntil = this.#until[slot]!;
      if (slotUntil <= now) {
        if (free === -1) free = slot;
        continue;
      }
      const slotFlags = this.#flags[slot]!;
      const isGuest = (slotFlags & trustedPairGuest) !== 0;
      const slotBasic = (slotFlags & trustedPairBasic) !== 0;
      // A caller's pair never takes the place of a Basic caller's pair within its quota.
      const spared = !basic && slotBasic && !isGuest;
      if (this.#account[slot] === account) {
        if (!isGuest) accountHeld++;
        if (!spared && (ownAccount === -1 || slotUntil < this.#until[ownAccount]!)) ownAccount = slot;
      }
      if (!basic && !slotBasic && this.#scope[slot] === scope) {
        if (!isGuest) scopeHeld++;
        if (ownScope === -1 || slotUntil < this.#until[ownScope]!) ownScope = slot;
      }
      if (spared) continue;
      if (isGuest && (guest === -1 || slotUntil < this.#until[guest]!)) guest = slot;
      if (any === -1 || slotUntil < this.#until[any]!) any = slot;
    }
    const atAccountQuota = accountHeld >= bruteForceTrustedPairAccountWaysMax;
    const atScopeQuota = !basic && scopeHeld >= bruteForceTrustedPairCallerWaysMax;
    const slot = free !== -1 ? free : atAccountQuota ? ownAccount : atScopeQuota ? ownScope : guest !== -1 ? guest : any;
    if (slot === -1) return -1;
    // What the account and the caller hold once the slot's pair is gone: the newcomer is a guest if either is still at its quota.
    if (slot !== free && (this.#flags[slot]! & trustedPairGuest) === 0) {
      if (this.#account[slot] === account) accountHeld--;
      if (!basic && (this.#flags[slot]! & trustedPairBasic) === 0 && this.#scope[slot] === scope) scopeHeld--;
    }
    const isGuest = accountHeld >= bruteForceTrustedPairAccountWaysMax || (!basic && scopeHeld >= bruteForceTrustedPairCallerWaysMax);
    this.#fp0[slot] = fp0;
    this.#fp1[slot] = fp1;
    this.#account[slot] = account;
    this.#scope[slot] = scope;
    this.#until[slot] = until;
    this.#flags[slot] = flags | (isGuest ? trustedPairGuest : 0);
    return slot;
  }

  /** The fingerprint of a pair: its address under the table's key with the account's and the caller's tags in it (into #fp). */
  #fingerprint(account: number, caller: number, address: string): Int32Array {
    halfSipHash64(this.#k0 ^ account, this.#k1 ^ caller, address, this.#fp);
    return this.#fp;
  }

  /** A 32-bit keyed tag of an account key or a scope (the fingerprint's first word; it overwrites #fp). */
  #tag(text: string): number {
    halfSipHash64(this.#k0, this.#k1, text, this.#fp);
    return this.#fp[0]!;
  }

  /** A caller's tag, kept for the last caller asked about; 0 for a Basic caller (no scope). */
  #scopeTag(scope: string): number {
    if (scope === '') return 0;
    if (scope !== this.#lastScope) {
      this.#lastScopeTag = this.#tag(scope);
      this.#lastScope = scope;
    }
    return this.#lastScopeTag;
  }

  /** The first slot of the bucket of an account's pairs, by the account's tag. */
  #bucketOf(account: number): number {
    return (account & this.#bucketMask) * trustedPairWays;
  }

  /** The slot of the account's bucket that holds its pair of this caller and fingerprint (fp0, fp1), else -1. */
  #find(account: number, caller: number, fp0: number, fp1: number): number {
    const first = this.#bucketOf(account);
    for (let slot = first; slot < first + trustedPairWays; slot++) {
      if (this.#until[slot]! > 0 && this.#fp0[slot] === fp0 && this.#fp1[slot] === fp1 && this.#account[slot] === account && this.#scope[slot] === caller) return slot;
    }
    return -1;
  }
}
