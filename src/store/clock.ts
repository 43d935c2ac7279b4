// The wall clock in microseconds, strictly increasing within the process so every update moves modified_at.

import { performance } from 'node:perf_hooks';

export class MicrosClock {
  private last = 0;

  /** Date.now() has millisecond resolution; performance.now() adds the sub-millisecond part. */
  now(): number {
    const wall = Math.floor((performance.timeOrigin + performance.now()) * 1000);
    this.last = wall > this.last ? wall : this.last + 1;
    return this.last;
  }

  /** After recovery, never hand out a time before the newest record's (the wall clock may have stepped back). */
  notBefore(micros: number): void {
    if (micros > this.last) this.last = micros;
  }
}
