// Non-cryptographic 32-bit hashes for in-memory tables: FNV-1a over a string's UTF-16 units, and MurmurHash3's finaliser.

/** FNV-1a's offset basis: where an unseeded hash starts. */
export const fnvOffsetBasis = 0x811c9dc5;

/** FNV-1a over the UTF-16 code units of text, from `seed` (a signed 32-bit result). */
export function fnv1a(text: string, seed: number): number {
  let h = seed;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h;
}

/** MurmurHash3's finaliser: a bijection of 32 bits after which every output bit depends on every input bit. */
export function fmix32(hash: number): number {
  let h = hash ^ (hash >>> 16);
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}
