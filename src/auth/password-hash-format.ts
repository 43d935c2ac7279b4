// The formats of stored password hashes (argon2id PHC, bcrypt): strict parsing, validation, rehash policy.
//
// Every check here is a single left-to-right scan with no regular expression, so a hostile hash
// brought in by import costs time linear in its length (and the length is capped first).

import {
  argon2HashBytes,
  argon2HashBytesMax,
  argon2HashBytesMin,
  argon2IterationsMax,
  argon2MemoryKiBMax,
  argon2ParallelismMax,
  argon2SaltBytes,
  argon2SaltBytesMax,
  argon2SaltBytesMin,
  bcryptCostMax,
  bcryptCostMin,
  passwordHashCharsMax,
} from '../config/limits.js';

export interface Argon2Params {
  readonly memoryKiB: number;
  readonly iterations: number;
  readonly parallelism: number;
}

export interface Argon2idHashParts extends Argon2Params {
  readonly salt: Uint8Array;
  readonly hash: Uint8Array;
}

/** Only version 0x13 (19): hash-wasm computes nothing else, and 0x10 hashes predate 2016. */
export const argon2idPrefix = '$argon2id$v=19$m=';
const bcryptHashChars = 60;
/** Digits of the largest number we accept in a PHC parameter; longer is refused before any arithmetic. */
const phcDecimalDigitsMax = 10;

/** Checks the params the pool will hash with, once at start-up, against the limits every stored hash must meet. */
export function argon2ParamsProblem(params: Argon2Params): string | null {
  const { memoryKiB, iterations, parallelism } = params;
  if (!Number.isInteger(parallelism) || parallelism < 1 || parallelism > argon2ParallelismMax) {
    return `parallelism must be an integer in 1..${argon2ParallelismMax}`;
  }
  // Argon2 needs two blocks per slice, four slices per lane: 8 KiB per lane at least.
  if (!Number.isInteger(memoryKiB) || memoryKiB < 8 * parallelism || memoryKiB > argon2MemoryKiBMax) {
    return `memoryKiB must be an integer in ${8 * parallelism}..${argon2MemoryKiBMax}`;
  }
  if (!Number.isInteger(iterations) || iterations < 1 || iterations > argon2IterationsMax) {
    return `iterations must be an integer in 1..${argon2IterationsMax}`;
  }
  return null;
}

/**
 * The head of an argon2id PHC string, `$argon2id$v=19$m=M,t=T,p=P$`, read strictly (canonical decimals): its
 * params, not yet checked against the limits, and where the salt starts; null if the head is not that.
 */
export function readArgon2idHead(phc: string): { params: Argon2Params; saltStart: number } | null {
  if (!phc.startsWith(argon2idPrefix)) return null;
  const memory = readDecimal(phc, argon2idPrefix.length);
  if (memory === null || !phc.startsWith(',t=', memory.end)) return null;
  const iterations = readDecimal(phc, memory.end + 3);
  if (iterations === null || !phc.startsWith(',p=', iterations.end)) return null;
  const parallelism = readDecimal(phc, iterations.end + 3);
  if (parallelism === null || phc.charCodeAt(parallelism.end) !== 0x24 /* $ */) return null;
  return { params: { memoryKiB: memory.value, iterations: iterations.value, parallelism: parallelism.value }, saltStart: parallelism.end + 1 };
}

/** Parses a strict argon2id PHC string ($argon2id$v=19$m=M,t=T,p=P$salt$hash, unpadded canonical base64); null if anything is off. */
export function parseArgon2idHash(phc: string): Argon2idHashParts | null {
  if (typeof phc !== 'string' || phc.length > passwordHashCharsMax) return null;
  const head = readArgon2idHead(phc);
  if (head === null) return null;
  const { params, saltStart } = head;
  const saltEnd = phc.indexOf('$', saltStart);
  if (saltEnd < 0) return null;
  const salt = decodeUnpaddedBase64(phc, saltStart, saltEnd);
  const hash = decodeUnpaddedBase64(phc, saltEnd + 1, phc.length);
  if (salt === null || hash === null) return null;
  if (salt.length < argon2SaltBytesMin || salt.length > argon2SaltBytesMax) return null;
  if (hash.length < argon2HashBytesMin || hash.length > argon2HashBytesMax) return null;
  if (argon2ParamsProblem(params) !== null) return null;
  return { ...params, salt, hash };
}

/** A well-formed argon2id PHC string within our limits. */
export function isArgon2idHash(h: string): boolean {
  return parseArgon2idHash(h) !== null;
}

/** A well-formed bcrypt hash: $2a$, $2b$ or $2y$, a two-digit cost within limits, 22 salt + 31 hash chars of bcrypt base64. */
export function isBcryptHash(h: string): boolean {
  if (typeof h !== 'string' || h.length !== bcryptHashChars) return false;
  if (h.charCodeAt(0) !== 0x24 || h.charCodeAt(1) !== 0x32 || h.charCodeAt(3) !== 0x24 || h.charCodeAt(6) !== 0x24) {
    return false;
  }
  const minor = h[2];
  if (minor !== 'a' && minor !== 'b' && minor !== 'y') return false;
  const tens = h.charCodeAt(4) - 0x30;
  const ones = h.charCodeAt(5) - 0x30;
  if (tens < 0 || tens > 9 || ones < 0 || ones > 9) return false;
  const cost = tens * 10 + ones;
  if (cost < bcryptCostMin || cost > bcryptCostMax) return false;
  for (let i = 7; i < bcryptHashChars; i++) {
    if (!isBcryptBase64Char(h.charCodeAt(i))) return false;
  }
  return true;
}

/** Strict format check for hashes brought in by import: argon2id PHC or bcrypt, both within our limits. */
export function validatePasswordHash(h: string): boolean {
  return isArgon2idHash(h) || isBcryptHash(h);
}

/**
 * True when a hash that just verified should be replaced by a fresh argon2id hash of the current params:
 * bcrypt, anything unparsable, or argon2id whose m/t/p (or salt/output length) differ from what we make today.
 */
export function needsRehash(phc: string, params: Argon2Params): boolean {
  const parts = parseArgon2idHash(phc);
  if (parts === null) return true;
  return (
    parts.memoryKiB !== params.memoryKiB ||
    parts.iterations !== params.iterations ||
    parts.parallelism !== params.parallelism ||
    parts.salt.length !== argon2SaltBytes ||
    parts.hash.length !== argon2HashBytes
  );
}

/** Canonical decimal (no sign, no leading zero) starting at `start`; `end` is the index after the last digit. */
function readDecimal(s: string, start: number): { value: number; end: number } | null {
  let end = start;
  let value = 0;
  while (end < s.length && end - start <= phcDecimalDigitsMax) {
    const digit = s.charCodeAt(end) - 0x30;
    if (digit < 0 || digit > 9) break;
    value = value * 10 + digit;
    end++;
  }
  const digits = end - start;
  if (digits === 0 || digits > phcDecimalDigitsMax) return null;
  if (digits > 1 && s.charCodeAt(start) === 0x30) return null;
  return { value, end };
}

/** PHC's B64: the standard alphabet without padding. Refuses stray characters and non-zero trailing bits. */
function decodeUnpaddedBase64(s: string, start: number, end: number): Uint8Array | null {
  const length = end - start;
  if (length === 0 || length % 4 === 1) return null;
  for (let i = start; i < end; i++) {
    if (!isStandardBase64Char(s.charCodeAt(i))) return null;
  }
  const text = s.slice(start, end);
  const bytes = Buffer.from(text, 'base64');
  // Re-encoding proves the text was canonical (Node's decoder silently drops non-zero trailing bits).
  return encodeUnpaddedBase64(bytes, 0, bytes.length) === text ? new Uint8Array(bytes) : null;
}

/** PHC's B64 of bytes[start, end): the standard alphabet with the padding left off. */
export function encodeUnpaddedBase64(bytes: Buffer, start: number, end: number): string {
  const text = bytes.toString('base64', start, end);
  const pad = text.charCodeAt(text.length - 2) === 0x3d ? 2 : text.charCodeAt(text.length - 1) === 0x3d ? 1 : 0;
  return pad === 0 ? text : text.slice(0, -pad);
}

function isStandardBase64Char(c: number): boolean {
  return (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39) || c === 0x2b || c === 0x2f;
}

/** bcrypt's alphabet is ./A-Za-z0-9 (same letters as base64, different order, which a format check need not know). */
function isBcryptBase64Char(c: number): boolean {
  return (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39) || c === 0x2e || c === 0x2f;
}
