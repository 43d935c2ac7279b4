// The compact form in which the State holds an argon2id password hash, and the PHC string it stands for.
//
// A PHC string of the default params is 97 characters for 48 bytes of information (a 16-byte salt and a
// 32-byte hash); a million Users hold a million of them. The packed form keeps the same information in 61
// characters, each under 0x80, so V8 holds it as a one-byte string (80 B instead of 120 B) and msgpack
// writes one byte per character. Everything else (bcrypt, argon2id with other salt or hash lengths,
// anything unparsable) is stored as it came, so old data and imports keep working; unpack gives back
// the exact PHC string that was packed.

import { argon2HashBytes, argon2SaltBytes } from '../config/limits.js';
import { argon2idPrefix, argon2ParamsProblem, encodeUnpaddedBase64, readArgon2idHead } from './password-hash-format.js';

/** First character of a packed form: a PHC or bcrypt string always starts with '$', so the two never meet. */
export const packedHashMarker = '\u0001';
const packedMarkerCode = packedHashMarker.charCodeAt(0);
/** Bits each character of the packed bytes carries: 7 keeps every character ASCII, so the string stays one byte per char. */
const bitsPerChar = 7;
/** A varint character carries 6 bits of value and, in the 7th, whether another character follows (still ASCII). */
const varintValueBits = 6;
const varintMoreFlag = 1 << varintValueBits;
const varintValueMask = varintMoreFlag - 1;
/** 30 bits: far above every m, t and p the format's limits allow, and still exact in 32-bit arithmetic. */
const varintCharsMax = 5;
/** The salt and then the hash, one after the other. */
const packedBytes = argon2SaltBytes + argon2HashBytes;
/** Characters the salt and hash take: 48 bytes at 7 bits each, the last character padded with zero bits. */
const packedBytesChars = Math.ceil((packedBytes * 8) / bitsPerChar);
/** Zero bits that fill the last character. */
const paddingBits = packedBytesChars * bitsPerChar - packedBytes * 8;
/** Unpadded base64 characters of our salt and hash: 22 and 43. */
const saltChars = Math.ceil((argon2SaltBytes * 8) / 6);
const hashChars = Math.ceil((argon2HashBytes * 8) / 6);
/** Standard base64 (PHC's B64) character code -> its 6-bit value, -1 for any other ASCII character. */
const base64Values = new Int8Array(0x80).fill(-1);
[...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'].forEach((c, i) => { base64Values[c.charCodeAt(0)] = i; });

/**
 * The stored form of a password hash: packed when it is an argon2id PHC string that parseArgon2idHash
 * accepts, with our salt and hash lengths; else `phc` itself. Packed only if unpacking gives back `phc`
 * exactly and its params pass argon2ParamsProblem: then the string is the canonical form parseArgon2idHash
 * accepts, so the quick reading below can only fail to pack, never pack wrongly. It reads the base64
 * straight into 7-bit characters, without parseArgon2idHash's buffers, at a fraction of its cost: a
 * snapshot written before hashes were packed has a million of them packed while it loads.
 */
export function packPasswordHash(phc: string): string {
  const head = readArgon2idHead(phc);
  const saltStart = phc.length - hashChars - 1 - saltChars;
  if (head === null || head.saltStart !== saltStart || phc.charCodeAt(saltStart + saltChars) !== 0x24 /* $ */) return phc;
  const { params } = head;
  if (argon2ParamsProblem(params) !== null) return phc;
  const codes: number[] = [packedMarkerCode];
  writeVarint(codes, params.memoryKiB);
  writeVarint(codes, params.iterations);
  writeVarint(codes, params.parallelism);
  const bits = { acc: 0, count: 0 };
  if (!readBase64Bits(phc, saltStart, argon2SaltBytes * 8, codes, bits)) return phc;
  if (!readBase64Bits(phc, saltStart + saltChars + 1, argon2HashBytes * 8, codes, bits)) return phc;
  if (bits.count > 0) codes.push((bits.acc << (bitsPerChar - bits.count)) & 0x7f);
  // One call with every code makes a flat one-byte string; concatenation would hold a rope of 61 pieces.
  const packed = String.fromCharCode(...codes);
  return unpackPasswordHash(packed) === phc ? packed : phc;
}

/** The PHC (or bcrypt) string a stored hash stands for; a string that is not a well-formed packed form comes back as it is. */
export function unpackPasswordHash(stored: string): string {
  if (stored.charCodeAt(0) !== packedMarkerCode) return stored;
  const at = { index: 1 };
  const memoryKiB = readVarint(stored, at);
  const iterations = readVarint(stored, at);
  const parallelism = readVarint(stored, at);
  if (memoryKiB < 0 || iterations < 0 || parallelism < 0 || stored.length - at.index !== packedBytesChars) return stored;
  const bytes = Buffer.allocUnsafe(packedBytes);
  let acc = 0;
  let bits = 0;
  let filled = 0;
  for (let i = at.index; i < stored.length; i++) {
    const code = stored.charCodeAt(i);
    if (code > 0x7f) return stored;
    acc = ((acc << bitsPerChar) | code) & 0x3fff; // at most 7 bits are left over from before, so 14 suffice
    bits += bitsPerChar;
    if (bits >= 8) {
      bits -= 8;
      bytes[filled++] = (acc >>> bits) & 0xff;
    }
  }
  // A form pack made has exactly the padding bits left, all zero.
  if (bits !== paddingBits || (acc & ((1 << bits) - 1)) !== 0) return stored;
  const salt = encodeUnpaddedBase64(bytes, 0, argon2SaltBytes);
  const hash = encodeUnpaddedBase64(bytes, argon2SaltBytes, packedBytes);
  return `${argon2idPrefix}${memoryKiB},t=${iterations},p=${parallelism}$${salt}$${hash}`;
}

/**
 * Reads the first `bitCount` bits of the base64 at `start` into 7-bit codes (`bits` carries what is left
 * over between calls). Bits after them in the last character are not read: the round trip in
 * packPasswordHash refuses a string where they are not zero. False on a character outside the alphabet.
 */
function readBase64Bits(s: string, start: number, bitCount: number, codes: number[], bits: { acc: number; count: number }): boolean {
  let { acc, count } = bits;
  for (let i = start, left = bitCount; left > 0; i++) {
    const code = s.charCodeAt(i);
    const value = code < 0x80 ? base64Values[code]! : -1;
    if (value < 0) return false;
    const take = left < 6 ? left : 6;
    acc = ((acc << take) | (value >>> (6 - take))) & 0x1fff; // at most 6 bits are left over from before, so 12 suffice
    count += take;
    left -= take;
    if (count >= bitsPerChar) {
      count -= bitsPerChar;
      codes.push((acc >>> count) & 0x7f);
    }
  }
  bits.acc = acc;
  bits.count = count;
  return true;
}

function writeVarint(codes: number[], value: number): void {
  let rest = value;
  while (rest > varintValueMask) {
    codes.push(varintMoreFlag | (rest & varintValueMask));
    rest >>>= varintValueBits;
  }
  codes.push(rest);
}

/** The value of the varint at `at.index` (moved past it), or -1 if it is cut off, too long or not minimal. */
function readVarint(s: string, at: { index: number }): number {
  let value = 0;
  for (let n = 0; n < varintCharsMax && at.index < s.length; n++) {
    const code = s.charCodeAt(at.index++);
    if (code > 0x7f) return -1;
    const part = code & varintValueMask;
    value |= part << (n * varintValueBits);
    if ((code & varintMoreFlag) === 0) return n > 0 && part === 0 ? -1 : value;
  }
  return -1;
}
