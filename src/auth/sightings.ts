// A bit table of things seen once, by a 32-bit hash: whether something came before, so that only what repeats is remembered.

/**
 * One bit per hash (low bits), wiped whole once marksMax bits are set: a bounded table whose false repeats
 * stay near marksMax / bits. A false repeat only remembers something that may not come again.
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
    const bit = hash & this.#mask;
    const mask = 1 << (bit & 7);
    const byte = this.#bits[bit >> 3]!;
    if ((byte & mask) !== 0) return true;
    if (this.#marks >= this.#marksMax) {
      this.#bits.fill(0);
      this.#marks = 0;
    }
    this.#bits[bit >> 3]! |= mask;
    this.#marks++;
    return false;
  }
}

/** FNV-1a over a string's UTF-16 units: a spread hash of an id, for a Sightings table. */
export function textHash(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
  return hash >>> 0;
}
