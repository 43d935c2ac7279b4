// Paged listings: `limit` and `cursor` from the query string, the opaque cursor, and the result of one page.
//
// A cursor names the last entity of the previous page by (created_at in µs, id): creation order is
// strictly increasing and survives restarts, so the next page starts right after it even when that
// entity was deleted meanwhile, and entities created later only ever add to the end. An entity that
// existed when paging began is therefore seen exactly once (unless deleted before its page is read).

import { pageCursorCharsMax, pageItemsMax } from '../config/limits.js';
import { DomainError } from '../domain/errors.js';
import type { Page, PagePosition } from '../store/creation-order.js';
import { isWellFormedId } from '../store/ids.js';

export interface PageRequest {
  readonly limit: number;
  /** Undefined for the first page. */
  readonly after: PagePosition | undefined;
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

/**
 * The page a listing's query asks for, or undefined when it gives no `limit` (the listing then answers
 * whole, as the spec's clients expect). Other query parameters are ignored, like unknown body fields.
 */
export function pageRequest(query: string): PageRequest | undefined {
  if (query.length === 0) return undefined;
  let limit: string | undefined;
  let cursor: string | undefined;
  for (const pair of query.split('&')) {
    const eq = pair.indexOf('=');
    const name = eq === -1 ? pair : pair.slice(0, eq);
    if (name !== 'limit' && name !== 'cursor') continue;
    let value: string;
    try {
      value = decodeURIComponent(eq === -1 ? '' : pair.slice(eq + 1));
    } catch {
      throw invalidQuery(`${name}: not well-formed percent-encoding.`);
    }
    if ((name === 'limit' ? limit : cursor) !== undefined) throw invalidQuery(`${name}: given more than once.`);
    if (name === 'limit') limit = value;
    else cursor = value;
  }
  if (limit === undefined) {
    if (cursor !== undefined) throw invalidQuery('cursor: needs limit (pass the same limit as for the first page).');
    return undefined;
  }
  return { limit: parseLimit(limit), after: cursor === undefined ? undefined : decodeCursor(cursor) };
}

/** `{"<key>":[...],"next":"<cursor>"}`; `next` only when more entities follow. */
export function pageResult<T extends PagePosition>(key: string, page: Page<T>, render: (item: T) => string): string {
  const items = page.items.map(render).join(',');
  const last = page.items[page.items.length - 1];
  const next = page.more && last !== undefined ? `,"next":"${encodeCursor(last)}"` : '';
  return `{"${key}":[${items}]${next}}`;
}
