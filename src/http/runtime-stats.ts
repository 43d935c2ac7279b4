// The process's own pauses, for GET /metrics: garbage-collection pauses by kind, and how late a short repeating timer runs (the event loop's delay), both as cumulative histograms.
//
// Both are counted from start-up and never reset, so that any number of readers (Prometheus, the
// benchmark's per-scenario windows) can take differences between two scrapes. The delay is sampled
// by a timer of our own rather than perf_hooks.monitorEventLoopDelay, whose histogram has no buckets
// to subtract and which a reader would have to reset, losing every other reader's window.

import { PerformanceObserver, constants } from 'node:perf_hooks';
import { eventLoopDelaySampleMs } from '../config/limits.js';
import { Histogram } from './histogram.js';

/** Upper bounds in seconds: a young-generation pause is a few ms; what hurts a request is 20 ms and up. */
export const pauseBucketsS = [0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5] as const;

/** The kinds Node reports a collection as, named as prom-client names them. */
export type GcKind = 'minor' | 'major' | 'incremental' | 'weakcb';
export const gcKinds: readonly GcKind[] = ['minor', 'major', 'incremental', 'weakcb'];

const kindOfFlag = new Map<number, GcKind>([
  [constants.NODE_PERFORMANCE_GC_MINOR, 'minor'],
  [constants.NODE_PERFORMANCE_GC_MAJOR, 'major'],
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL, 'incremental'],
  [constants.NODE_PERFORMANCE_GC_WEAKCB, 'weakcb'],
]);

export class RuntimeStats {
  readonly gc = new Map<GcKind, Histogram>(gcKinds.map((kind) => [kind, new Histogram(pauseBucketsS)]));
  /** Per sample: how much later than due the delay timer ran. */
  readonly loopDelay = new Histogram(pauseBucketsS);
  private observer: PerformanceObserver | undefined;
  private timer: NodeJS.Timeout | undefined;

  /** Starts observing collections and sampling the delay; the timer does not keep the process alive. */
  start(): void {
    if (this.timer !== undefined) return;
    this.observer = new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) {
        const kind = kindOfFlag.get((entry as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind ?? -1);
        if (kind !== undefined) this.recordGc(kind, entry.duration / 1000);
      }
    });
    this.observer.observe({ entryTypes: ['gc'] });
    let due = performance.now() + eventLoopDelaySampleMs;
    this.timer = setInterval(() => {
      const now = performance.now();
      this.loopDelay.record(Math.max(0, now - due) / 1000);
      due = now + eventLoopDelaySampleMs;
    }, eventLoopDelaySampleMs);
    this.timer.unref();
  }

  stop(): void {
    this.observer?.disconnect();
    this.observer = undefined;
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }

  recordGc(kind: GcKind, seconds: number): void {
    this.gc.get(kind)!.record(seconds);
  }
}
