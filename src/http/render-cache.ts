// Renderings kept ready for answers sent again and again, bounded by the bytes they hold (first in, first out).

/**
 * What one entry costs beyond its rendered bytes: the Map entry, the entry object, the kept strings' headers.
 * An estimate, so that a flood of tiny renderings is bounded too.
 */
const entryOverheadBytes = 256;

/** An entry is told how many rendered bytes it holds; the cache adds the overhead. */
export interface CacheEntry {
  readonly bytes: number;
}

interface Held<K, V> {
  readonly key: K;
  readonly value: V;
  charged: number;
  /** False once deleted: its slot in the eviction order is then skipped. */
  live: boolean;
}

/**
 * First in, first out, not least recently used: a hit (the hot path of POST /authenticate) then only reads
 * the Map and never reorders it. A hot entry that is evicted is rendered and kept again on its next use.
 * The order is an array of entries with a moving head, not the Map's own order: evicting from the front
 * of a Map walks every deleted entry still held there, on each eviction.
 */
export class RenderCache<K, V extends CacheEntry> {
  private readonly entries = new Map<K, Held<K, V>>();
  /** Entries in the order kept, from `head` on; deleted ones stay until they reach the head or a compaction. */
  private order: Array<Held<K, V> | undefined> = [];
  private head = 0;
  private heldBytes = 0;
  /** New keys turned away since one was last taken while the cache was full. */
  private turnedAway = 0;

  /**
   * bytesMax bounds the whole cache; an entry over entryBytesMax is never kept (it would push out hundreds of others).
   * Once full, a new key is taken one time in admitEveryWhenFull, the others are not kept (see keep()).
   */
  constructor(private readonly bytesMax: number, private readonly entryBytesMax: number, private readonly admitEveryWhenFull = 1) {}

  /** Bytes held now, overhead included (the metric authd_render_cache_bytes). */
  get bytes(): number {
    return this.heldBytes;
  }

  get size(): number {
    return this.entries.size;
  }

  get(key: K): V | undefined {
    return this.entries.get(key)?.value;
  }

  delete(key: K): void {
    const held = this.entries.get(key);
    if (held === undefined) return;
    this.entries.delete(key);
    held.live = false;
    this.heldBytes -= held.charged;
    // Deleted entries never outnumber live ones in the order, so it stays within twice the entries.
    if (this.order.length - this.head > 2 * this.entries.size + 64) this.compact();
  }

  /**
   * Keeps `value` under `key`, or takes note that the entry already kept there grew (call again after adding
   * to it). The oldest entries go until the total fits; an entry too large for entryBytesMax is dropped.
   * A new key that would push others out is taken only one time in admitEveryWhenFull: with more Users asked
   * for than fit, taking each would replace the whole cache over and over, and every replaced rendering
   * outlives a young collection before it dies. A User asked for often still gets in after a few asks.
   */
  keep(key: K, value: V): void {
    const held = this.entries.get(key);
    if (held !== undefined && held.value !== value) this.delete(key);
    if (value.bytes > this.entryBytesMax) {
      this.delete(key);
      return;
    }
    const charged = value.bytes + entryOverheadBytes;
    const current = this.entries.get(key);
    if (held === undefined && this.heldBytes + charged > this.bytesMax) {
      if (++this.turnedAway < this.admitEveryWhenFull) return;
      this.turnedAway = 0;
    }
    if (current === undefined) {
      const entry: Held<K, V> = { key, value, charged, live: true };
      this.entries.set(key, entry);
      this.order.push(entry);
    } else {
      this.heldBytes -= current.charged;
      current.charged = charged;
    }
    this.heldBytes += charged;
    while (this.heldBytes > this.bytesMax && this.head < this.order.length) {
      const oldest = this.order[this.head]!;
      this.order[this.head++] = undefined;
      if (oldest.live) this.delete(oldest.key);
    }
    if (this.head > 1024 && this.head * 2 > this.order.length) this.compact();
  }

  /** Drops the order's evicted head and deleted entries, in one pass. */
  private compact(): void {
    const live: Array<Held<K, V> | undefined> = [];
    for (let i = this.head; i < this.order.length; i++) {
      const entry = this.order[i];
      if (entry?.live === true) live.push(entry);
    }
    this.order = live;
    this.head = 0;
  }
}
