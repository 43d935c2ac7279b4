// The seeded pseudo-random generator of every randomized test: a failure is replayed from the seed it prints.

import { Prng } from '../../bench/lib/prng.js';

/** The benchmark dataset's generator (mulberry32) as a plain function, uniform in [0, 1). Not for secrets. */
export function prng(seed: number): () => number {
  const generator = new Prng(seed);
  return () => generator.next();
}
