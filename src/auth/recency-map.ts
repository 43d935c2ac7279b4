// A Map kept in order of last use by a doubly linked list through its entries: the oldest is found, and dropped, in O(1), whatever was deleted before it.
//
// A plain Map's insertion order costs a delete and a set to move a key last, and leaves the deleted
// entries in place until the next rehash: finding the oldest live entry walks over them, so a table
// that evicts on every insert spends its time skipping holes. Here a use relinks two entries, and the
// Map is asked only to find, add and delete keys.

export interface RecencyEntry<V> {
  readonly key: string;
  value: V;
  /** Toward the oldest, undefined at the oldest. */
  older: RecencyEntry<V> | undefined;
  /** Toward the newest, undefined at the newest. */
  newer: RecencyEntry<V> | undefined;
}

export class RecencyMap<V> {
  readonly #entries = new Map<string, RecencyEntry<V>>();
  #oldest: RecencyEntry<V> | undefined;
  #newest: RecencyEntry<V> | undefined;

  get size(): number {
    return this.#entries.size;
  }

  get(key: string): V | undefined {
    return this.#entries.get(key)?.value;
  }

  entry(key: string): RecencyEntry<V> | undefined {
    return this.#entries.get(key);
  }

  oldest(): RecencyEntry<V> | undefined {
    return this.#oldest;
  }

  /** Sets the value, and makes the key the newest. */
  set(key: string, value: V): void {
    const held = this.#entries.get(key);
    if (held !== undefined) {
      held.value = value;
      this.touch(held);
      return;
    }
    this.add(key, value);
  }

  /** Adds a key not in the map (entry() found none), newest: set() without its lookup. */
  add(key: string, value: V): void {
    const entry: RecencyEntry<V> = { key, value, older: this.#newest, newer: undefined };
    if (this.#newest === undefined) this.#oldest = entry;
    else this.#newest.newer = entry;
    this.#newest = entry;
    this.#entries.set(key, entry);
  }

  /** Makes an entry of this map the newest. */
  touch(entry: RecencyEntry<V>): void {
    if (entry === this.#newest) return;
    this.unlink(entry);
    entry.older = this.#newest;
    entry.newer = undefined;
    this.#newest!.newer = entry;
    this.#newest = entry;
  }

  delete(key: string): boolean {
    const entry = this.#entries.get(key);
    if (entry === undefined) return false;
    this.#entries.delete(key);
    this.unlink(entry);
    return true;
  }

  /** Oldest first. */
  *[Symbol.iterator](): IterableIterator<[string, V]> {
    for (let entry = this.#oldest; entry !== undefined; entry = entry.newer) yield [entry.key, entry.value];
  }

  private unlink(entry: RecencyEntry<V>): void {
    if (entry.older === undefined) this.#oldest = entry.newer;
    else entry.older.newer = entry.newer;
    if (entry.newer === undefined) this.#newest = entry.older;
    else entry.newer.older = entry.older;
    if (this.#oldest === undefined) this.#newest = undefined;
  }
}
