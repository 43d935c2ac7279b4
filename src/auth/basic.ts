// Parsing of HTTP Basic credentials (RFC 7617) from an Authorization header, strictly.

import { authorizationHeaderBytesMax } from '../config/limits.js';

export interface BasicCredentials {
  readonly username: string;
  readonly password: string;
}

const scheme = 'basic';
/** fatal: invalid UTF-8 (including encoded lone surrogates) is refused, not turned into U+FFFD that could match.
 *  ignoreBOM: a leading EF BB BF stays part of the username instead of vanishing. Made once, it holds no state. */
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** `Basic <base64(user:pass)>`, scheme case-insensitive; null for anything malformed or over authorizationHeaderBytesMax. */
export function parseBasicAuth(header: string | undefined): BasicCredentials | null {
  if (typeof header !== 'string') return null;
  // Length in UTF-16 units never exceeds the UTF-8 byte count, so this cheap test catches the huge ones first.
  if (header.length > authorizationHeaderBytesMax || Buffer.byteLength(header, 'utf8') > authorizationHeaderBytesMax) return null;
  let start = skipSpaces(header, 0);
  if (header.slice(start, start + scheme.length).toLowerCase() !== scheme) return null;
  start += scheme.length;
  const afterScheme = skipSpaces(header, start);
  if (afterScheme === start) return null; // "Basicxyz" is another scheme
  let end = header.length;
  while (end > afterScheme && isSpace(header.charCodeAt(end - 1))) end--;
  const decoded = decodeStrictBase64(header.slice(afterScheme, end));
  if (decoded === null) return null;
  let text: string;
  try {
    text = utf8.decode(decoded);
  } catch {
    return null;
  }
  // The username cannot hold a colon (RFC 7617); the password can, so only the first colon splits.
  const colon = text.indexOf(':');
  if (colon < 0) return null;
  return { username: text.slice(0, colon), password: text.slice(colon + 1) };
}

/** Padded or unpadded standard base64; any other character, misplaced '=' or non-zero trailing bit -> null. */
function decodeStrictBase64(text: string): Uint8Array | null {
  let dataEnd = text.length;
  if (text.length > 0 && text.charCodeAt(dataEnd - 1) === 0x3d) {
    if (text.length % 4 !== 0) return null; // padding only makes sense on a whole quantum
    dataEnd--;
    if (text.charCodeAt(dataEnd - 1) === 0x3d) dataEnd--;
  }
  if (dataEnd === 0 || dataEnd % 4 === 1) return null;
  let last = 0;
  for (let i = 0; i < dataEnd; i++) {
    last = sextet(text.charCodeAt(i));
    if (last < 0) return null;
  }
  // Node drops non-zero trailing bits silently; the canonical encoding has them zero: the last
  // character of 2 (or 3) in a quantum carries 4 (or 2) bits that belong to no byte.
  if ((dataEnd % 4 === 2 && (last & 0x0f) !== 0) || (dataEnd % 4 === 3 && (last & 0x03) !== 0)) return null;
  return Buffer.from(text.slice(0, dataEnd), 'base64');
}

/** The value of a standard base64 character, or -1. */
function sextet(c: number): number {
  if (c >= 0x41 && c <= 0x5a) return c - 0x41;
  if (c >= 0x61 && c <= 0x7a) return c - 0x61 + 26;
  if (c >= 0x30 && c <= 0x39) return c - 0x30 + 52;
  if (c === 0x2b) return 62;
  if (c === 0x2f) return 63;
  return -1;
}

function skipSpaces(s: string, i: number): number {
  while (i < s.length && isSpace(s.charCodeAt(i))) i++;
  return i;
}

/** HTTP's optional whitespace: space and horizontal tab. */
function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x09;
}
