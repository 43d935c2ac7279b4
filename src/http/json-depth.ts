// The nesting bound of a JSON request body, checked on its raw bytes before JSON.parse sees them.

import { bodyJsonDepthMax, customDataDepthMax } from '../config/limits.js';

// A body is an object holding custom_data (one level) holding up to customDataDepthMax levels: such a body must
// reach the custom_data rule, whose message names the field, rather than be refused here as a whole.
if (bodyJsonDepthMax < customDataDepthMax + 2) {
  throw new Error(`bodyJsonDepthMax (${bodyJsonDepthMax}) must be at least customDataDepthMax + 2 (${customDataDepthMax + 2})`);
}

const quote = 0x22;
const backslash = 0x5c;
const openBracket = 0x5b;
const openBrace = 0x7b;
const closeBracket = 0x5d;
const closeBrace = 0x7d;

/**
 * Whether the arrays and objects of `bytes` nest deeper than depthMax, counting brackets and braces outside
 * strings. Works on UTF-8 as it is: no byte of a multi-byte character is ASCII, so none is taken for a quote or
 * a bracket. It judges nesting only; whether the text is JSON at all is JSON.parse's to say (an unbalanced
 * closer just lowers the count), so it may pass malformed text but never refuses nesting within the bound.
 */
export function nestsDeeperThan(bytes: Uint8Array, depthMax: number): boolean {
  // No more openers than depthMax in all (strings included): it cannot nest deeper, and the byte loop is spared.
  if (openersAtMost(bytes, openBrace, depthMax) + openersAtMost(bytes, openBracket, depthMax) <= depthMax) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    if (inString) {
      // An escape's next byte is never the string's end: \" and \\ both take two bytes.
      if (b === backslash) i++;
      else if (b === quote) inString = false;
    } else if (b === quote) {
      inString = true;
    } else if (b === openBracket || b === openBrace) {
      if (++depth > depthMax) return true;
    } else if (b === closeBracket || b === closeBrace) {
      depth--;
    }
  }
  return false;
}

/** How many times `byte` occurs in bytes, counted by the native search and up to max + 1 (enough to say it exceeds max). */
function openersAtMost(bytes: Uint8Array, byte: number, max: number): number {
  let count = 0;
  for (let at = bytes.indexOf(byte); at !== -1 && count <= max; at = bytes.indexOf(byte, at + 1)) count++;
  return count;
}

/** The request-body bound: see bodyJsonDepthMax. */
export function bodyNestsTooDeep(bytes: Uint8Array): boolean {
  return nestsDeeperThan(bytes, bodyJsonDepthMax);
}
