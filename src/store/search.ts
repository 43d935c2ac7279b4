// The user search index: a precomputed lowercase haystack per user and a trigram index over them, kept current by State.apply.
//
// Users get a dense document number in creation order; each posting list holds doc numbers ascending and
// distinct (delta-coded in blocks, src/store/postings.ts), so lists intersect by skipping ahead and results
// come out in creation order. Every doc in the
// intersection is verified against its haystack, which makes stale postings (left behind by updates and
// deletes) and trigram-key collisions harmless: they cost a comparison, never a wrong answer.
//
// The trigram postings are derived data, not state: after a restart they are built a chunk at a time
// (buildStep, driven from outside the store) while searches scan the users not yet indexed, so start-up
// never waits for them. Stale postings are dropped in place by the same steps, the index answering throughout.
//
// A term too short for a trigram is answered by a scan of the haystacks in creation order: a common one finds its
// first matches at once, and one holding a rarer character (accented, another script, uncommon punctuation)
// passes over the haystacks that lack it by a few bits kept per user, without reading them.
//
// A search is a SearchCursor, stepped a bounded slice of work at a time by the caller (src/service/search-slices.ts),
// so neither a scan (a term under 3 characters, or users not indexed yet) nor a long intersection holds the
// event loop for longer than a slice; the store itself stays synchronous.

import { foldText } from '../domain/email.js';
import type { User } from '../domain/entities.js';
import { precedes, type PagePosition } from './creation-order.js';
import { asciiKeys, BulkSizing, PostingsCursor, PostingTable, type Postings } from './postings.js';

/** Fields joined by a separator no search term can contain, so a match never spans two fields. */
const fieldSeparator = '\u0000';
/** Stale postings tolerated before the index is rebuilt, as a fraction of all postings. */
const stalePostingsFractionMax = 0.25;

export function companyNameOf(user: User): string | undefined {
  const company = user.customData?.['company_name'];
  return typeof company === 'string' ? company : undefined;
}

export function searchHaystack(user: User): string {
  const parts = [user.email, user.name, user.id];
  for (const key of user.apikeys) parts.push(key.id);
  const company = companyNameOf(user);
  if (company !== undefined) parts.push(company);
  // Folded like a search term (users.ts): NFC and lowercase, so an address stored in NFD before addresses were stored NFC still matches.
  return foldText(parts.join(fieldSeparator));
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
 * Characters nearly every haystack holds (the letters and digits of ids, an address's punctuation, the space,
 * the field separator): they get no bit.
 */
function isCommonChar(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 48 && c <= 57) || c === 32 || c === 46 || c === 64 || c === 45 || c === 95 || c === 0;
}

/** Every bit of rareCharBits: what a doc whose haystack is not made yet is taken to hold. */
const allRareChars = 0xffff;

/**
 * The rarer characters of s (accented letters, other scripts, uncommon punctuation), hashed into 16 bits. A
 * haystack holds every character of a term it contains, so its bits include the term's: a scan for a short
 * term holding such a character skips, without reading them, the haystacks whose bits do not (most of them).
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

/** The bulk build's counting pass over one haystack: each trigram key in it, once (BulkSizing.countKey skips repeats). */
function countTrigrams(sizing: BulkSizing, doc: number, haystack: string): void {
  for (let i = 0; i + 3 <= haystack.length; i++) {
    const key = trigramKey(haystack, i);
    if (key !== noTrigram) sizing.countKey(doc, key);
  }
}

/** What a SearchCursor reads of its index: the arrays themselves (never replaced, only written in place) and the build's progress. */
interface DocSource {
  readonly userOfDoc: readonly (string | undefined)[];
  /** A doc's haystack; undefined once deleted, null until made (see UserSearchIndex.haystackAt). */
  readonly haystackOfDoc: readonly (string | null | undefined)[];
  readonly postings: PostingTable;
  /** Docs below this are in the postings (every trigram of their current haystack); it never decreases. */
  indexedUpTo(): number;
  /** The haystack of a doc whose haystack is null, made now and kept. */
  haystackAt(doc: number): string | undefined;
  /**
   * rareCharBits of each doc's haystack: allRareChars where it is not made yet, nothing for a deleted doc; a doc
   * past the array's end is unknown. The array is replaced as it grows, so this is asked once per step.
   */
  rareCharsOfDoc(): Uint16Array;
}

/**
 * Work units (see searchDocsPerSlice) of a haystack made during a scan: joining and lowercasing a User's
 * fields costs about this many times checking one already made.
 */
const haystackMadeWorkUnits = 16;
/** Haystacks the build makes per doc it indexes in a step: making one costs a fraction of indexing it. */
const haystackDocsPerIndexedDoc = 4;
/** Docs the build counts per doc it indexes in a step (BulkSizing.count is a few array reads a trigram). */
const countedDocsPerIndexedDoc = 4;
/** Docs a scan skips by their rareCharBits per unit of work: reading a number costs a fraction of checking a haystack. */
const docsSkippedPerWorkUnit = 16;
/**
 * Deleted docs firstDocAfter steps over looking for a live one to compare with the page's cursor, before it
 * settles for the start it has proven (a run of deleted Users that long is rare; the search then starts earlier).
 */
const deletedDocsSteppedMax = 4096;

/**
 * One search, walked a bounded slice at a time so that the caller can let the event loop run between
 * slices. Docs are looked at in ascending order (creation order), indexed ones through the postings and
 * the rest (a build in progress, or a term too short for a trigram) by their haystacks. Between slices
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
  /** rareCharBits of the term: a haystack without all of them cannot contain it. */
  private readonly rareChars: number;

  private workTotal = 0;

  /** fromDoc: no doc below it can match (a later page starts at its cursor, see UserSearchIndex.firstDocAfter). */
  constructor(private readonly source: DocSource, private readonly termLower: string, fromDoc = 0) {
    this.nextDoc = fromDoc;
    this.finished = termLower.length === 0 || termLower.includes(fieldSeparator);
    this.rareChars = rareCharBits(termLower);
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
   * stopping once about `workMax` units of work are done (a unit is a haystack checked or a posting list
   * probed, see searchDocsPerSlice; one candidate's probes may overrun it by the term's trigram count).
   * Returns done. Always makes progress, however small workMax is.
   */
  step(out: string[], countMax: number, workMax: number): boolean {
    // Both are read once per step: nothing changes them while it runs.
    const docCount = this.source.haystackOfDoc.length;
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
   * docs in every list are checked against their haystack (stale postings, key collisions, trigram order),
   * rather than every doc of the smallest list, which for a common trigram is thousands of haystacks to
   * check for a few matches. The other lists are probed in the
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
    const haystacks = this.source.haystackOfDoc;
    const term = this.termLower;
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
        const haystack = haystacks[doc];
        if (haystack != null && haystack.includes(term)) out.push(this.source.userOfDoc[doc]!);
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
   * Checks haystacks from nextDoc up to `end`, one unit of work each (more for one it has to make, less for
   * one its rareCharBits rule out); returns the work done.
   */
  private scan(out: string[], countMax: number, workMax: number, end: number): number {
    const haystacks = this.source.haystackOfDoc;
    const bits = this.source.rareCharsOfDoc();
    const need = this.rareChars;
    const known = Math.min(end, bits.length);
    let doc = this.nextDoc;
    let work = 0;
    while (doc < end && work < workMax && out.length < countMax) {
      if (need !== 0) {
        // A term with a rarer character: the haystacks without it are passed over by their bits alone.
        const stop = Math.min(known, doc + (workMax - work) * docsSkippedPerWorkUnit);
        let past = doc;
        while (past < stop && (bits[past]! & need) !== need) past++;
        if (past > doc) {
          work += Math.ceil((past - doc) / docsSkippedPerWorkUnit);
          doc = past;
          continue;
        }
      }
      let haystack = haystacks[doc];
      if (haystack === null) {
        haystack = this.source.haystackAt(doc);
        work += haystackMadeWorkUnits - 1;
      }
      if (haystack !== undefined && haystack.includes(this.termLower)) out.push(this.source.userOfDoc[doc]!);
      doc++;
      work++;
    }
    this.nextDoc = doc;
    return work;
  }
}

export class UserSearchIndex {
  /**
   * Id -> doc, for every live doc but those of a bulk load (addLoaded) not settled yet: such a doc is put
   * in when its haystack is made (haystackAt). Filling it for a million Users at once would lengthen start-up.
   */
  private readonly docOf = new Map<string, number>();
  private readonly userOfDoc: (string | undefined)[] = [];
  /**
   * undefined: the doc's user is deleted. null: a user put while loading, whose haystack is made when first
   * needed (the build, or a scan) from its current User (userById): making a million of them at start-up
   * would lengthen it and hold more memory at the moment the service becomes ready. Below indexedUpTo, never null.
   */
  private readonly haystackOfDoc: (string | null | undefined)[] = [];
  /** rareCharBits per doc (see DocSource.rareCharsOfDoc), grown as haystacks are made; 2 bytes a User. */
  private rareChars = new Uint16Array(0);
  private readonly postings = new PostingTable();
  /** Docs below this are in the postings; the rest are indexed by buildStep and scanned meanwhile. */
  private indexedUpTo = 0;
  private postingsCount = 0;
  private stalePostings = 0;
  private deferred = false;
  /** While stale postings are dropped (buildStep): the next list to compact and the doc to resume it at; -1 when idle. */
  private compactingList = -1;
  private compactingFromDoc = 0;
  /** Docs below this have their haystack made (or are deleted); the build makes them all before any postings. */
  private haystacksMadeUpTo = 0;
  /** The bulk build's list sizes, from its counting pass (after the haystacks, before any postings) until it ends. */
  private sizing: BulkSizing | undefined;
  /** What cursors read: made once, so a search allocates no closure for it. */
  private readonly source: DocSource = {
    userOfDoc: this.userOfDoc, haystackOfDoc: this.haystackOfDoc, postings: this.postings, indexedUpTo: () => this.indexedUpTo,
    haystackAt: (doc) => this.haystackAt(doc), rareCharsOfDoc: () => this.rareChars,
  };

  /** userById: the current User of an id, for haystacks made after a bulk load; without it they are made at once. */
  constructor(private readonly userById?: (id: string) => User | undefined) {}

  /**
   * `existed`: the User was in the state before this change. One that existed and has no doc mapped is a
   * User of a bulk load whose doc is not settled yet: its haystack will be made from its current value.
   */
  upsert(user: User, existed = false): void {
    let doc = this.docOf.get(user.id);
    if (doc === undefined) {
      if (existed) return;
      doc = this.userOfDoc.length;
      this.docOf.set(user.id, doc);
      this.userOfDoc.push(user.id);
      if (this.deferred && this.userById !== undefined) {
        this.haystackOfDoc.push(null);
        return;
      }
      const haystack = searchHaystack(user);
      this.haystackOfDoc.push(haystack);
      this.noteRareChars(doc, haystack);
      if (doc === this.haystacksMadeUpTo) this.haystacksMadeUpTo = doc + 1;
      if (!this.deferred && doc === this.indexedUpTo) {
        this.indexDoc(doc, haystack, undefined);
        this.indexedUpTo = doc + 1;
      }
      return;
    }
    const haystack = searchHaystack(user);
    const old = this.haystackOfDoc[doc];
    if (old === haystack) return;
    this.haystackOfDoc[doc] = haystack;
    this.noteRareChars(doc, haystack);
    // A doc below indexedUpTo always has its haystack (null only above it).
    if (doc < this.indexedUpTo) this.indexDoc(doc, haystack, old ?? undefined);
  }

  /**
   * The doc's haystack, made from its current User if not made yet; undefined for a deleted doc. A doc of a
   * bulk load is settled here: mapped to its id, or dropped if its User was deleted or has a doc of its
   * own since (deleted, then created again).
   */
  private haystackAt(doc: number): string | undefined {
    const known = this.haystackOfDoc[doc];
    if (known !== null) return known;
    const id = this.userOfDoc[doc]!;
    const owner = this.docOf.get(id);
    const user = owner === undefined || owner === doc ? this.userById?.(id) : undefined;
    if (user === undefined) {
      this.userOfDoc[doc] = undefined;
      this.haystackOfDoc[doc] = undefined;
      this.noteRareChars(doc, undefined);
      return undefined;
    }
    if (owner === undefined) this.docOf.set(id, doc);
    const haystack = searchHaystack(user);
    this.haystackOfDoc[doc] = haystack;
    this.noteRareChars(doc, haystack);
    return haystack;
  }

  /** Records the rareCharBits of a doc's haystack just made (none for a deleted doc), growing the array if need be. */
  private noteRareChars(doc: number, haystack: string | undefined): void {
    if (doc >= this.rareChars.length) {
      // Docs between the old end and this one are not made yet: they hold every bit until they are.
      const grown = new Uint16Array(Math.max(1024, this.rareChars.length * 2, doc + 1)).fill(allRareChars);
      grown.set(this.rareChars);
      this.rareChars = grown;
    }
    this.rareChars[doc] = haystack === undefined ? 0 : rareCharBits(haystack);
  }

  remove(userId: string): void {
    const doc = this.docOf.get(userId);
    if (doc === undefined) return;
    this.docOf.delete(userId);
    const old = this.haystackOfDoc[doc];
    this.userOfDoc[doc] = undefined;
    this.haystackOfDoc[doc] = undefined;
    this.noteRareChars(doc, undefined);
    if (doc < this.indexedUpTo && old != null) this.stalePostings += trigramKeys(old).size;
    this.maybeCompact();
  }

  /** Bulk loading (a snapshot): leave the postings to buildStep, so loading never waits for them. */
  defer(): void {
    this.deferred = true;
  }

  /**
   * A User of a bulk load (defer() first), given a doc without looking its id up: ids are unique in a
   * load. Its doc is settled and its haystack made later (haystackAt), from whatever the User is by then.
   */
  addLoaded(id: string): void {
    if (!this.deferred || this.userById === undefined) throw new Error('UserSearchIndex.addLoaded needs defer() and a userById');
    this.userOfDoc.push(id);
    this.haystackOfDoc.push(null);
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
    if (this.haystacksMadeUpTo < this.userOfDoc.length) {
      // All haystacks first, in a pass of their own: made without the postings' arrays in between, they end
      // up side by side in memory, and a scan over them (a short term) runs about twice as fast.
      const end = Math.min(this.userOfDoc.length, this.haystacksMadeUpTo + docsMax * haystackDocsPerIndexedDoc);
      for (let doc = this.haystacksMadeUpTo; doc < end; doc++) if (this.haystackOfDoc[doc] === null) this.haystackAt(doc);
      this.haystacksMadeUpTo = end;
    } else if (this.deferred && this.indexedUpTo < this.userOfDoc.length && this.sizing?.done !== true) {
      // Counted in a pass of its own, before any list is made, so that every list is made once (BulkSizing).
      const sizing = (this.sizing ??= new BulkSizing(this.indexedUpTo, this.userOfDoc.length));
      const end = Math.min(sizing.countEnd, sizing.countedUpTo + docsMax * countedDocsPerIndexedDoc);
      for (let doc = sizing.countedUpTo; doc < end; doc++) {
        const haystack = this.haystackOfDoc[doc];
        if (haystack != null) countTrigrams(sizing, doc, haystack);
      }
      sizing.countedUpTo = end;
      sizing.reserve();
      if (sizing.done) sizing.counted();
    } else if (this.indexedUpTo < this.userOfDoc.length) {
      const end = Math.min(this.userOfDoc.length, this.indexedUpTo + docsMax);
      for (let doc = this.indexedUpTo; doc < end; doc++) {
        const haystack = this.haystackAt(doc);
        if (haystack !== undefined) this.indexNew(doc, haystack);
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
        const id = this.userOfDoc[doc];
        createdAt = id === undefined ? undefined : createdAtOf(id);
        if (createdAt !== undefined) break;
        // Every doc below lo is proven to precede the cursor: starting there is always right.
        if (doc - mid >= deletedDocsSteppedMax) return lo;
      }
      // Docs mid..doc-1 are deleted: the first User past the cursor is at or before mid if doc's is past it.
      if (createdAt === undefined || precedes(after.createdAt, after.id, createdAt, this.userOfDoc[doc]!)) hi = mid;
      else lo = doc + 1;
    }
    return lo;
  }

  /** The same answer by checking every haystack: the baseline the index is measured against. */
  scan(termLower: string, limit: number): string[] {
    const out: string[] = [];
    if (termLower.length === 0 || termLower.includes(fieldSeparator)) return out;
    for (let doc = 0; doc < this.haystackOfDoc.length && out.length < limit; doc++) {
      let haystack = this.haystackOfDoc[doc];
      if (haystack === null) haystack = this.haystackAt(doc);
      if (haystack !== undefined && haystack.includes(termLower)) out.push(this.userOfDoc[doc]!);
    }
    return out;
  }

  /** Adds doc to the postings of every trigram of `haystack` that `old` (its previous haystack) lacked. */
  private indexDoc(doc: number, haystack: string, old: string | undefined): void {
    if (old === undefined) return this.indexNew(doc, haystack);
    const oldKeys = trigramKeys(old);
    for (const key of trigramKeys(haystack)) {
      if (oldKeys.delete(key)) continue;
      if (this.postings.getOrCreate(key).add(doc)) this.postingsCount++;
    }
    this.stalePostings += oldKeys.size;
    this.maybeCompact();
  }

  /** The build's hot loop: no per-user Set, Postings.add skips a trigram the haystack repeats. */
  private indexNew(doc: number, haystack: string): void {
    for (let i = 0; i + 3 <= haystack.length; i++) {
      const key = trigramKey(haystack, i);
      if (key !== noTrigram && this.postings.getOrCreate(key, this.sizing).add(doc)) this.postingsCount++;
    }
  }

  /**
   * Too many stale postings: drop them in place, a chunk per buildStep. The postings stay complete
   * throughout (only postings the current haystack no longer backs go), so searches never fall back to
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
        const haystack = this.haystackOfDoc[doc];
        return haystack != null && (trigram === undefined || haystack.includes(trigram));
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
