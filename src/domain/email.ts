// Email identity: which characters an address may hold, the form it is stored in (NFC), and the key that uniqueness and look-ups use.
//
// The rules, in the order a reviewer would check them:
// 1. An address is stored in Unicode NFC, so its NFC and NFD spellings (the same text to a reader) are one address.
// 2. An address must not hold control, format or separator characters (Unicode Cc, Cf, Z*): zero-width
//    characters, bidi controls and C0/C1 controls make two addresses that look the same differ, or one look
//    like another.
// 3. An address must not hold a non-ASCII character that imitates ASCII: one whose NFKC form, lowercase
//    or uppercase contains an ASCII character (the Kelvin sign U+212A is K, U+0130 lowercases to i plus a
//    dot, U+0131 uppercases to I, U+017F to S, the ligature U+FB01 to FI, fullwidth letters are ASCII
//    letters under NFKC). It is checked on the text as given and on its NFC form, since NFC composes
//    I + U+0307 into U+0130.
// 4. The key folds case one code point at a time: ASCII A-Z to a-z, any other code point to its Unicode
//    lowercase. By rule 3 no non-ASCII code point of a valid address lowercases to ASCII, so an address
//    holding a non-ASCII letter never shares a key with an all-ASCII one. Per code point, so that no
//    context rule (the Greek final sigma) makes the key depend on neighbours.
// Addresses stored before these rules may break 2 or 3. They still load and still sign in: one that breaks
// rule 3 is keyed by its exact text behind a marker no key of a valid address can hold (literalKeyMarker),
// so it matches itself only, never the ASCII address it imitates.

/** Starts the key of an address kept as written: U+0000, which rule 2 keeps out of every address that can be stored. */
const literalKeyMarker = '\u0000';

/** Control, format (zero-width, bidi, BOM, soft hyphen) and separator characters: unicode property classes, one character at a time. */
const invisibleOrControl = /[\p{Cc}\p{Cf}\p{Z}]/u;
/** U+0000 or any character beyond ASCII: an address without one is plain ASCII, NFC already and never a literal key. */
const notPlainAscii = /[^\u0001-\u007f]/;
/** Any character beyond ASCII: text without one is NFC already and lowercases within ASCII. */
const notAscii = /[^\u0000-\u007f]/;
const hasAscii = /[\u0000-\u007f]/;

/** The address as stored: NFC. */
export function normalizeEmail(email: string): string {
  return email.normalize('NFC');
}

/** Why `email` cannot be stored (rules 2 and 3 above), or undefined. A syntax check is the caller's. */
export function emailCharacterProblem(email: string): string | undefined {
  const bad = invisibleOrControl.exec(email);
  if (bad !== null) {
    return `must not contain invisible, bidirectional-control, control or space characters (${codePointName(bad[0])})`;
  }
  const imitation = asciiImitation(email) ?? asciiImitation(normalizeEmail(email));
  if (imitation !== undefined) return `must not contain a character that imitates ASCII (${codePointName(imitation)})`;
  return undefined;
}

/**
 * The key two Users may not share and every look-up by email uses (rule 4 above): NFC, then case folded
 * per code point. Also total on any text, stored or not, so a look-up by a name that cannot be stored
 * simply finds nothing, or the one legacy address written exactly so.
 */
export function emailKey(email: string): string {
  // Plain ASCII is NFC already and lowercases within ASCII: the common case, without normalize().
  if (!notPlainAscii.test(email)) return email.toLowerCase();
  if (email.includes(literalKeyMarker) || asciiImitation(email) !== undefined) return literalKeyMarker + email;
  const nfc = normalizeEmail(email);
  if (asciiImitation(nfc) !== undefined) return literalKeyMarker + email;
  return foldText(nfc);
}

/**
 * Text as compared for equality or searched: NFC, then lowercase one code point at a time (rule 4 above;
 * search uses it too, so a term matches an address whatever normal form either was written in).
 */
export function foldText(text: string): string {
  if (!notAscii.test(text)) return text.toLowerCase();
  let folded = '';
  for (const ch of text.normalize('NFC')) folded += ch.toLowerCase();
  // A lowercase mapping can leave a sequence NFC would compose: normalising again keeps one form per text.
  return folded.normalize('NFC');
}

/** The first non-ASCII character of s that stands for ASCII under NFKC or a case mapping, if any. */
function asciiImitation(s: string): string | undefined {
  if (!notAscii.test(s)) return undefined;
  for (const ch of s) {
    if (ch.codePointAt(0)! < 0x80) continue;
    if (hasAscii.test(ch.normalize('NFKC')) || hasAscii.test(ch.toLowerCase()) || hasAscii.test(ch.toUpperCase())) return ch;
  }
  return undefined;
}

function codePointName(ch: string): string {
  return `U+${ch.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;
}
