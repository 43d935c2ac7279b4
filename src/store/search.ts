// The user search index: a trigram index over each User's searched fields, folded, kept current by State.apply.
//
// Users get a dense document number in creation order; each posting list holds doc numbers ascending and
// distinct (delta-coded in blocks, src/store/postings.ts), so lists intersect by skipping ahead and results
// come out in creation order. Every doc in the intersection is verified against its User's fields (folded as
// they are compared, src/store/fold-match.ts), which makes stale postings (left behind by updates and deletes)
// and trigram-key collisions harmless: they cost a comparison, never a wrong answer. No folded copy of the
// fields is kept: at a million Users it would be a string each, over a hundred megabytes.
//
// The trigram postings are derived data, not state: after a restart they are built a chunk at a time
// (buildStep, driven from outside the store) while searches scan the users not yet indexed, so start-up
// never waits for them. Stale postings are dropped in place by the same steps, the index answering throughout.
//
// A term too short for a trigram is answered by a scan of the Users in creation order: a common one finds its
// first matches at once, and one holding a rarer character (accented, another script, uncommon punctuation)
// passes over the Users that lack it by a few bits kept per user, without reading them.
//
// A search is a SearchCursor, stepped a bounded slice of work at a time by the caller (src/service/search-slices.ts),
// so neither a scan (a term under 3 characters, or users not indexed yet) nor a long intersection holds the
// event loop for longer than a slice; the store itself stays synchronous.

import { foldText } from '../domain/email.js';
import type { User } from '../domain/entities.js';
import { precedes, type PagePosition } from './creation-order.js';
import { DocsById } from './docs-by-id.js';
import { asciiIncludes, foldedIncludes, isAscii } from './fold-match.js';
import { asciiKeys, BulkSizing, PostingsCursor, PostingTable, type Postings } from './postings.js';

/** Fields joined by a separator no search term can contain, so a match never spans two fields. */
const fieldSeparator = '\u0000';
/** Stale postings tolerated before the index is rebuilt, as a fraction of all postings. */
const stalePostingsFractionMax = 0.25;

export function companyNameOf(user: User): string | undefined {
  const company = user.customData?.['company_name'];
  return typeof company === 'string' ? company : undefined;
}

/**
 * The searched fields joined and folded, made when the postings need its trigrams (built, updated,
 * counted stale) and dropped: what a term is matched against, as userMatches answers without making it.
 */
export function searchHaystack(user: User): string {
  const parts = [user.email, user.name, user.id];
  for (const key of user.apikeys) parts.push(key.id);
  const company = companyNameOf(user);
  if (company !== undefined) parts.push(company);
  // Folded like a search term (users.ts): NFC and lowercase, so an address stored in NFD before addresses were stored NFC still matches.
  return foldText(parts.join(fieldSeparator));
}

/**
 * Whether searchHaystack(user) contains the folded term, field by field without making it: NFC and
 * lowercase never join two fields across the separator, so the folded haystack is the folded fields joined,
 * and a term without the separator matches within one field or not at all. The term must not be empty or
 * hold the separator (a cursor refuses those).
 */
export function userMatches(user: User, termLower: string): boolean {
  if (foldedIncludes(user.email, termLower) || foldedIncludes(user.name, termLower) || foldedIncludes(user.id, termLower)) return true;
  for (const key of user.apikeys) if (foldedIncludes(key.id, termLower)) return true;
  const company = companyNameOf(user);
  return company !== undefined && foldedIncludes(company, termLower);
}

/**
 * userMatches for a User whose fields hold ASCII only (see DocSource.nonAsciiFieldsOfDoc) and a term of
 * ASCII only, whose first character is `first`, `firstUpper` in capitals (see asciiIncludes).
 */
function asciiUserMatches(user: User, termLower: string, first: string, firstUpper: string): boolean {
  if (asciiIncludes(user.email, termLower, first, firstUpper) || asciiIncludes(user.name, termLower, first, firstUpper)) return true;
  if (asciiIncludes(user.id, termLower, first, firstUpper)) return true;
  for (const key of user.apikeys) if (asciiIncludes(key.id, termLower, first, firstUpper)) return true;
  const company = companyNameOf(user);
  return company !== undefined && asciiIncludes(company, termLower, first, firstUpper);
}

/** What trigramKey answers for a window that spans two fields. */
const noTrigram = -1;

/**
 * The key of the trigram at s[i, i + 3), or noTrigram where a field separator is in it. A small
 * integer, so Map lookups stay on V8's fast Smi path: ASCII trigrams get an exact 21-bit key, others a
 * 29-bit hash above that range (a collision only adds candidates).
 */
function trigramKey(s: string, i: number): number {
  const a = s.charCodeAt(i);
  const b = s.charCodeAt(i + 1);
  const c = s.charCodeAt(i + 2);
  if (a === 0 || b === 0 || c === 0) return noTrigram;
  if ((a | b | c) < 128) return (a << 14) | (b << 7) | c;
  return 0x200000 + ((Math.imul(a, 0x9e3779b1) ^ Math.imul(b, 0x85ebca6b) ^ Math.imul(c, 0xc2b2ae35)) >>> 0) % 0x1fe00000;
}

/** Distinct trigram keys of s that lie within one field. */
function trigramKeys(s: string): Set<number> {
  const keys = new Set<number>();
  for (let i = 0; i + 3 <= s.length; i++) {
    const key = trigramKey(s, i);
    if (key !== noTrigram) keys.add(key);
  }
  return keys;
}

/**
 * Characters nearly every User's folded fields hold (the letters and digits of ids, an address's punctuation,
 * the space, the field separator): they get no bit.
 */
function isCommonChar(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 48 && c <= 57) || c === 32 || c === 46 || c === 64 || c === 45 || c === 95 || c === 0;
}

/** Every bit of rareCharBits: what a doc not settled yet is taken to hold. */
const allRareChars = 0xffff;
const asciiCapital = /[A-Z]/;
/** Above a User's rareCharBits in userRareCharBits: one of its fields holds a character beyond ASCII. */
const nonAsciiFieldBit = 1 << 16;

/**
 * The rarer characters of s (accented letters, other scripts, uncommon punctuation), hashed into 16 bits. A
 * User's folded fields hold every character of a term they contain, so their bits include the term's: a scan
 * for a short term holding such a character skips, without reading them, the Users whose bits do not (most of them).
 */
function rareCharBits(s: string): number {
  let bits = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    // By the low bits of the code: neighbouring characters (the accented letters of a script) get different bits.
    if (!isCommonChar(c)) bits |= 1 << (c & 15);
  }
  return bits;
}

/** Each ASCII code's lowercase: a table read rather than a test of the case, which mixed-case ids would mispredict every other character. */
const asciiLowerTable = Uint8Array.from({ length: 0x80 }, (_, c) => (c >= 65 && c <= 90 ? c | 32 : c));

/**
 * rareCharBits of foldText(text), reading ASCII text as it is (a capital as its lowercase) and folding only
 * other text, which also gets nonAsciiFieldBit.
 */
function foldedRareCharBits(text: string): number {
  let bits = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0x80) return rareCharBits(foldText(text)) | nonAsciiFieldBit;
    const lower = asciiLowerTable[c]!;
    if (!isCommonChar(lower)) bits |= 1 << (lower & 15);
  }
  return bits;
}

/**
 * rareCharBits(searchHaystack(user)) without making it (the separator is a common character), and
 * nonAsciiFieldBit if a field holds a character beyond ASCII.
 */
function userRareCharBits(user: User): number {
  let bits = foldedRareCharBits(user.email) | foldedRareCharBits(user.name) | foldedRareCharBits(user.id);
  for (const key of user.apikeys) bits |= foldedRareCharBits(key.id);
  const company = companyNameOf(user);
  return company === undefined ? bits : bits | foldedRareCharBits(company);
}

/**
 * The trigram keys of searchHaystack(user), in its order, without making it: every window of three
 * characters within one folded field, keyed by trigramKey. An ASCII field is read as it is, a capital as its
 * lowercase; another is folded first. Kept in one array reused from User to User, so that the build, which
 * runs while the postings' buffers keep V8 over its external-memory limit (when every allocation advances
 * the collector's marking), allocates nothing for a User of ASCII fields.
 */
class UserTrigrams {
  keys = new Int32Array(256);
  count = 0;

  of(user: User): this {
    this.count = 0;
    this.addField(user.email);
    this.addField(user.name);
    this.addField(user.id);
    for (const key of user.apikeys) this.addField(key.id);
    const company = companyNameOf(user);
    if (company !== undefined) this.addField(company);
    return this;
  }

  private addField(text: string): void {
    if (!isAscii(text)) {
      // Folded first: it can change the length (a capital İ is two characters in lowercase).
      const folded = foldText(text);
      this.reserve(folded.length);
      for (let i = 0; i + 3 <= folded.length; i++) this.add(trigramKey(folded, i));
      return;
    }
    this.reserve(text.length);
    if (text.length < 3) return;
    let a = 0;
    let b = asciiLowerTable[text.charCodeAt(0)]!;
    let c = asciiLowerTable[text.charCodeAt(1)]!;
    for (let i = 2; i < text.length; i++) {
      a = b;
      b = c;
      c = asciiLowerTable[text.charCodeAt(i)]!;
      // What trigramKey answers for these three: noTrigram where one is U+0000, else the exact ASCII key.
      this.add(a === 0 || b === 0 || c === 0 ? noTrigram : (a << 14) | (b << 7) | c);
    }
  }

  private add(key: number): void {
    if (key !== noTrigram) this.keys[this.count++] = key;
  }

  /** Room for the keys of a field of `chars` characters (fewer than that). */
  private reserve(chars: number): void {
    if (this.count + chars <= this.keys.length) return;
    const grown = new Int32Array(2 * (this.count + chars));
    grown.set(this.keys.subarray(0, this.count));
    this.keys = grown;
  }
}

/**
 * What the index keeps per doc: its User; the User's id while the doc is not settled yet (a User of a bulk
 * load, see UserSearchIndex.userAt); undefined once the User is deleted.
 */
type DocEntry = User | string | undefined;

function idOfEntry(entry: DocEntry): string | undefined {
  return typeof entry === 'string' ? entry : entry?.id;
}

/** What a SearchCursor reads of its index: the array itself (never replaced, only written in place) and the build's progress. */
interface DocSource {
  /** Below indexedUpTo, never an id. */
  readonly userOfDoc: readonly DocEntry[];
  readonly postings: PostingTable;
  /** Docs below this are in the postings (every trigram of their current User's fields); it never decreases. */
  indexedUpTo(): number;
  /** The User of a doc not settled yet, settling it now; undefined if it is deleted. */
  userAt(doc: number): User | undefined;
  /**
   * rareCharBits of each doc's User's fields: allRareChars where it is not settled yet, nothing for a deleted
   * doc; a doc past the array's end is unknown. The array is replaced as it grows, so this is asked once per step.
   */
  rareCharsOfDoc(): Uint16Array;
  /**
   * 1 where a doc's User has a field holding a character beyond ASCII, or it is not settled yet: only the
   * others are checked by asciiUserMatches. As long as rareCharsOfDoc's array, and replaced with it.
   */
  nonAsciiFieldsOfDoc(): Uint8Array;
}

/**
 * Work units (see searchDocsPerSlice) of a User checked against a term during a scan: its fields are read
 * where they lie, several places in memory, and folded as they are compared, where a unit is about the cost
 * of a native search of one string laid out beside the next.
 */
const userCheckedWorkUnits = 6;
/**
 * Work units of a doc settled during a scan, besides checking it: finding its current User, mapping its id
 * and taking its rareCharBits.
 */
const docSettledWorkUnits = 12;
/** Docs the build settles per doc it indexes in a step: settling one costs a fraction of indexing it. */
const settledDocsPerIndexedDoc = 4;
/** Docs the build counts per doc it indexes in a step (BulkSizing.count is a few array reads a trigram). */
const countedDocsPerIndexedDoc = 4;
/** Docs a scan skips by their rareCharBits per unit of work: reading a number costs a fraction of checking a User. */
const docsSkippedPerWorkUnit = 16;
/**
 * Deleted docs firstDocAfter steps over looking for a live one to compare with the page's cursor, before it
 * settles for the start it has proven (a run of deleted Users that long is rare; the search then starts earlier).
 */
const deletedDocsSteppedMax = 4096;

/**
 * One search, walked a bounded slice at a time so that the caller can let the event loop run between
 * slices. Docs are looked at in ascending order (creation order), indexed ones through the postings and
 * the rest (a build in progress, or a term too short for a trigram) by their Users' fields. Between slices
 * the cursor keeps only the next doc to look at, never a position in a list: updates, deletes, the build
 * and compactions move list entries around, and a doc number stays meaningful through all of them, as
 * does "below indexedUpTo, the postings are complete". So a user that matches throughout the walk is
 * reported exactly once, in order; one that is changed, deleted or created meanwhile may or may not be.
 */
export class SearchCursor {
  /** Every doc below this has been looked at. */
  private nextDoc = 0;
  private finished: boolean;
  /** The term's distinct trigram keys; undefined when it is too short for one and is scanned. */
  private readonly keys: number[] | undefined;
  /** Where in the term each of keys first occurs. */
  private readonly keyAt: number[] = [];
  /** rareCharBits of the term: a User's fields without all of them cannot contain it. */
  private readonly rareChars: number;
  /**
   * Whether the term holds ASCII only, no capital among it: then it is looked for in Users of ASCII only by
   * asciiUserMatches, else not at all (their folded fields hold neither).
   */
  private readonly termAscii: boolean;
  /** The term's first character, and its capital (itself if it has none): see asciiIncludes. */
  private readonly termFirst: string;
  private readonly termFirstUpper: string;

  private workTotal = 0;

  /** fromDoc: no doc below it can match (a later page starts at its cursor, see UserSearchIndex.firstDocAfter). */
  constructor(private readonly source: DocSource, private readonly termLower: string, fromDoc = 0) {
    this.nextDoc = fromDoc;
    this.finished = termLower.length === 0 || termLower.includes(fieldSeparator);
    this.rareChars = rareCharBits(termLower);
    this.termAscii = isAscii(termLower) && !asciiCapital.test(termLower);
    this.termFirst = termLower.charAt(0);
    this.termFirstUpper = this.termFirst.toUpperCase();
    if (termLower.length < 3) {
      this.keys = undefined;
      return;
    }
    const seen = new Set<number>();
    this.keys = [];
    for (let i = 0; i + 3 <= termLower.length; i++) {
      const key = trigramKey(termLower, i);
      if (key === noTrigram || seen.has(key)) continue;
      seen.add(key);
      this.keys.push(key);
      this.keyAt.push(i);
    }
  }

  /** Units of work done by all steps so far, for a caller that shares one budget among several steps. */
  get workDone(): number {
    return this.workTotal;
  }

  /** True once every doc has been looked at: no match is left to find. */
  get done(): boolean {
    return this.finished;
  }

  /**
   * Looks at more docs, appending the ids of matching users to `out` until it holds `countMax` ids, and
   * stopping once about `workMax` units of work are done (a unit is a User checked or a posting list
   * probed, see searchDocsPerSlice; one candidate's probes may overrun it by the term's trigram count).
   * Returns done. Always makes progress, however small workMax is.
   */
  step(out: string[], countMax: number, workMax: number): boolean {
    // Both are read once per step: nothing changes them while it runs.
    const docCount = this.source.userOfDoc.length;
    const indexedUpTo = this.source.indexedUpTo();
    let work = 0;
    while (!this.finished && out.length < countMax && work < workMax) {
      if (this.nextDoc >= docCount) this.finished = true;
      else if (this.keys !== undefined && this.nextDoc < indexedUpTo) work += this.intersect(out, countMax, workMax - work, indexedUpTo);
      else work += this.scan(out, countMax, workMax - work, docCount);
    }
    this.workTotal += work;
    return this.finished;
  }

  /**
   * Matches among the indexed docs from nextDoc up to `upTo`; returns the work done. The term's posting
   * lists are intersected rarest first, leapfrogging: each list skips ahead to the candidate (whole blocks,
   * then within one), and a list that overshoots makes its doc the next candidate, so the work follows the
   * rarest list's length times the log of the gaps plus a block's read, not the length of any list. Only
   * docs in every list are checked against their User (stale postings, key collisions, trigram order),
   * rather than every doc of the smallest list, which for a common trigram is thousands of Users to check
   * for a few matches. The other lists are probed in the
   * order listsInOrder gives, each list that turns a candidate away moving up behind the rarest.
   * The lists are looked up again on every call (a few Map reads): one may have been created or have
   * grown since the last slice.
   */
  private intersect(out: string[], countMax: number, workMax: number, upTo: number): number {
    const lists = this.listsInOrder();
    if (lists === undefined) {
      // No indexed doc has one of the trigrams, so none below upTo matches.
      this.nextDoc = upTo;
      return 1;
    }
    const n = lists.length;
    const users = this.source.userOfDoc;
    const nonAscii = this.source.nonAsciiFieldsOfDoc();
    // Readers of the lists, made again on each call: skipping whole blocks gets each to its place in log steps.
    const cursors: PostingsCursor[] = [];
    for (const p of lists) cursors.push(new PostingsCursor(p));
    const rarest = cursors[0]!;
    let doc = rarest.seek(this.nextDoc);
    let work = n;
    // Postings hold only docs below indexedUpTo (= upTo), so no candidate lies beyond it.
    while (doc >= 0) {
      if (n > 1) {
        // The hot loop of a long term: the rarest list and the one behind it leapfrog to a doc they share.
        // Every doc skipped is in neither both, so the search may resume at `doc` whenever it stops here.
        const b = cursors[1]!;
        for (;;) {
          const other = b.seek(doc);
          if (other < 0) {
            this.nextDoc = upTo;
            return work + 1;
          }
          if (other === doc) break;
          doc = rarest.seek(other);
          work += 2;
          if (doc < 0) {
            this.nextDoc = upTo;
            return work;
          }
          if (work >= workMax) {
            this.nextDoc = doc;
            return work;
          }
        }
      }
      // A doc in the first two lists: the others are probed in turn, until one turns it away.
      let next = doc + 1;
      let k = Math.min(2, n);
      for (; k < n; k++) {
        const at = cursors[k]!.seek(doc);
        if (at < 0) {
          // An exhausted list has no doc from here on: nothing left to match.
          this.nextDoc = upTo;
          return work + k;
        }
        if (at !== doc) {
          next = at;
          break;
        }
      }
      work += k;
      if (k === n) {
        // Below indexedUpTo a doc holds its User, or undefined once deleted, and its flag is known.
        const user = users[doc] as User | undefined;
        if (user !== undefined && this.holds(user, nonAscii[doc] === 0)) out.push(user.id);
      } else {
        // The list that turned this candidate away moves up behind the rarest: the candidates that reach it
        // are mostly alike (the users of one company whose name starts like the term), and it will turn the
        // next ones away too, before they are probed against every list in between.
        const turnedAway = cursors[k]!;
        for (let m = k; m > 1; m--) cursors[m] = cursors[m - 1]!;
        cursors[1] = turnedAway;
      }
      // No doc in (doc, next) is in every list.
      doc = rarest.seek(next);
      if (work >= workMax || out.length >= countMax) {
        this.nextDoc = next;
        return work;
      }
    }
    this.nextDoc = upTo;
    return work;
  }

  /**
   * The term's posting lists in the order intersect probes them, or undefined if one is empty. The rarest
   * first; then, rarest first again, those whose trigrams do not overlap one taken already; then the
   * rest. Overlapping trigrams (`wyv`, `yve`) come from the same word and hold nearly the same docs, so a
   * candidate that passed one passes the other, while a trigram of another word (`gis` of `logistics`) is
   * the one that turns it away: with the lists by size alone, each candidate of a long company name passed
   * five or six lists of its first word before the one that told it apart.
   */
  private listsInOrder(): Postings[] | undefined {
    const keys = this.keys!;
    const bySize: number[] = [];
    const found: Postings[] = [];
    for (let k = 0; k < keys.length; k++) {
      const p = this.source.postings.get(keys[k]!);
      if (p === undefined || p.length === 0) return undefined;
      found.push(p);
      bySize.push(k);
    }
    bySize.sort((x, y) => found[x]!.length - found[y]!.length);
    const apart: number[] = [];
    const rest: Postings[] = [];
    for (const k of bySize) {
      let overlaps = false;
      for (const taken of apart) if (Math.abs(this.keyAt[taken]! - this.keyAt[k]!) < 3) overlaps = true;
      if (overlaps) rest.push(found[k]!);
      else apart.push(k);
    }
    const lists = apart.map((k) => found[k]!);
    for (const p of rest) lists.push(p);
    return lists;
  }

  /**
   * Whether the User's fields hold the term; `fieldsAscii`: they are known to hold ASCII only. Such a User
   * never holds a term beyond ASCII, and one of ASCII only is looked for by the native search.
   */
  private holds(user: User, fieldsAscii: boolean): boolean {
    if (!fieldsAscii) return userMatches(user, this.termLower);
    return this.termAscii && asciiUserMatches(user, this.termLower, this.termFirst, this.termFirstUpper);
  }

  /**
   * Checks Users from nextDoc up to `end`, userCheckedWorkUnits each (more for one it has to settle, less for
   * one its rareCharBits rule out, or a deleted one); returns the work done.
   */
  private scan(out: string[], countMax: number, workMax: number, end: number): number {
    const users = this.source.userOfDoc;
    const bits = this.source.rareCharsOfDoc();
    const nonAscii = this.source.nonAsciiFieldsOfDoc();
    const need = this.rareChars;
    const known = Math.min(end, bits.length);
    let doc = this.nextDoc;
    let work = 0;
    while (doc < end && work < workMax && out.length < countMax) {
      if (need !== 0) {
        // A term with a rarer character: the Users without it are passed over by their bits alone.
        const stop = Math.min(known, doc + (workMax - work) * docsSkippedPerWorkUnit);
        let past = doc;
        while (past < stop && (bits[past]! & need) !== need) past++;
        if (past > doc) {
          work += Math.ceil((past - doc) / docsSkippedPerWorkUnit);
          doc = past;
          continue;
        }
      }
      let user = users[doc];
      // Settling may replace the bits array: a doc just settled is checked without its bits.
      let fieldsAscii = doc < known && nonAscii[doc] === 0;
      if (typeof user === 'string') {
        user = this.source.userAt(doc);
        work += docSettledWorkUnits;
        fieldsAscii = false;
      }
      if (user === undefined) {
        work++;
      } else {
        if (this.holds(user, fieldsAscii)) out.push(user.id);
        work += userCheckedWorkUnits;
      }
      doc++;
    }
    this.nextDoc = doc;
    return work;
  }
}

export class UserSearchIndex {
  /**
   * Id -> doc, for every live doc but those of a bulk load (addLoaded) not settled yet: such a doc is put
   * in when it is settled (userAt). Filling it for a million Users at once would lengthen start-up.
   */
  private readonly docOf = new DocsById((doc) => idOfEntry(this.userOfDoc[doc])!);
  /**
   * Each doc's User (see DocEntry), replaced as it changes. A User put while loading is held by its id until
   * its doc is settled, when first needed (the build, or a scan), from its current User (userById): settling
   * a million at start-up would lengthen it and hold more memory at the moment the service becomes ready.
   * Below indexedUpTo, never an id.
   */
  private readonly userOfDoc: DocEntry[] = [];
  /** userRareCharBits per doc, split in two (see DocSource.rareCharsOfDoc), grown as docs are settled; 3 bytes a User. */
  private rareChars = new Uint16Array(0);
  private nonAsciiFields = new Uint8Array(0);
  private readonly postings = new PostingTable();
  /** Docs below this are in the postings; the rest are indexed by buildStep and scanned meanwhile. */
  private indexedUpTo = 0;
  private postingsCount = 0;
  private stalePostings = 0;
  private deferred = false;
  /** While stale postings are dropped (buildStep): the next list to compact and the doc to resume it at; -1 when idle. */
  private compactingList = -1;
  private compactingFromDoc = 0;
  /** Docs below this are settled (or deleted); the build settles them all before any postings. */
  private settledUpTo = 0;
  /** The bulk build's list sizes, from its counting pass (after the settling, before any postings) until it ends. */
  private sizing: BulkSizing | undefined;
  private readonly trigrams = new UserTrigrams();
  /** What cursors read: made once, so a search allocates no closure for it. */
  private readonly source: DocSource = {
    userOfDoc: this.userOfDoc, postings: this.postings, indexedUpTo: () => this.indexedUpTo,
    userAt: (doc) => this.userAt(doc), rareCharsOfDoc: () => this.rareChars, nonAsciiFieldsOfDoc: () => this.nonAsciiFields,
  };

  /** userById: the current User of an id, for docs settled after a bulk load; without it they are settled at once. */
  constructor(private readonly userById?: (id: string) => User | undefined) {}

  /**
   * `existed`: the User was in the state before this change. One that existed and has no doc mapped is a
   * User of a bulk load whose doc is not settled yet: it will be settled with its current value.
   */
  upsert(user: User, existed = false): void {
    let doc = this.docOf.get(user.id);
    if (doc === undefined) {
      if (existed) return;
      doc = this.userOfDoc.length;
      // The doc first: the table reads ids from the docs.
      if (this.deferred && this.userById !== undefined) {
        this.userOfDoc.push(user.id);
        this.docOf.add(user.id, doc);
        return;
      }
      this.userOfDoc.push(user);
      this.docOf.add(user.id, doc);
      this.noteRareChars(doc, user);
      if (doc === this.settledUpTo) this.settledUpTo = doc + 1;
      if (!this.deferred && doc === this.indexedUpTo) {
        this.indexNewUser(doc, user);
        this.indexedUpTo = doc + 1;
      }
      return;
    }
    const old = this.userOfDoc[doc];
    this.userOfDoc[doc] = user;
    this.noteRareChars(doc, user);
    // A doc below indexedUpTo always holds its User (an id only above it). Its haystacks are made only to
    // compare their trigrams: most updates leave the searched fields as they were, and then nothing moves.
    if (doc < this.indexedUpTo) {
      const haystack = searchHaystack(user);
      const oldHaystack = searchHaystack(old as User);
      if (oldHaystack !== haystack) this.indexDoc(doc, haystack, oldHaystack);
    }
  }

  /**
   * The doc's User, settled from its current User if not settled yet; undefined for a deleted doc. A doc of
   * a bulk load is settled here: mapped to its id, or dropped if its User was deleted or has a doc of its
   * own since (deleted, then created again).
   */
  private userAt(doc: number): User | undefined {
    const known = this.userOfDoc[doc];
    if (typeof known !== 'string') return known;
    const owner = this.docOf.get(known);
    const user = owner === undefined || owner === doc ? this.userById?.(known) : undefined;
    if (user === undefined) {
      if (owner === doc) this.docOf.delete(known);
      this.userOfDoc[doc] = undefined;
      this.noteRareChars(doc, undefined);
      return undefined;
    }
    if (owner === undefined) this.docOf.add(known, doc);
    this.userOfDoc[doc] = user;
    this.noteRareChars(doc, user);
    return user;
  }

  /** Records the rareCharBits of a doc's User just put (none for a deleted doc), growing the arrays if need be. */
  private noteRareChars(doc: number, user: User | undefined): void {
    if (doc >= this.rareChars.length) {
      // Docs between the old end and this one are not settled yet: they hold every bit until they are.
      const length = Math.max(1024, this.rareChars.length * 2, doc + 1);
      const grown = new Uint16Array(length).fill(allRareChars);
      grown.set(this.rareChars);
      this.rareChars = grown;
      const grownNonAscii = new Uint8Array(length).fill(1);
      grownNonAscii.set(this.nonAsciiFields);
      this.nonAsciiFields = grownNonAscii;
    }
    const bits = user === undefined ? 0 : userRareCharBits(user);
    this.rareChars[doc] = bits & allRareChars;
    this.nonAsciiFields[doc] = bits >>> 16;
  }

  remove(userId: string): void {
    const doc = this.docOf.get(userId);
    if (doc === undefined) return;
    // While the doc still holds the User: the table reads ids from the docs.
    this.docOf.delete(userId);
    const old = this.userOfDoc[doc];
    this.userOfDoc[doc] = undefined;
    this.noteRareChars(doc, undefined);
    if (doc < this.indexedUpTo && typeof old === 'object') this.stalePostings += trigramKeys(searchHaystack(old)).size;
    this.maybeCompact();
  }

  /** Bulk loading (a snapshot): leave the postings to buildStep, so loading never waits for them. */
  defer(): void {
    this.deferred = true;
  }

  /**
   * A User of a bulk load (defer() first), given a doc without looking its id up: ids are unique in a
   * load. Its doc is settled later (userAt), with whatever the User is by then.
   */
  addLoaded(id: string): void {
    if (!this.deferred || this.userById === undefined) throw new Error('UserSearchIndex.addLoaded needs defer() and a userById');
    this.userOfDoc.push(id);
  }

  /** True while buildStep has work: users not yet in the postings, or stale postings being dropped. */
  get building(): boolean {
    return this.indexedUpTo < this.userOfDoc.length || this.compactingList >= 0;
  }

  /**
   * Index up to `docsMax` more users, or drop the stale postings of about as many; returns whether
   * work remains. Called a chunk per event-loop turn.
   */
  buildStep(docsMax: number): boolean {
    if (this.settledUpTo < this.userOfDoc.length) {
      // Every doc settled first, in a pass of its own: a scan meanwhile then checks Users without settling
      // them, and the passes below read settled docs only.
      // Room for every doc at once: a table regrown while they are settled would read every id again.
      this.docOf.reserve(this.userOfDoc.length);
      const end = Math.min(this.userOfDoc.length, this.settledUpTo + docsMax * settledDocsPerIndexedDoc);
      for (let doc = this.settledUpTo; doc < end; doc++) if (typeof this.userOfDoc[doc] === 'string') this.userAt(doc);
      this.settledUpTo = end;
    } else if (this.deferred && this.indexedUpTo < this.userOfDoc.length && this.sizing?.done !== true) {
      // Counted in a pass of its own, before any list is made, so that every list is made once (BulkSizing).
      const sizing = (this.sizing ??= new BulkSizing(this.indexedUpTo, this.userOfDoc.length));
      const end = Math.min(sizing.countEnd, sizing.countedUpTo + docsMax * countedDocsPerIndexedDoc);
      for (let doc = sizing.countedUpTo; doc < end; doc++) {
        const user = this.userOfDoc[doc];
        if (typeof user !== 'object') continue;
        const { keys, count } = this.trigrams.of(user);
        for (let i = 0; i < count; i++) sizing.countKey(doc, keys[i]!);
      }
      sizing.countedUpTo = end;
      sizing.reserve();
      if (sizing.done) sizing.counted();
    } else if (this.indexedUpTo < this.userOfDoc.length) {
      const end = Math.min(this.userOfDoc.length, this.indexedUpTo + docsMax);
      for (let doc = this.indexedUpTo; doc < end; doc++) {
        const user = this.userAt(doc);
        if (user !== undefined) this.indexNewUser(doc, user);
      }
      this.indexedUpTo = end;
      if (end === this.userOfDoc.length) {
        this.deferred = false;
        this.sizing = undefined;
      }
    } else if (this.compactingList >= 0) {
      // The build is done, so every live doc is mapped and docOf.size counts them.
      this.compactStep(docsMax * Math.ceil(this.postingsCount / Math.max(1, this.docOf.size)));
    }
    return this.building;
  }
  /**
   * Ids of matching users in creation order, at most `limit`, in one synchronous call: its work grows with
   * the users scanned or the postings walked, so request paths step a cursor() instead; this answers tests
   * and the micro benchmark. The term must already be lowercase.
   */
  search(termLower: string, limit: number): string[] {
    const out: string[] = [];
    this.cursor(termLower).step(out, limit, Number.POSITIVE_INFINITY);
    return out;
  }

  /**
   * A search to be walked a bounded slice at a time (SearchCursor.step), looking at docs from `fromDoc` on.
   * The term must already be lowercase.
   */
  cursor(termLower: string, fromDoc = 0): SearchCursor {
    return new SearchCursor(this.source, termLower, fromDoc);
  }

  /**
   * Where a later page's search may start: a doc such that none below it holds a User created after `after`.
   * Only meaningful while docs are in creation order (CreationOrder.appendOnly: nothing older was ever added),
   * as they are then: a binary search over the docs, comparing the live User at or after each probe (a
   * deleted one has no creation time to compare). `createdAtOf`: a live User's creation time.
   */
  firstDocAfter(after: PagePosition, createdAtOf: (id: string) => number | undefined): number {
    let lo = 0;
    let hi = this.userOfDoc.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      let doc = mid;
      let createdAt: number | undefined;
      for (; doc < hi; doc++) {
        const id = idOfEntry(this.userOfDoc[doc]);
        createdAt = id === undefined ? undefined : createdAtOf(id);
        if (createdAt !== undefined) break;
        // Every doc below lo is proven to precede the cursor: starting there is always right.
        if (doc - mid >= deletedDocsSteppedMax) return lo;
      }
      // Docs mid..doc-1 are deleted: the first User past the cursor is at or before mid if doc's is past it.
      if (createdAt === undefined || precedes(after.createdAt, after.id, createdAt, idOfEntry(this.userOfDoc[doc])!)) hi = mid;
      else lo = doc + 1;
    }
    return lo;
  }

  /** The same answer by checking every User: the baseline the index is measured against. */
  scan(termLower: string, limit: number): string[] {
    const out: string[] = [];
    if (termLower.length === 0 || termLower.includes(fieldSeparator)) return out;
    for (let doc = 0; doc < this.userOfDoc.length && out.length < limit; doc++) {
      const user = this.userAt(doc);
      if (user !== undefined && userMatches(user, termLower)) out.push(user.id);
    }
    return out;
  }

  /** Adds doc to the postings of every trigram of `haystack` that `old` (its previous haystack) lacked. */
  private indexDoc(doc: number, haystack: string, old: string): void {
    const oldKeys = trigramKeys(old);
    for (const key of trigramKeys(haystack)) {
      if (oldKeys.delete(key)) continue;
      if (this.postings.getOrCreate(key).add(doc)) this.postingsCount++;
    }
    this.stalePostings += oldKeys.size;
    this.maybeCompact();
  }

  /**
   * Adds a new doc to the postings of its User's trigrams, without making its haystack (UserTrigrams): the
   * build's hot loop and a created User's. No per-user Set: Postings.add skips a trigram the fields repeat.
   */
  private indexNewUser(doc: number, user: User): void {
    const { keys, count } = this.trigrams.of(user);
    for (let i = 0; i < count; i++) if (this.postings.getOrCreate(keys[i]!, this.sizing).add(doc)) this.postingsCount++;
  }

  /**
   * Too many stale postings: drop them in place, a chunk per buildStep. The postings stay complete
   * throughout (only postings the current User's fields no longer back go), so searches never fall back to
   * a scan, where rebuilding from scratch would scan every user for as long as the rebuild takes.
   */
  private maybeCompact(): void {
    if (this.compactingList >= 0 || this.postingsCount < 1024) return;
    if (this.stalePostings <= this.postingsCount * stalePostingsFractionMax) return;
    this.compactingList = 0;
    this.compactingFromDoc = 0;
  }

  private compactStep(postingsMax: number): void {
    const lists = this.postings.lists;
    let budget = postingsMax;
    while (budget > 0 && this.compactingList < lists.length) {
      const p = lists[this.compactingList]!;
      // An ASCII key spells its trigram; a hashed one does not, so its list only loses deleted users.
      const trigram = p.key < asciiKeys ? String.fromCharCode(p.key >> 14, (p.key >> 7) & 127, p.key & 127) : undefined;
      const lengthBefore = p.length;
      const { read, resumeAt } = p.compact(this.compactingFromDoc, budget, (doc) => {
        const user = this.userOfDoc[doc] as User | undefined;
        return user !== undefined && (trigram === undefined || userMatches(user, trigram));
      });
      this.postingsCount -= lengthBefore - p.length;
      budget -= read;
      if (resumeAt >= 0) {
        this.compactingFromDoc = resumeAt;
      } else {
        this.compactingList++;
        this.compactingFromDoc = 0;
      }
    }
    if (this.compactingList < lists.length) return;
    // Stale postings of hashed keys and those made behind the compaction stay; counting from zero keeps
    // them from starting pass after pass.
    this.compactingList = -1;
    this.stalePostings = 0;
  }
}
