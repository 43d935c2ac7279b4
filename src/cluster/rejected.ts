// Messages from NATS that are not applied: those that did not open under the server key (src/cluster/seal.ts), and log messages void because they landed at another sequence than the one they were decided for (replica.ts); counted by kind for /metrics, logged at a bounded rate.

import { clusterRejectedLogIntervalMs } from '../config/limits.js';

export const rejectedKinds = ['log', 'failure', 'snapshot', 'status', 'void'] as const;
export type RejectedKind = typeof rejectedKinds[number];

/** What a rejection is logged with (pino's warn, or a test's). */
export interface RejectionLogger {
  warn(obj: object, msg?: string): void;
}

const why: Record<RejectedKind, string> = {
  log: 'a message on the cluster log does not open under this server key: not applied, its sequence passed over (every node does the same)',
  failure: 'a shared failure does not open under this server key, or was sent before (a replay) or outside the time window: not counted',
  snapshot: 'a snapshot in the cluster bucket does not open under this server key: not loaded',
  status: 'a status request or answer is not one of the cluster\'s: not answered',
  void: 'a message on the cluster log landed at another sequence than the one it was decided for: void on every node (its writer decides again)',
};

export class RejectedMessages {
  readonly #counts: Record<RejectedKind, number> = { log: 0, failure: 0, snapshot: 0, status: 0, void: 0 };
  /** Per kind: rejections since the last line, and when that line was written. */
  readonly #unlogged: Record<RejectedKind, number> = { log: 0, failure: 0, snapshot: 0, status: 0, void: 0 };
  readonly #loggedAtMs: Record<RejectedKind, number> = { log: -Infinity, failure: -Infinity, snapshot: -Infinity, status: -Infinity, void: -Infinity };

  constructor(private readonly logger: RejectionLogger) {}

  /** Counts of rejected messages since start, by kind. */
  get counts(): Readonly<Record<RejectedKind, number>> {
    return this.#counts;
  }

  /**
   * Counts one, and logs it unless a line for its kind was written within clusterRejectedLogIntervalMs; the next
   * line says how many came meanwhile. detail names the message (its sequence, subject or object), never its bytes.
   */
  reject(kind: RejectedKind, detail: Record<string, unknown>): void {
    this.#counts[kind]++;
    this.#unlogged[kind]++;
    const nowMs = performance.now();
    if (nowMs - this.#loggedAtMs[kind] < clusterRejectedLogIntervalMs) return;
    this.logger.warn({ kind, ...detail, rejected: this.#unlogged[kind], rejectedTotal: this.#counts[kind] }, why[kind]);
    this.#unlogged[kind] = 0;
    this.#loggedAtMs[kind] = nowMs;
  }
}
