// The load generator: autocannon driven programmatically, with our own full-precision latency record.
//
// autocannon's own histogram keeps whole milliseconds (a 0.3 ms answer is recorded as 0), too coarse
// for targets like "p50 at most 1 ms". Its 'response' event carries the exact duration, so every
// response's latency is kept here, split into 2xx and the rest (a shed 503 must not look like a fast success).

import autocannon from 'autocannon';

/** Past this, a request counts as timed out; scenario C's queued argon2 work stays well under it. */
const requestTimeoutS = 30;
const initialSamples = 1 << 16;

export interface LoadOptions {
  readonly port: number;
  readonly connections: number;
  readonly durationS: number;
  readonly requests: autocannon.Request[];
  readonly headers?: Record<string, string>;
  /** Requests per second over all connections; unlimited when undefined. */
  readonly overallRate?: number;
  /** Requests per second per connection; unlimited when undefined. */
  readonly connectionRate?: number;
  /**
   * Seconds at the start whose responses are not timed (status counts still include them): the time the
   * generator takes to open its connections, which at hundreds of connections is its own burst, not the server's.
   */
  readonly settleS?: number;
}

export interface LatencySummary {
  readonly count: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
}

export interface LoadResult {
  readonly durationS: number;
  /** 2xx answers per second: what the scenario is for. */
  readonly reqPerSec: number;
  readonly ok: LatencySummary;
  /** Every non-2xx answer. */
  readonly failed: LatencySummary;
  readonly statusCounts: Readonly<Record<string, number>>;
  readonly errors: number;
  readonly timeouts: number;
}

/** A growable list of doubles: one allocation per doubling, not per response. */
class Samples {
  private data = new Float64Array(initialSamples);
  length = 0;

  push(value: number): void {
    if (this.length === this.data.length) {
      const bigger = new Float64Array(this.data.length * 2);
      bigger.set(this.data);
      this.data = bigger;
    }
    this.data[this.length++] = value;
  }

  summary(): LatencySummary {
    if (this.length === 0) return { count: 0, p50Ms: Number.NaN, p99Ms: Number.NaN, maxMs: Number.NaN };
    const sorted = this.data.slice(0, this.length).sort();
    const at = (q: number): number => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
    return { count: this.length, p50Ms: at(0.5), p99Ms: at(0.99), maxMs: sorted[sorted.length - 1]! };
  }
}

export interface RunningLoad {
  readonly result: Promise<LoadResult>;
  /** Ends the run early (scenario H stops its background load when the snapshot is done). */
  stop(): void;
}

export function startLoad(opts: LoadOptions): RunningLoad {
  const ok = new Samples();
  const failed = new Samples();
  let instance: autocannon.Instance | undefined;
  const result = new Promise<LoadResult>((resolve, reject) => {
    instance = autocannon({
      url: `http://127.0.0.1:${opts.port}`,
      connections: opts.connections,
      duration: opts.durationS,
      timeout: requestTimeoutS,
      requests: opts.requests,
      headers: opts.headers,
      ...(opts.overallRate === undefined ? {} : { overallRate: opts.overallRate }),
      ...(opts.connectionRate === undefined ? {} : { connectionRate: opts.connectionRate }),
    }, (err: Error | null, res: autocannon.Result) => {
      if (err !== null && err !== undefined) {
        reject(err);
        return;
      }
      const durationS = Math.max(res.duration - (opts.settleS ?? 0), 1e-3);
      const statusCounts: Record<string, number> = {};
      for (const [code, stat] of Object.entries(res.statusCodeStats ?? {})) statusCounts[code] = (stat as { count: number }).count;
      resolve({
        durationS, reqPerSec: ok.length / durationS, ok: ok.summary(), failed: failed.summary(),
        statusCounts, errors: res.errors, timeouts: res.timeouts,
      });
    });
    const timedFrom = performance.now() + (opts.settleS ?? 0) * 1000;
    instance.on('response', (_client: unknown, statusCode: number, _bytes: number, responseTimeMs: number) => {
      if (performance.now() < timedFrom) return;
      if (statusCode >= 200 && statusCode < 300) ok.push(responseTimeMs);
      else failed.push(responseTimeMs);
    });
  });
  return { result, stop: () => { (instance as unknown as { stop(): void } | undefined)?.stop(); } };
}

export function runLoad(opts: LoadOptions): Promise<LoadResult> {
  return startLoad(opts).result;
}

export function basicAuth(username: string, password: string): string {
  return `Basic ${Buffer.from(`${username}:${password}`, 'utf8').toString('base64')}`;
}
