// Substring tests against folded text (foldText) that fold as they compare, so search checks a User's fields without making folded copies.

import { foldText } from '../domain/email.js';

/** The lowest code unit beyond ASCII. */
const nonAsciiMin = 0x80;
const upperAMin = 65;
const upperZMax = 90;
/** ASCII A-Z | this is a-z. */
const asciiLowerBit = 32;

/**
 * Whether foldText(text) contains `term` (a search term, folded by foldText too). Text of ASCII only, nearly every field (ids, API key ids, most addresses
 * and names), is compared as it is read, an ASCII capital taken as its lowercase, without a new string. Text
 * holding any other character is folded first: NFC and Unicode lowercase can change its length and join a
 * letter to the mark after it (`I` with U+0307, `a` with U+0308), so only the folded text answers for it.
 */
export function foldedIncludes(text: string, term: string): boolean {
  const termLength = term.length;
  if (termLength === 0) return true;
  const first = term.charCodeAt(0);
  const firstAnyCase = first | asciiLowerBit;
  const lastStart = text.length - termLength;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= nonAsciiMin) return foldText(text).includes(term);
    // c | 32 is a capital's lowercase and leaves a small letter as it is (a few other characters pair up
    // under it, hence the exact test after): every match passes it, and it takes no branch on the letter's
    // case, which mixed-case ids would mispredict every other character.
    if ((c | asciiLowerBit) !== firstAnyCase || i > lastStart || asciiLower(c) !== first || !asciiMatchAt(text, i, term)) continue;
    // The characters past the first are not checked for ASCII yet: one of them may make the text fold otherwise.
    return isAsciiFrom(text, i + 1) || foldText(text).includes(term);
  }
  return false;
}

function asciiLower(c: number): number {
  return c >= upperAMin && c <= upperZMax ? c | asciiLowerBit : c;
}

/**
 * Whether text from `at` equals term, an ASCII capital of text taken as its lowercase (term's first unit is
 * known to match). Past the text's end charCodeAt is NaN, which equals nothing.
 */
function asciiMatchAt(text: string, at: number, term: string): boolean {
  for (let k = 1; k < term.length; k++) if (asciiLower(text.charCodeAt(at + k)) !== term.charCodeAt(k)) return false;
  return true;
}

function isAsciiFrom(text: string, from: number): boolean {
  for (let i = from; i < text.length; i++) if (text.charCodeAt(i) >= nonAsciiMin) return false;
  return true;
}

/**
 * foldedIncludes for text known to hold ASCII only and a term of ASCII only, folded: the term's first
 * character is looked for by the native search, as `first` and as `firstUpper` (the same for a character
 * without case), and only there is the rest compared: the native search passes over the other characters
 * several times faster than a comparison at each of them.
 */
export function asciiIncludes(text: string, term: string, first: string, firstUpper: string): boolean {
  for (let at = text.indexOf(first); at >= 0; at = text.indexOf(first, at + 1)) if (asciiMatchAt(text, at, term)) return true;
  if (firstUpper === first) return false;
  for (let at = text.indexOf(firstUpper); at >= 0; at = text.indexOf(firstUpper, at + 1)) if (asciiMatchAt(text, at, term)) return true;
  return false;
}

/** Whether text holds ASCII only. */
export function isAscii(text: string): boolean {
  return isAsciiFrom(text, 0);
}
