// A page of a search in creation order (State.beginPageSearch), worked out in bounded steps: a walk from the cursor, then the index's matches.

import { pageSearchWalkSlotsMin, pageSearchWalkSlotsPerItem } from '../config/limits.js';
import type { User } from '../domain/entities.js';
import { byCreation, precedes, resolvePage, type CreationOrder, type Lookup, type Page, type PagePosition } from './creation-order.js';
import { userMatches, type SearchCursor, type UserSearchIndex } from './search.js';

/**
 * What a match costs once found, in units of index work (SearchCursor.step): it is resolved to its User
 * and compared with the page's cursor, a Map lookup and objects read at random among a million, far more
 * than a probe. Without counting it, a slice of a common term would run many times longer than its bound.
 */
const resolvedMatchWorkUnits = 20;

/**
 * The k earliest Users offered, in creation order, in O(k) memory. Offers that come in creation order
 * (the index's order, unless an import added older Users) are simply appended; otherwise the buffer is
 * sorted and cut back to k whenever it reaches 2k, so an offer costs O(log k) amortized.
 */
class EarliestUsers {
  private users: User[] = [];
  private sorted = true;
  /** After a cut, the k-th earliest so far: a later User cannot make the cut any more. */
  private bound: User | undefined;

  constructor(private readonly k: number) {}

  /** Offers still wanted before k are held (meaningful when offers come in creation order). */
  get missing(): number {
    return Math.max(0, this.k - this.users.length);
  }

  offer(user: User): void {
    if (this.bound !== undefined && byCreation(user, this.bound) > 0) return;
    const last = this.users[this.users.length - 1];
    if (last !== undefined && byCreation(last, user) > 0) this.sorted = false;
    this.users.push(user);
    if (this.users.length >= 2 * this.k) this.cut();
  }

  earliest(): User[] {
    this.cut();
    return this.users;
  }

  private cut(): void {
    if (!this.sorted) this.users.sort(byCreation);
    this.sorted = true;
    if (this.users.length > this.k) this.users.length = this.k;
    if (this.users.length === this.k) this.bound = this.users[this.k - 1];
  }
}

/**
 * Users matching a lowercase search term, in creation order after `after`, `limit` of them and whether more
 * follow. The search index answers in insertion order, which is creation order unless an import added older
 * Users (`inOrder`). In creation order, a page is the index's first matches from the doc of its cursor on
 * (UserSearchIndex.firstDocAfter, a binary search): the page and one more, whatever the page's depth, so
 * the last page of a term matching a few percent of a million Users costs what its first does. Otherwise a
 * later page first walks creation order from the cursor testing each User's fields, for a frequent term
 * the cheapest way; if the short walk does not fill the page, the term is rarer and all of the index's
 * matches are taken, keeping the earliest past the cursor. While the trigram index is still being built
 * after start-up, the index scans the Users it has not reached yet.
 *
 * From an offset (offset paging: no cursor, the first `offset` matches left out) the same ways run from the
 * start and keep offset + limit + 1 matches: its cost grows with the offset, which the HTTP layer bounds
 * (pageOffsetMax), where a cursor's does not.
 *
 * The walk is bounded by its own budget and done in the first step; the index's matches are taken a
 * slice at a time (step's workMax), so a term matching most Users or too short for a trigram never holds
 * the event loop for longer than a slice. `inOrder` is read once: only an offline import or the undo of
 * a failed write adds older Users, and one added meanwhile may be out of place, like any User changed
 * while the search runs.
 */
export class PagedSearch {
  private readonly matches: SearchCursor;
  private readonly inOrder: boolean;
  private walked: boolean;
  private readonly kept: EarliestUsers;
  private readonly batch: string[] = [];

  constructor(
    private readonly users: Lookup<User>, private readonly order: CreationOrder, index: UserSearchIndex,
    private readonly termLower: string, private readonly after: PagePosition | undefined, private readonly limit: number,
    private readonly offset = 0,
  ) {
    this.inOrder = order.appendOnly;
    const fromDoc = after !== undefined && this.inOrder ? index.firstDocAfter(after, (id) => users.get(id)?.createdAt) : 0;
    this.matches = index.cursor(termLower, fromDoc);
    // A page in creation order is the index's first matches from its cursor on: nothing to walk.
    this.walked = this.matches.done || this.inOrder;
    // From an offset, the page is the kept Users past the first `offset`: held too, in O(offset + limit) memory.
    this.kept = new EarliestUsers(offset + limit + 1);
  }

  /** Works on the page for about `workMax` units of index work (see SearchCursor.step); the page once known, else undefined. */
  step(workMax: number): Page<User> | undefined {
    if (!this.walked) {
      this.walked = true;
      const budget = Math.max(pageSearchWalkSlotsMin, this.limit * pageSearchWalkSlotsPerItem);
      const matches = (id: string): boolean => userMatches(this.users.get(id)!, this.termLower);
      // The walk's budget does not grow with an offset: a deep one into a rarer term takes the index's way, in slices.
      const walked = this.offset > 0
        ? this.order.fromOffset(this.offset, this.limit, matches, budget)
        : this.order.after(this.after, this.limit, matches, budget);
      if (walked !== undefined) return resolvePage(walked, this.users);
    }
    let spent = 0;
    // In creation order the matches past the cursor are a suffix, so only as many as still missing are
    // asked for; a cursor step may then end early with matches before the cursor, and is repeated.
    while (!this.matches.done && !(this.inOrder && this.kept.missing === 0)) {
      const left = workMax - spent;
      if (left <= 0) return undefined;
      const affordable = Math.ceil(left / resolvedMatchWorkUnits);
      const before = this.matches.workDone;
      this.batch.length = 0;
      this.matches.step(this.batch, Math.min(affordable, this.inOrder ? this.kept.missing : Number.POSITIVE_INFINITY), left);
      spent += this.matches.workDone - before + this.batch.length * resolvedMatchWorkUnits;
      for (const id of this.batch) {
        // The cursor reports only live users, and nothing runs between its step and this loop.
        const user = this.users.get(id);
        if (user !== undefined && this.isPastCursor(user)) this.kept.offer(user);
      }
    }
    const found = this.kept.earliest();
    return { items: found.slice(this.offset, this.offset + this.limit), more: found.length > this.offset + this.limit };
  }

  private isPastCursor(user: User): boolean {
    return this.after === undefined || precedes(this.after.createdAt, this.after.id, user.createdAt, user.id);
  }
}
