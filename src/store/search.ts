// The user search index: a precomputed lowercase haystack per user and a trigram index over them, kept current by State.apply.
//
// Users get a dense document number in creation order, so posting lists appended in that order are
// already sorted and results come out in creation order. Every candidate is verified against its
// haystack, which makes stale postings (left behind by updates and deletes) and trigram-key
// collisions harmless: they cost a comparison, never a wrong answer.
//
// The trigram postings are derived data, not state: after a restart they are rebuilt a chunk at a time
// (buildStep, driven from outside the store) while searches fall back to a linear scan, so start-up
// never waits for them and no single event-loop turn does work proportional to the user count.

import type { User } from '../domain/entities.js';

/** Fields joined by a separator no search term can contain, so a match never spans two fields. */
const fieldSeparator = '\u0000';
/** Stale postings tolerated before the index is rebuilt, as a fraction of all postings. */
const stalePostingsFractionMax = 0.25;
const postingsInitialCapacity = 4;

export function companyNameOf(user: User): string | undefined {
  const company = user.customData?.['company_name'];
  return typeof company === 'string' ? company : undefined;
}

export function searchHaystack(user: User): string {
  const parts = [user.email, user.name, user.id];
  for (const key of user.apikeys) parts.push(key.id);
  const company = companyNameOf(user);
  if (company !== undefined) parts.push(company);
  return parts.join(fieldSeparator).toLowerCase();
}

/**
 * A small-integer key per trigram, so Map lookups stay on V8's fast Smi path: ASCII trigrams get an
 * exact 21-bit key, others a 29-bit hash above that range (a collision only adds candidates).
 */
function trigramKey(s: string, i: number): number {
  return keyOf(s.charCodeAt(i), s.charCodeAt(i + 1), s.charCodeAt(i + 2));
}

function keyOf(a: number, b: number, c: number): number {
  if ((a | b | c) < 128) return (a << 14) | (b << 7) | c;
  return 0x200000 + ((Math.imul(a, 0x9e3779b1) ^ Math.imul(b, 0x85ebca6b) ^ Math.imul(c, 0xc2b2ae35)) >>> 0) % 0x1fe00000;
}

/** Distinct trigram keys of s that lie within one field. */
function trigramKeys(s: string): Set<number> {
  const keys = new Set<number>();
  for (let i = 0; i + 3 <= s.length; i++) {
    if (s.charCodeAt(i) === 0 || s.charCodeAt(i + 1) === 0 || s.charCodeAt(i + 2) === 0) continue;
    keys.add(trigramKey(s, i));
  }
  return keys;
}

class Postings {
  docs = new Int32Array(postingsInitialCapacity);
  length = 0;
  /** False once a doc was appended out of order (an update added a trigram to an older user). */
  sorted = true;
  /** Last doc appended, so indexing one haystack never adds the same doc twice. */
  lastDoc = -1;

  /** False when doc was the last one added (the same haystack repeats a trigram). */
  add(doc: number): boolean {
    if (doc === this.lastDoc) return false;
    if (this.length === this.docs.length) {
      const grown = new Int32Array(this.docs.length * 2);
      grown.set(this.docs);
      this.docs = grown;
    }
    if (this.length > 0 && doc < this.docs[this.length - 1]!) this.sorted = false;
    this.docs[this.length++] = doc;
    this.lastDoc = doc;
    return true;
  }
}

/** ASCII trigrams (exact 21-bit keys) in a flat array: the build does ~80 lookups per user, a Map costs several times more. */
const asciiKeys = 1 << 21;

class PostingTable {
  private readonly ascii: (Postings | undefined)[] = new Array<Postings | undefined>(asciiKeys);
  private readonly other = new Map<number, Postings>();

  get(key: number): Postings | undefined {
    return key < asciiKeys ? this.ascii[key] : this.other.get(key);
  }

  getOrCreate(key: number): Postings {
    let p = this.get(key);
    if (p === undefined) {
      p = new Postings();
      if (key < asciiKeys) this.ascii[key] = p;
      else this.other.set(key, p);
    }
    return p;
  }
}

export class UserSearchIndex {
  private readonly docOf = new Map<string, number>();
  private readonly userOfDoc: (string | undefined)[] = [];
  private readonly haystackOfDoc: (string | undefined)[] = [];
  private postings = new PostingTable();
  /** Docs below this are in the postings; the rest are indexed by buildStep. */
  private indexedUpTo = 0;
  private postingsCount = 0;
  private stalePostings = 0;
  private deferred = false;

  upsert(user: User): void {
    const haystack = searchHaystack(user);
    let doc = this.docOf.get(user.id);
    if (doc === undefined) {
      doc = this.userOfDoc.length;
      this.docOf.set(user.id, doc);
      this.userOfDoc.push(user.id);
      this.haystackOfDoc.push(haystack);
      if (!this.deferred && doc === this.indexedUpTo) {
        this.indexDoc(doc, haystack, undefined);
        this.indexedUpTo = doc + 1;
      }
      return;
    }
    const old = this.haystackOfDoc[doc];
    if (old === haystack) return;
    this.haystackOfDoc[doc] = haystack;
    if (doc < this.indexedUpTo) this.indexDoc(doc, haystack, old);
  }

  remove(userId: string): void {
    const doc = this.docOf.get(userId);
    if (doc === undefined) return;
    this.docOf.delete(userId);
    const old = this.haystackOfDoc[doc];
    this.userOfDoc[doc] = undefined;
    this.haystackOfDoc[doc] = undefined;
    if (doc < this.indexedUpTo && old !== undefined) this.stalePostings += trigramKeys(old).size;
    this.maybeRebuild();
  }

  /** Bulk loading (a snapshot): leave the postings to buildStep, so loading never waits for them. */
  defer(): void {
    this.deferred = true;
  }

  /** True while some users are not yet in the trigram postings (searches then scan). */
  get building(): boolean {
    return this.indexedUpTo < this.userOfDoc.length;
  }

  /** Index up to `docsMax` more users; returns whether work remains. Called a chunk per event-loop turn. */
  buildStep(docsMax: number): boolean {
    const end = Math.min(this.userOfDoc.length, this.indexedUpTo + docsMax);
    for (let doc = this.indexedUpTo; doc < end; doc++) {
      const haystack = this.haystackOfDoc[doc];
      if (haystack !== undefined) this.indexDoc(doc, haystack, undefined);
    }
    this.indexedUpTo = end;
    if (!this.building) this.deferred = false;
    return this.building;
  }

  /** Ids of matching users in creation order, at most `limit`. The term must already be lowercase. */
  search(termLower: string, limit: number): string[] {
    if (termLower.length === 0 || termLower.includes(fieldSeparator)) return [];
    if (termLower.length < 3 || this.building) return this.scan(termLower, limit);
    let best: Postings | undefined;
    for (const key of trigramKeys(termLower)) {
      const p = this.postings.get(key);
      if (p === undefined || p.length === 0) return [];
      if (best === undefined || p.length < best.length) best = p;
    }
    return this.verify(best!, termLower, limit);
  }

  /** The same answer by checking every haystack: the fallback, and the baseline the index is measured against. */
  scan(termLower: string, limit: number): string[] {
    const out: string[] = [];
    if (termLower.length === 0 || termLower.includes(fieldSeparator)) return out;
    for (let doc = 0; doc < this.haystackOfDoc.length && out.length < limit; doc++) {
      const haystack = this.haystackOfDoc[doc];
      if (haystack !== undefined && haystack.includes(termLower)) out.push(this.userOfDoc[doc]!);
    }
    return out;
  }

  private verify(p: Postings, termLower: string, limit: number): string[] {
    const docs = p.sorted ? p.docs.subarray(0, p.length) : Int32Array.from(new Set(p.docs.subarray(0, p.length))).sort();
    const out: string[] = [];
    for (let i = 0; i < docs.length && out.length < limit; i++) {
      const doc = docs[i]!;
      const haystack = this.haystackOfDoc[doc];
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
    this.maybeRebuild();
  }

  /** The build's hot loop: no per-user Set, Postings.add skips a trigram the haystack repeats. */
  private indexNew(doc: number, haystack: string): void {
    for (let i = 0; i + 3 <= haystack.length; i++) {
      const a = haystack.charCodeAt(i);
      const b = haystack.charCodeAt(i + 1);
      const c = haystack.charCodeAt(i + 2);
      if (a === 0 || b === 0 || c === 0) continue;
      if (this.postings.getOrCreate(keyOf(a, b, c)).add(doc)) this.postingsCount++;
    }
  }

  /** Too many stale postings: start over, rebuilt a chunk at a time by buildStep. */
  private maybeRebuild(): void {
    if (this.stalePostings <= this.postingsCount * stalePostingsFractionMax || this.postingsCount < 1024) return;
    this.postings = new PostingTable();
    this.indexedUpTo = 0;
    this.postingsCount = 0;
    this.stalePostings = 0;
  }
}
