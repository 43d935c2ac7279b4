// A bit table of things seen once, by a 32-bit hash: whether something came before, so that only what repeats is remembered.

/** A bijective remix of a 32-bit hash (MurmurHash3's finaliser): the second bit's place, spread apart from the first's. */
function remixed(hash: number): number {
  let h = hash ^ (hash >>> 16);
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}

/**
 * Two bits per hash, one at its low bits and one at its remix's, and the table wiped whole once marksMax bits are
 * set. A false repeat needs both bits set by others: at a fill of f it comes about f² of the time (1 in 64 at 1/8),
 * where one bit per hash gave f. A false repeat only remembers something that may not come again.
 */
export class Sightings {
  readonly #bits: Uint8Array;
  readonly #mask: number;
  readonly #marksMax: number;
  #marks = 0;

  /** bits: a power of two. */
  constructor(bits: number, marksMax: number) {
    if (!Number.isSafeInteger(bits) || bits < 8 || (bits & (bits - 1)) !== 0) throw new RangeError(`bits must be a power of two of at least 8, not ${bits}`);
    this.#bits = new Uint8Array(bits / 8);
    this.#mask = bits - 1;
    this.#marksMax = marksMax;
  }

  /** Whether hash was seen before, marking it seen. */
  repeated(hash: number): boolean {
    const first = hash & this.#mask;
    const second = remixed(hash) & this.#mask;
    if (this.#isSet(first) && this.#isSet(second)) return true;
    if (this.#marks >= this.#marksMax) {
      this.#bits.fill(0);
      this.#marks = 0;
    }
    this.#set(first);
    this.#set(second);
    return false;
  }

  #isSet(bit: number): boolean {
    return (this.#bits[bit >> 3]! & (1 << (bit & 7))) !== 0;
  }

  #set(bit: number): void {
    if (this.#isSet(bit)) return;
    this.#bits[bit >> 3]! |= 1 << (bit & 7);
    this.#marks++;
  }
}

/** FNV-1a over a string's UTF-16 units: a spread hash of an id, for a Sightings table. */
export function textHash(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
  return hash >>> 0;
}
