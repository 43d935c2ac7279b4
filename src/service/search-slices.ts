// Searches run a bounded slice per event-loop turn: the stepping of the store's synchronous search cursors and pages.

import { setImmediate as nextTurn } from 'node:timers/promises';
import { searchDocsPerSlice } from '../config/limits.js';
import type { User } from '../domain/entities.js';
import type { Page } from '../store/creation-order.js';
import type { PagedSearch } from '../store/search-page.js';
import type { SearchCursor } from '../store/search.js';

/**
 * Calls `step` (a bounded slice of work; undefined while work remains) until it answers, letting the event
 * loop run between calls. The first call's answer comes back as it is, not in a promise: most searches
 * finish in their first slice, and a promise would cost each of them a trip through the event loop.
 */
export function untilAnswered<T>(step: () => T | undefined): T | Promise<T> {
  const first = step();
  return first !== undefined ? first : laterSlices(step);
}

async function laterSlices<T>(step: () => T | undefined): Promise<T> {
  for (;;) {
    await nextTurn();
    const answer = step();
    if (answer !== undefined) return answer;
  }
}

/** The cursor's first `countMax` matches (fewer only when there are no more), a slice per turn. */
export function firstMatches(cursor: SearchCursor, countMax: number): string[] | Promise<string[]> {
  const found: string[] = [];
  return untilAnswered(() => (cursor.step(found, countMax, searchDocsPerSlice) || found.length >= countMax ? found : undefined));
}

/** The matches the cursor finds next, one slice per iteration (often none): for a consumer that yields between iterations. */
export function* laterMatches(cursor: SearchCursor): Generator<readonly string[]> {
  while (!cursor.done) {
    const found: string[] = [];
    cursor.step(found, Number.POSITIVE_INFINITY, searchDocsPerSlice);
    yield found;
  }
}

/** The page a paged search answers, a slice per turn. */
export function searchPage(search: PagedSearch): Page<User> | Promise<Page<User>> {
  return untilAnswered(() => search.step(searchDocsPerSlice));
}
