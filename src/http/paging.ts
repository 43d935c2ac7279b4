// Listings: `limit`, `cursor`, `offset` and `minimal` from the query string, the opaque cursor, a page cut to
// its byte budget, and unpaged listings rendered in bounded slices.
//
// A cursor names the last entity of the previous page by (created_at in µs, id): creation order is
// strictly increasing and survives restarts, so the next page starts right after it even when that
// entity was deleted meanwhile, and entities created later only ever add to the end. An entity that
// existed when paging began is therefore seen exactly once (unless deleted before its page is read).
//
// `offset` is for clients written against econtext-auth, which pages by offset: the page starts that many
// entities into the same order, 0-based, and carries the same `next`, so such a client can switch to the
// cursor. An offset is counted from the start of the order (a cursor is found by a binary search), a walk
// for a subset or a search, so it is bounded by pageOffsetMax.

import { listInlineCharsMax, listSliceCharsMax, pageBytesMax, pageCursorCharsMax, pageItemsMax, pageOffsetMax } from '../config/limits.js';
import { DomainError } from '../domain/errors.js';
import type { BodyPiece } from './adapter.js';
import type { Page, PagePosition } from '../store/creation-order.js';
import { isWellFormedId } from '../domain/ids.js';
import { streamPause } from './pipeline.js';
import type { RouteResult } from './route.js';

export interface PageRequest {
  readonly limit: number;
  /** Undefined for the first page, and for a page asked for by offset. */
  readonly after: PagePosition | undefined;
  /** Entities of the order left out before the page (`offset`); 0 unless asked for, and always 0 with a cursor. */
  readonly offset: number;
}

function invalidQuery(message: string): DomainError {
  return new DomainError('invalid_query', message);
}

export function encodeCursor(position: PagePosition): string {
  return Buffer.from(`${position.createdAt}.${position.id}`, 'utf8').toString('base64url');
}

const cursorText = /^(\d{1,17})\.([0-9A-Za-z]+)$/;

export function decodeCursor(cursor: string): PagePosition {
  if (cursor.length === 0 || cursor.length > pageCursorCharsMax || !/^[A-Za-z0-9_-]+$/.test(cursor)) {
    throw invalidQuery('cursor: not a cursor this service issued (use the `next` of the previous page).');
  }
  const m = cursorText.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  const createdAt = m === null ? NaN : Number(m[1]);
  if (m === null || !Number.isSafeInteger(createdAt) || !isWellFormedId(m[2]!)) {
    throw invalidQuery('cursor: not a cursor this service issued (use the `next` of the previous page).');
  }
  return { createdAt, id: m[2]! };
}

function parseLimit(raw: string): number {
  // Digits only: Number() would also take "1e3", " 5" or "0x10".
  const n = /^[0-9]{1,7}$/.test(raw) ? Number(raw) : NaN;
  if (!(n >= 1 && n <= pageItemsMax)) throw invalidQuery(`limit: must be an integer from 1 to ${pageItemsMax}.`);
  return n;
}

function parseOffset(raw: string): number {
  // Digits only, as for limit: no sign, fraction, exponent or blanks. One digit more than the bound may hold
  // is enough to refuse anything larger without reading it as a number.
  const n = /^[0-9]+$/.test(raw) && raw.length <= String(pageOffsetMax).length + 1 ? Number(raw) : NaN;
  if (!(n >= 0 && n <= pageOffsetMax)) {
    throw invalidQuery(`offset: must be an integer from 0 to ${pageOffsetMax} (page further with the \`next\` cursor).`);
  }
  return n;
}

type PageParameter = 'limit' | 'cursor' | 'offset';

function isPageParameter(name: string): name is PageParameter {
  return name === 'limit' || name === 'cursor' || name === 'offset';
}

/**
 * The page a listing's query asks for, or undefined when it gives no `limit` (the listing then answers
 * whole, as the spec's clients expect). Other query parameters are ignored, like unknown body fields.
 */
export function pageRequest(query: string): PageRequest | undefined {
  if (query.length === 0) return undefined;
  const given: Partial<Record<PageParameter, string>> = {};
  for (const pair of query.split('&')) {
    const eq = pair.indexOf('=');
    const name = eq === -1 ? pair : pair.slice(0, eq);
    if (!isPageParameter(name)) continue;
    let value: string;
    try {
      value = decodeURIComponent(eq === -1 ? '' : pair.slice(eq + 1));
    } catch {
      throw invalidQuery(`${name}: not well-formed percent-encoding.`);
    }
    if (given[name] !== undefined) throw invalidQuery(`${name}: given more than once.`);
    given[name] = value;
  }
  const { limit, cursor, offset } = given;
  if (cursor !== undefined && offset !== undefined) {
    throw invalidQuery('offset and cursor: give one of them, not both (a cursor already marks where its page starts).');
  }
  if (limit === undefined) {
    if (cursor !== undefined) throw invalidQuery('cursor: needs limit (pass the same limit as for the first page).');
    if (offset !== undefined) throw invalidQuery('offset: needs limit.');
    return undefined;
  }
  return {
    limit: parseLimit(limit),
    after: cursor === undefined ? undefined : decodeCursor(cursor),
    offset: offset === undefined ? 0 : parseOffset(offset),
  };
}

/**
 * `{"<key>":[...],"next":"<cursor>"}`; `next` only when more entities follow. Items are rendered until the
 * next would take the page past pageBytesMax: the page then ends there (with at least one item) and `next`
 * names its last item, so the following page starts with the item left out.
 */
export function pageResult<T extends PagePosition>(key: string, page: Page<T>, render: (item: T) => string | readonly string[]): readonly BodyPiece[] {
  const items: (string | readonly string[])[] = [];
  // Bytes of the items so far, counted exactly only once their bound (3 per UTF-16 unit) could pass pageBytesMax:
  // a page far below it (the usual one) is never scanned for its UTF-8 length.
  let bytes = 0;
  let exact = false;
  let more = page.more;
  for (const item of page.items) {
    const json = render(item);
    // +1: the comma between items.
    bytes += (exact ? utf8Bytes(json) : charsOf(json) * 3) + 1;
    if (!exact && bytes > pageBytesMax) {
      exact = true;
      bytes = items.length;
      for (const done of items) bytes += utf8Bytes(done);
      bytes += utf8Bytes(json) + 1;
    }
    if (bytes > pageBytesMax && items.length > 0) {
      more = true;
      break;
    }
    items.push(json);
  }
  const last = page.items[items.length - 1];
  const next = more && last !== undefined ? `,"next":"${encodeCursor(last)}"` : '';
  // In pieces, not joined: a page of kept renderings is sent without being copied into one string first, and an
  // item in pieces stays a list of its own. Made at its final length (the items, a comma between each two, the
  // opening and the close).
  const pieces = new Array<BodyPiece>(items.length === 0 ? 2 : 2 * items.length + 1);
  let at = 0;
  pieces[at++] = `{"${key}":[`;
  for (let i = 0; i < items.length; i++) {
    if (i > 0) pieces[at++] = ',';
    pieces[at++] = items[i]!;
  }
  pieces[at] = `]${next}}`;
  return pieces;
}

function charsOf(text: string | readonly string[]): number {
  if (typeof text === 'string') return text.length;
  let chars = 0;
  for (const part of text) chars += part.length;
  return chars;
}

function utf8Bytes(text: string | readonly string[]): number {
  if (typeof text === 'string') return Buffer.byteLength(text, 'utf8');
  let bytes = 0;
  for (const part of text) bytes += Buffer.byteLength(part, 'utf8');
  return bytes;
}

/**
 * `minimal=1` (or `true`) on user listings and searches: Users without applications, groups and API Keys.
 * `0`, `false` or no `minimal` ask for the usual representation; anything else is refused.
 */
export function minimalRequested(query: string): boolean {
  if (query.length === 0) return false;
  let minimal: boolean | undefined;
  for (const pair of query.split('&')) {
    const eq = pair.indexOf('=');
    if ((eq === -1 ? pair : pair.slice(0, eq)) !== 'minimal') continue;
    if (minimal !== undefined) throw invalidQuery('minimal: given more than once.');
    const value = eq === -1 ? '' : pair.slice(eq + 1);
    if (value === '1' || value === 'true') minimal = true;
    else if (value === '0' || value === 'false') minimal = false;
    else throw invalidQuery('minimal: must be 1, true, 0 or false.');
  }
  return minimal ?? false;
}

/**
 * An unpaged listing of rendered items (streamPause among them from a producer that works in slices): one
 * string when short, else streamed, the rendering then stopping for the event loop after every
 * listSliceCharsMax. A listing of many or large items then neither builds one huge string nor holds the
 * loop for longer than a slice (plus one item) at a time.
 */
export function listing(key: string, rendered: Iterable<string>): RouteResult {
  const items = rendered[Symbol.iterator]();
  const head: string[] = [];
  let chars = 0;
  for (;;) {
    const next = items.next();
    if (next.done === true) return { result: `{"${key}":[${head.join(',')}]}` };
    // A producer that pauses may take many turns: stream from here.
    if (next.value === streamPause) break;
    head.push(next.value);
    // +1: the comma after it. The head then fills the first chunk of a streamed answer, no more.
    chars += next.value.length + 1;
    if (chars > listInlineCharsMax) break;
  }
  return { list: { key, items: inSlices(head, items) } };
}

/** Items rendered one by one as the listing is sent, not all up front. */
export function* rendering<T>(items: Iterable<T>, render: (item: T) => string): Generator<string> {
  for (const item of items) yield render(item);
}

function* inSlices(head: readonly string[], rest: Iterator<string>): Generator<string> {
  yield* head;
  yield streamPause;
  let chars = 0;
  for (let next = rest.next(); next.done !== true; next = rest.next()) {
    const item = next.value;
    if (item === streamPause) chars = 0;
    else chars += item.length;
    yield item;
    if (chars >= listSliceCharsMax) {
      chars = 0;
      yield streamPause;
    }
  }
}
