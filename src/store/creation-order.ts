// Creation order of one entity kind: (createdAt, id) pairs kept sorted by State.apply, so a page seeks its cursor in O(log n) and an offset by position.
//
// The clock is strictly increasing and restored after a restart, so in normal operation every new
// entity sorts last and `add` is an append. Two things break that, and both are handled lazily so their
// O(n) work is paid once per many changes: an offline import of older entities (appended, the array
// re-sorted at the next read or removal), and deletions (tombstoned in place, compacted once they are
// a large share of the slots).

import { creationOrderTombstoneShareMax, creationOrderTombstonesMin } from '../config/limits.js';

/** Where a page starts: after the entity with this creation time and id. */
export interface PagePosition {
  readonly createdAt: number;
  readonly id: string;
}

/** A page of entities and whether more follow it. */
export interface Page<T> {
  readonly items: T[];
  readonly more: boolean;
}

const initialCapacity = 64;

/** (aAt, aId) sorts strictly before (bAt, bId). */
export function precedes(aAt: number, aId: string, bAt: number, bId: string): boolean {
  return aAt < bAt || (aAt === bAt && aId < bId);
}

/** Any entity: what creation order is made of. */
export type Created = { readonly id: string; readonly createdAt: number };

/** Entities by id: a Map, or a StringMap (src/store/string-map.ts). */
export interface Lookup<T> {
  get(id: string): T | undefined;
}

/** A page of ids as the entities they name (every id must be in the map). */
export function resolvePage<T>(page: Page<string>, map: Lookup<T>): Page<T> {
  return { items: page.items.map((id) => map.get(id)!), more: page.more };
}

/** Comparator for sorting entities into creation order. */
export function byCreation(a: Created, b: Created): number {
  return a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

/**
 * Items `start` .. start + limit of `items` in creation order, and whether more follow. The creation
 * times alone, sorted as numbers (a typed array's native sort, many times faster than sorting objects by
 * a comparator), give the first and last time on the page; only the items between those two are sorted
 * as objects, and the items before the first time are counted, which places the page among them.
 */
export function sliceInCreationOrder<T extends Created>(items: readonly T[], start: number, limit: number): Page<T> {
  if (start >= items.length) return { items: [], more: false };
  const end = Math.min(start + limit, items.length);
  const times = new Float64Array(items.length);
  for (let i = 0; i < items.length; i++) times[i] = items[i]!.createdAt;
  times.sort();
  const first = times[start]!;
  const last = times[end - 1]!;
  let before = 0;
  for (let hi = start; before < hi;) {
    const mid = (before + hi) >>> 1;
    if (times[mid]! < first) before = mid + 1;
    else hi = mid;
  }
  const between = items.filter((x) => x.createdAt >= first && x.createdAt <= last).sort(byCreation);
  return { items: between.slice(start - before, end - before), more: items.length > end };
}

export class CreationOrder {
  // Parallel arrays: typed arrays keep a million entries to ~9 bytes each beside the shared id strings.
  private at = new Float64Array(initialCapacity);
  private ids: string[] = [];
  private dead = new Uint8Array(initialCapacity);
  private length = 0;
  private deadCount = 0;
  private sorted = true;
  private everAppended = true;

  /** Live entries. */
  get size(): number {
    return this.length - this.deadCount;
  }

  /**
   * True while every add went to the end, i.e. insertion order (that of the Maps and the search index)
   * is creation order, so their own iteration order can stand in for a sort.
   */
  get appendOnly(): boolean {
    return this.everAppended;
  }

  /** Records a new entity. State calls it once per entity (and again only if its createdAt changed). */
  add(id: string, createdAt: number): void {
    const last = this.length - 1;
    if (this.sorted && last >= 0 && !precedes(this.at[last]!, this.ids[last]!, createdAt, id)) {
      // An older entity (an import) or one that was deleted and is put again: revive its tombstone if
      // it has one, else append and leave the sorting to the next read.
      this.everAppended = false;
      const i = this.lowerBound(createdAt, id);
      if (i < this.length && this.at[i] === createdAt && this.ids[i] === id) {
        if (this.dead[i] === 1) {
          this.dead[i] = 0;
          this.deadCount--;
        }
        return;
      }
      this.sorted = false;
    }
    this.push(id, createdAt, 0);
  }

  remove(id: string, createdAt: number): void {
    this.normalize(false);
    const i = this.lowerBound(createdAt, id);
    if (i >= this.length || this.at[i] !== createdAt || this.ids[i] !== id || this.dead[i] === 1) return;
    this.dead[i] = 1;
    this.deadCount++;
    if (this.deadCount >= creationOrderTombstonesMin && this.deadCount > this.length * creationOrderTombstoneShareMax) this.normalize(true);
  }

  /**
   * Up to `limit` ids after `after` (from the start when undefined) for which `accept` holds, in
   * creation order, plus whether another accepted id follows. Visits at most `visitMax` slots when
   * given, answering undefined if that was not enough (the caller then takes another way).
   */
  after(after: PagePosition | undefined, limit: number, accept?: (id: string) => boolean, visitMax = Infinity): Page<string> | undefined {
    this.normalize(false);
    return this.collect(after === undefined ? 0 : this.upperBound(after.createdAt, after.id), 0, limit, accept, visitMax);
  }

  /**
   * As `after` from the start, the first `skip` accepted ids left out (offset paging). Without `accept`
   * the page's first slot is found without visiting the ids: it is slot `skip` itself while nothing is
   * deleted, else a count of the live flags up to it. With `accept` the skipped ids are visited and
   * count against `visitMax`, so a deep offset into a sparse subset soon answers undefined.
   */
  fromOffset(skip: number, limit: number, accept?: (id: string) => boolean, visitMax = Infinity): Page<string> | undefined {
    this.normalize(false);
    if (accept !== undefined) return this.collect(0, skip, limit, accept, visitMax);
    return this.collect(this.liveSlot(skip), 0, limit, undefined, visitMax);
  }

  /** The slot of the live entry with `rank` live ones before it (this.length when there are not that many). */
  private liveSlot(rank: number): number {
    if (this.deadCount === 0) return Math.min(rank, this.length);
    let live = 0;
    for (let i = 0; i < this.length; i++) {
      if (this.dead[i] === 1) continue;
      if (live === rank) return i;
      live++;
    }
    return this.length;
  }

  /** From slot `i` on: the accepted ids past the first `skip`, up to `limit`, and whether another follows. */
  private collect(i: number, skip: number, limit: number, accept: ((id: string) => boolean) | undefined, visitMax: number): Page<string> | undefined {
    const items: string[] = [];
    let skipped = 0;
    for (let visited = 0; i < this.length; i++, visited++) {
      if (visited >= visitMax) return undefined;
      if (this.dead[i] === 1) continue;
      const id = this.ids[i]!;
      if (accept !== undefined && !accept(id)) continue;
      if (skipped < skip) {
        skipped++;
        continue;
      }
      if (items.length === limit) return { items, more: true };
      items.push(id);
    }
    return { items, more: false };
  }

  /** Every live id in creation order (for tests and checks). */
  all(): string[] {
    return this.after(undefined, Infinity)!.items;
  }

  /** First slot whose key is not before (createdAt, id). Needs sorted slots. */
  private lowerBound(createdAt: number, id: string): number {
    let lo = 0;
    let hi = this.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (precedes(this.at[mid]!, this.ids[mid]!, createdAt, id)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** First slot whose key is after (createdAt, id). Needs sorted slots. */
  private upperBound(createdAt: number, id: string): number {
    const i = this.lowerBound(createdAt, id);
    return i < this.length && this.at[i] === createdAt && this.ids[i] === id ? i + 1 : i;
  }

  private push(id: string, createdAt: number, dead: number): void {
    if (this.length === this.at.length) {
      const at = new Float64Array(this.at.length * 2);
      at.set(this.at);
      this.at = at;
      const flags = new Uint8Array(this.dead.length * 2);
      flags.set(this.dead);
      this.dead = flags;
    }
    this.at[this.length] = createdAt;
    this.ids[this.length] = id;
    this.dead[this.length] = dead;
    this.length++;
  }

  /** Sorts after out-of-order adds (dropping duplicates and tombstones); with `compact`, drops tombstones anyway. */
  private normalize(compact: boolean): void {
    if (this.sorted && !compact) return;
    const order: number[] = [];
    for (let i = 0; i < this.length; i++) if (this.dead[i] === 0) order.push(i);
    if (!this.sorted) {
      const { at, ids } = this;
      order.sort((a, b) => (precedes(at[a]!, ids[a]!, at[b]!, ids[b]!) ? -1 : precedes(at[b]!, ids[b]!, at[a]!, ids[a]!) ? 1 : 0));
    }
    const oldAt = this.at;
    const oldIds = this.ids;
    const capacity = Math.max(initialCapacity, order.length * 2);
    this.at = new Float64Array(capacity);
    this.dead = new Uint8Array(capacity);
    this.ids = [];
    this.length = 0;
    this.deadCount = 0;
    this.sorted = true;
    for (const i of order) {
      const last = this.length - 1;
      // A revived entity appended twice while unsorted: keep one.
      if (last >= 0 && oldAt[i] === this.at[last] && oldIds[i] === this.ids[last]) continue;
      this.push(oldIds[i]!, oldAt[i]!, 0);
    }
  }
}
