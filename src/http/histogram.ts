// Bucket histograms for GET /metrics: per-bucket counts, their sum and count, written out cumulative in the Prometheus text format.

export class Histogram {
  /** Per bucket (not cumulative: summed when rendered), the last slot for values past every bound. */
  readonly buckets: Float64Array;
  sum = 0;
  count = 0;

  /** bounds: upper bounds, ascending. */
  constructor(readonly bounds: readonly number[]) {
    this.buckets = new Float64Array(bounds.length + 1);
  }

  /** Counted in the first bucket whose bound it does not pass. A scan of a dozen bounds: no allocation. */
  record(value: number): void {
    let i = 0;
    while (i < this.bounds.length && value > this.bounds[i]!) i++;
    this.buckets[i]++;
    this.sum += value;
    this.count++;
  }

  /** The _bucket, _sum and _count lines into out; labels without braces, '' for none. */
  render(out: string[], name: string, labels: string): void {
    const prefix = labels === '' ? '' : `${labels},`;
    let cumulative = 0;
    this.bounds.forEach((le, i) => {
      cumulative += this.buckets[i]!;
      out.push(`${name}_bucket{${prefix}le="${le}"} ${cumulative}`);
    });
    out.push(`${name}_bucket{${prefix}le="+Inf"} ${this.count}`);
    const braced = labels === '' ? '' : `{${labels}}`;
    out.push(`${name}_sum${braced} ${this.sum}`);
    out.push(`${name}_count${braced} ${this.count}`);
  }
}
