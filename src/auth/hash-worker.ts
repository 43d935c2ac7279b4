// One hash worker thread: runs argon2id and bcrypt jobs from the pool one at a time, off the main event loop.

import { randomBytes, timingSafeEqual } from 'node:crypto';
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { basename } from 'node:path';
import { parentPort } from 'node:worker_threads';
import { argon2id, bcryptVerify } from 'hash-wasm';
import { bcryptPasswordBytesMax, hashWorkerNiceness } from '../config/limits.js';
import type { HashJob, HashReply, HashRequest, WorkerReady } from './hash-protocol.js';

if (parentPort === null) throw new Error('hash-worker.js must run as a worker thread');
const port = parentPort;

lowerOwnPriority();

port.on('message', (request: HashRequest) => {
  run(request).then(
    (value): void => port.postMessage({ id: request.id, ok: true, value } satisfies HashReply),
    (err: unknown): void => {
      // The library's message could one day quote its input; send only the error's class.
      const name = err instanceof Error ? err.name : 'non-Error';
      port.postMessage({ id: request.id, ok: false, error: `${request.kind} failed (${name})` } satisfies HashReply);
    },
  );
});

port.postMessage({ ready: true } satisfies WorkerReady);

async function run(job: HashJob): Promise<string | boolean> {
  switch (job.kind) {
    case 'hashArgon2id':
      return argon2id({
        password: job.password,
        salt: randomBytes(job.saltBytes),
        memorySize: job.params.memoryKiB,
        iterations: job.params.iterations,
        parallelism: job.params.parallelism,
        hashLength: job.hashBytes,
        outputType: 'encoded',
      });
    case 'verifyArgon2id': {
      // Recomputing and comparing here (not hash-wasm's argon2Verify, which compares strings with ===)
      // keeps the compare constant-time and lets the pool's strict parser decide what is a valid hash.
      // hash-wasm refuses an empty password. No hash of '' exists (hashPassword refuses it) so the answer is
      // false, but only after the same work: an empty password must not be a faster way to probe.
      const empty = job.password.length === 0;
      const computed = await argon2id({
        password: empty ? '\0' : job.password,
        salt: job.salt,
        memorySize: job.params.memoryKiB,
        iterations: job.params.iterations,
        parallelism: job.params.parallelism,
        hashLength: job.hash.length,
        outputType: 'binary',
      });
      return timingSafeEqual(computed, job.hash) && !empty;
    }
    case 'verifyBcrypt': {
      // bcrypt only ever reads the first 72 bytes; every implementation that made these hashes cut there,
      // so cutting here (hash-wasm refuses longer input instead) keeps long imported passwords working.
      const bytes = Buffer.from(job.password, 'utf8').subarray(0, bcryptPasswordBytesMax);
      // As for argon2id: hash-wasm refuses an empty password, and refusing it faster would be a probe.
      const empty = bytes.length === 0;
      const matched = await bcryptVerify({ password: empty ? Buffer.of(0) : bytes, hash: job.hash });
      return matched && !empty;
    }
  }
}

/**
 * Runs this thread at a lower CPU priority than the event loop and the garbage collector's helper threads:
 * when the cores are all busy, argon2 waits, not a reply. On two cores with a hash running, the
 * collector's concurrent marking finds no core free, so a full collection of a large heap can do its
 * marking in the final pause instead, hundreds of milliseconds, and every reply (shed 503s included)
 * waits behind it. Linux only (a thread is a task there, /proc/thread-self names it); elsewhere, or if
 * refused, the thread runs as it is.
 */
function lowerOwnPriority(): void {
  try {
    const taskId = Number(basename(readlinkSync('/proc/thread-self')));
    if (Number.isInteger(taskId) && taskId > 0) setPriority(taskId, hashWorkerNiceness);
  } catch {
    // not Linux, or not allowed: the thread keeps the priority it has
  }
}
