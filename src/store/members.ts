// Who belongs to each Application, Group or Organization: an append-only id list per key, with removals settled lazily.
//
// Why not a Set per key: V8 Sets of strings are an order of magnitude slower than arrays to fill at
// this scale, and start-up of a million users fills them all (millions of memberships). A removal only
// lowers the live count; the stale id stays in the list until the list is more than half stale, then
// it is compacted. Readers filter with `isMember`, which asks the current
// User, so a stale or repeated id can never be reported.

/** Stale entries tolerated per list beyond the live ones before it is compacted. */
const staleSlack = 32;

/** The live members of one key, as the paging code reads them. */
export interface MemberView {
  readonly size: number;
  has(id: string): boolean;
  [Symbol.iterator](): Iterator<string>;
}

interface MemberList {
  ids: string[];
  /** Exact: add() is called only when an id becomes a member, remove() only when it stops being one. */
  live: number;
}

export class MemberIndex {
  private readonly lists = new Map<string, MemberList>();

  constructor(private readonly isMember: (key: string, id: string) => boolean) {}

  /** `id` has just become a member of `key` (it was not one a moment ago). */
  add(key: string, id: string): void {
    let list = this.lists.get(key);
    if (list === undefined) this.lists.set(key, (list = { ids: [], live: 0 }));
    list.ids.push(id);
    list.live++;
  }

  /** `id` has just stopped being a member of `key`; isMember must already answer false. */
  remove(key: string, id: string): void {
    const list = this.lists.get(key);
    if (list === undefined) return;
    if (--list.live <= 0) {
      this.lists.delete(key);
      return;
    }
    if (list.ids.length > 2 * list.live + staleSlack) list.ids = this.liveIds(key, list);
  }

  /** Forget a key whose owner is gone (its members were removed first). */
  deleteKey(key: string): void {
    this.lists.delete(key);
  }

  count(key: string): number {
    return this.lists.get(key)?.live ?? 0;
  }

  /** Live members in the order they joined. */
  members(key: string): string[] {
    const list = this.lists.get(key);
    return list === undefined ? [] : this.liveIds(key, list);
  }

  view(key: string): MemberView | undefined {
    const list = this.lists.get(key);
    if (list === undefined) return undefined;
    return {
      size: list.live,
      has: (id) => this.isMember(key, id),
      [Symbol.iterator]: () => this.liveIds(key, list)[Symbol.iterator](),
    };
  }

  private liveIds(key: string, list: MemberList): string[] {
    // No stale entry means no repeat either: a repeat needs a stale copy beside the live one.
    if (list.ids.length === list.live) return list.ids.slice();
    const seen = new Set<string>();
    const out: string[] = [];
    for (const id of list.ids) {
      if (!seen.has(id) && this.isMember(key, id)) {
        seen.add(id);
        out.push(id);
      }
    }
    return out;
  }
}
