// The process's log output: pino's lines and audit lines, in call order, gathered for a few milliseconds and written with one synchronous write.
//
// Why not pino's own destination (SonicBoom): written to asynchronously, it re-measures and re-encodes
// all the text still waiting on every write, which with an audit line per authentication is much text.
// With stdout to a file, builds alternated over A at a million Users: 28-32 against 24.6-26 us of server
// CPU per API Key authentication. Gathered for logFlushMs rather than one event-loop turn: under load a
// turn answers a few requests, and a write per turn would wake the reader of a pipe (a log shipper)
// thousands of times a second. Synchronous, like pino's default destination and process.stdout to a file
// or pipe: a log reader that stops reading holds the service up rather than letting its memory grow.

import { writeSync } from 'node:fs';
import { logBatchChars, logBusyRetryMs, logFlushMs } from '../config/limits.js';

/** Receives the text of one or more whole lines. */
export type LogOutput = (text: string) => void;

/**
 * Text written whole to a file descriptor, through one reused buffer: partial writes are continued, a full
 * non-blocking pipe is waited for. A text too long for the buffer (only a single enormous line) gets its own.
 */
export function fdOutput(fd: number): LogOutput {
  const scratch = Buffer.allocUnsafeSlow(logBatchChars * 3);
  const pause = new Int32Array(new SharedArrayBuffer(4));
  return (text) => {
    const bytes = text.length * 3 <= scratch.length ? scratch.subarray(0, scratch.write(text, 0, 'utf8')) : Buffer.from(text, 'utf8');
    let at = 0;
    while (at < bytes.length) {
      try {
        at += writeSync(fd, bytes, at, bytes.length - at);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') throw err;
        Atomics.wait(pause, 0, 0, logBusyRetryMs);
      }
    }
  };
}

export class LogWriter {
  #pending = '';
  #scheduled = false;
  readonly #flushLater = (): void => {
    this.#scheduled = false;
    this.flush();
  };

  constructor(private readonly output: LogOutput) {}

  /** Whole lines: pino's destination interface, and the audit trail's sink. */
  write(text: string): boolean {
    // What waits stays within a batch, so fdOutput encodes it in its own buffer; it was always past it when
    // the batch filled, and each such write copied the text into a new Buffer first (seen in a perf profile).
    if (this.#pending.length + text.length > logBatchChars) this.flush();
    this.#pending += text;
    if (this.#pending.length >= logBatchChars) this.flush();
    else if (!this.#scheduled) {
      this.#scheduled = true;
      setTimeout(this.#flushLater, logFlushMs);
    }
    return true;
  }

  /** Everything gathered so far goes out now. `done`: for pino's logger.flush(cb). */
  flush(done?: () => void): void {
    if (this.#pending !== '') {
      const text = this.#pending;
      this.#pending = '';
      this.output(text);
    }
    done?.();
  }
}
