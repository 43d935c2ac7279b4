// A State driven by decide() with a deterministic clock and ids, for store-level tests that need no log.

import type { LogRecord, Op } from '../../src/domain/entities.js';
import type { DecideContext, Decision } from '../../src/store/decide.js';
import { State } from '../../src/store/state.js';

export class StateHarness {
  readonly state = new State();
  private now = 1_700_000_000_000_000;
  private counter = 0;

  /** Decides with the next time and fresh ids (`id000001`...), and applies what was decided. */
  commit<T>(fn: (s: State, ctx: DecideContext) => Decision<T>): T {
    this.now += 1000;
    const next = (): string => `id${String(++this.counter).padStart(6, '0')}`;
    const ctx: DecideContext = { now: this.now, newId: next, newApikeyId: () => `K${String(++this.counter).padStart(24, '0')}`, newNonce: next };
    const decision = fn(this.state, ctx);
    if (decision.ops.length > 0) this.apply(decision.ops);
    return decision.result;
  }

  apply(ops: Op[]): void {
    const record: LogRecord = { seq: this.state.lastSeq + 1, at: this.now, ops };
    this.state.apply(record);
  }
}
