// The process's log output: pino's lines and audit lines, in call order, encoded into one batch buffer as they come and written with one synchronous write every few milliseconds.
//
// Why not pino's own destination (SonicBoom): written to asynchronously, it re-measures and re-encodes
// all the text still waiting on every write, which with an audit line per authentication is much text
// and a clear share of the server's CPU per authentication. Gathered for logFlushMs rather than one
// event-loop turn: under load a turn answers a few requests, and a write per turn would wake the reader
// of a pipe (a log shipper) thousands of times a second. Synchronous, like pino's default destination and process.stdout to a file
// or pipe: a log reader that stops reading holds the service up rather than letting its memory grow.
//
// A line is encoded the moment it is written, while its text is fresh in the cache, rather than kept as
// text and joined at the flush: a batch of joined lines would be flattened (copied whole) and then
// encoded, its pieces scattered over logFlushMs of allocations and copied by any scavenge in between.

import { writeSync } from 'node:fs';
import { logBatchBytes, logBusyRetryMs, logFlushMs } from '../config/limits.js';

/** Receives the UTF-8 of one or more whole lines, to be consumed before it returns (the bytes are a reused buffer). */
export type LogOutput = (bytes: Uint8Array) => void;

/** Bytes written whole to a file descriptor: partial writes are continued, a full non-blocking pipe is waited for. */
export function fdOutput(fd: number): LogOutput {
  const pause = new Int32Array(new SharedArrayBuffer(4));
  return (bytes) => {
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
  readonly #batch = Buffer.allocUnsafeSlow(logBatchBytes);
  #used = 0;
  #scheduled = false;
  readonly #flushLater = (): void => {
    this.#scheduled = false;
    this.flush();
  };

  constructor(private readonly output: LogOutput) {}

  /** Whole lines: pino's destination interface, and the audit trail's sink. */
  write(text: string): boolean {
    // A UTF-16 unit is at most 3 UTF-8 bytes: a line that might not fit in what is left goes after a flush,
    // and one that might not fit in a whole batch (only a single enormous line) on its own.
    if (this.#makeRoom(text.length * 3)) this.#added(this.#batch.write(text, this.#used, 'utf8'));
    else this.output(Buffer.from(text, 'utf8'));
    return true;
  }

  /** Whole lines already encoded (a kept audit line, src/service/audit.ts): copied into the batch before this returns. */
  writeBytes(line: Uint8Array): void {
    if (this.#makeRoom(line.length)) {
      this.#batch.set(line, this.#used);
      this.#added(line.length);
    } else this.output(line);
  }

  /** Whether bytes will fit in the batch, after a flush if they would not fit in what is left; false if never. */
  #makeRoom(bytes: number): boolean {
    if (bytes > this.#batch.length - this.#used) this.flush();
    return bytes <= this.#batch.length;
  }

  #added(bytes: number): void {
    this.#used += bytes;
    if (!this.#scheduled) {
      this.#scheduled = true;
      setTimeout(this.#flushLater, logFlushMs);
    }
  }

  /** Everything gathered so far goes out now. `done`: for pino's logger.flush(cb). */
  flush(done?: () => void): void {
    if (this.#used > 0) {
      const used = this.#used;
      this.#used = 0;
      this.output(this.#batch.subarray(0, used));
    }
    done?.();
  }
}
