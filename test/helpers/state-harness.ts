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

/** Ids in creation order (then by id), as every paged listing answers them. */
export const byCreation = (items: Iterable<{ id: string; createdAt: number }>): string[] =>
  [...items].sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1)).map((u) => u.id);

/** Puts of Users `s000000`... in one Application, one per name, created in this order: bunched names for search paging. */
export function namedUserOps(state: State, applicationId: string, names: readonly string[]): Op[] {
  const at = 1_800_000_000_000_000;
  return names.map((name, i): Op => ({
    op: 'put', kind: 'user', value: {
      id: `s${String(i).padStart(6, '0')}`, email: `s${i}@example.com`, name, status: 'UNVERIFIED', customData: null, passwordHash: 'h',
      organization: state.meta!.defaultOrganization, applications: [applicationId], groups: [], apikeys: [], createdAt: at + i, modifiedAt: at + i,
    },
  }));
}

/** A merge import: 30 Users created before every other, applied in the reverse of their creation order. */
export function olderUserOps(organization: string, applications: readonly string[], name: string): Op[] {
  const old = 1_600_000_000_000_000;
  return Array.from({ length: 30 }, (_, i): Op => ({
    op: 'put', kind: 'user', value: {
      id: `imported${String(i).padStart(3, '0')}`, email: `imp${i}@example.com`, name, status: 'UNVERIFIED', customData: null,
      passwordHash: 'h', organization, applications: [...applications], groups: [], apikeys: [], createdAt: old + (29 - i) * 10, modifiedAt: old,
    },
  }));
}
