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

/** A trim in progress: the lists still to go, and the one being copied. */
interface Trim {
  readonly lists: Iterator<MemberList>;
  list?: MemberList;
  from: string[];
  to: string[];
  at: number;
}

export class MemberIndex {
  private readonly lists = new Map<string, MemberList>();
  private trim: Trim | undefined;

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

  /**
   * Gives back the room a bulk fill left: a list grows by half as it fills, so after a load's walk a third of
   * its array can be unused. Each list is copied to an array of its size, in steps (trimStep), as the copy of
   * the largest (an Organization of every User) takes longer than an event-loop turn should.
   */
  startTrim(): void {
    this.trim = { lists: this.lists.values(), from: [], to: [], at: 0 };
  }

  get trimming(): boolean {
    return this.trim !== undefined;
  }

  /** Copies up to idsMax ids of the trim under way; true while more remains. */
  trimStep(idsMax: number): boolean {
    const trim = this.trim;
    if (trim === undefined) return false;
    for (let budget = idsMax; budget > 0;) {
      if (trim.list === undefined) {
        const next = trim.lists.next();
        if (next.done === true) {
          this.trim = undefined;
          return false;
        }
        trim.list = next.value;
        trim.from = next.value.ids;
        trim.to = new Array<string>(trim.from.length);
        trim.at = 0;
      }
      const { from, to } = trim;
      // Ids added meanwhile are copied too; a list compacted meanwhile (remove) already has a new array.
      const end = Math.min(from.length, trim.at + budget);
      for (let i = trim.at; i < end; i++) to[i] = from[i]!;
      budget -= end - trim.at;
      trim.at = end;
      if (end === from.length) {
        if (trim.list.ids === from) trim.list.ids = to;
        trim.list = undefined;
      }
    }
    return true;
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
