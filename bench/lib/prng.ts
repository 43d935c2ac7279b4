// The seeded pseudo-random generator of the benchmark dataset, so two seeds of the same size have the same shape.

/**
 * mulberry32: 32 bits of state, fast, and plenty for picking names and sizes. Not for secrets: ids,
 * nonces and salts still come from the service's own crypto-random sources.
 */
export class Prng {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** Uniform in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** Uniform integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)]!;
  }
}

/**
 * Picks indexes with Zipf-like weights 1/(k + offset)^exponent: a few large companies and popular
 * Applications, a long tail of small ones, as in real tenants. Binary search over the cumulative weights.
 */
export class SkewedPicker {
  private readonly cumulative: Float64Array;

  constructor(count: number, exponent: number, offset: number) {
    this.cumulative = new Float64Array(count);
    let sum = 0;
    for (let k = 0; k < count; k++) {
      sum += 1 / Math.pow(k + offset, exponent);
      this.cumulative[k] = sum;
    }
  }

  pick(prng: Prng): number {
    const target = prng.next() * this.cumulative[this.cumulative.length - 1]!;
    let lo = 0;
    let hi = this.cumulative.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.cumulative[mid]! > target) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  }
}
