// A State driven by decide() with a deterministic clock and ids, for store-level tests that need no log.

import assert from 'node:assert/strict';
import type { LogRecord, Op, User } from '../../src/domain/entities.js';
import type { Page, PagePosition } from '../../src/store/creation-order.js';
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

/** A paged search of `state` worked out `workMax` units of index work per step, as requests do a slice per event-loop turn. */
export function steppedSearchPage(state: State, term: string, after: PagePosition | undefined, limit: number, workMax: number, offset = 0): Page<User> {
  const search = state.beginPageSearch(term, after, limit, offset);
  for (let steps = 0; ; steps++) {
    const page = search.step(workMax);
    if (page !== undefined) return page;
    assert.ok(steps < 1_000_000, 'a paged search makes progress');
  }
}
