// Renderings kept ready for answers sent again and again, bounded by the bytes they hold (first in, first out).

/**
 * What one entry costs beyond its rendered bytes: the Map entry, the entry object, the Buffer object and its
 * backing store's header. An estimate, so that a flood of tiny renderings is bounded too.
 */
const entryOverheadBytes = 256;

/** An entry is told how many rendered bytes it holds; the cache adds the overhead. */
export interface CacheEntry {
  readonly bytes: number;
}

/**
 * First in, first out, not least recently used: a hit (the hot path of POST /authenticate) then only reads
 * the Map and never reorders it. A hot entry that is evicted is rendered and kept again on its next use.
 */
export class RenderCache<K, V extends CacheEntry> {
  private readonly entries = new Map<K, { readonly value: V; charged: number }>();
  private heldBytes = 0;

  /** bytesMax bounds the whole cache; an entry over entryBytesMax is never kept (it would push out hundreds of others). */
  constructor(private readonly bytesMax: number, private readonly entryBytesMax: number) {}

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
    this.heldBytes -= held.charged;
  }

  /**
   * Keeps `value` under `key`, or takes note that the entry already kept there grew (call again after adding
   * to it). The oldest entries go until the total fits; an entry too large for entryBytesMax is dropped.
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
    if (current === undefined) this.entries.set(key, { value, charged });
    else {
      this.heldBytes -= current.charged;
      current.charged = charged;
    }
    this.heldBytes += charged;
    for (const [oldest] of this.entries) {
      if (this.heldBytes <= this.bytesMax) break;
      this.delete(oldest);
    }
  }
}
