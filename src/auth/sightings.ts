// A bit table of things seen once, by a 32-bit hash: whether something came before, so that only what repeats is remembered.

import { fmix32, fnv1a, fnvOffsetBasis } from '../domain/hash.js';

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
    // A bijective remix of the hash: the second bit's place, spread apart from the first's.
    const second = fmix32(hash) & this.#mask;
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
  return fnv1a(text, fnvOffsetBasis) >>> 0;
}
