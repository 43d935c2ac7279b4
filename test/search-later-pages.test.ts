// Later pages of a search start at their cursor: every page of a term matching one User in fifty is worked out in one small step however deep, and paging answers what a filter answers through deletions (of the cursor's own User, of long runs of Users) and after a bulk load.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { entityKinds, type Op, type User } from '../src/domain/entities.js';
import type { Page, PagePosition } from '../src/store/creation-order.js';
import * as decide from '../src/store/decide.js';
import type { DecideContext } from '../src/store/decide.js';
import { State } from '../src/store/state.js';

const base = 1_800_000_000_000_000;

function makeState(): { state: State; app: string; apply: (ops: Op[]) => void } {
  const state = new State();
  let now = 1_700_000_000_000_000;
  let counter = 0;
  const apply = (ops: Op[]): void => state.apply({ seq: state.lastSeq + 1, at: now, ops });
  const commit = <T>(fn: (s: State, ctx: DecideContext) => { ops: Op[]; result: T }): T => {
    now += 1000;
    const next = (): string => `id${String(++counter).padStart(6, '0')}`;
    const d = fn(state, { now, newId: next, newApikeyId: () => `K${String(++counter).padStart(24, '0')}`, newNonce: next });
    apply(d.ops);
    return d.result;
  };
  commit((s, ctx) => decide.bootstrap(s, { email: 'admin@example.com', passwordHash: 'h' }, ctx));
  const app = commit((s, ctx) => decide.createApplication(s, { name: 'a' }, ctx)).id;
  return { state, app, apply };
}

function user(state: State, app: string, i: number, name: string): User {
  return {
    id: `s${String(i).padStart(6, '0')}`, email: `s${i}@example.com`, name, status: 'UNVERIFIED', customData: null, passwordHash: 'h',
    organization: state.meta!.defaultOrganization, applications: [app], groups: [], apikeys: [], createdAt: base + i, modifiedAt: base + i,
  };
}

/** One page, worked out in steps of `workMax`; how many steps it took. */
function page(state: State, term: string, after: PagePosition | undefined, limit: number, workMax: number): { page: Page<User>; steps: number } {
  const search = state.beginPageSearch(term, after, limit);
  for (let steps = 1; ; steps++) {
    const found = search.step(workMax);
    if (found !== undefined) return { page: found, steps };
    assert.ok(steps < 100_000, 'a paged search makes progress');
  }
}

/** Every page from the first, following the cursor; `between` runs after each page (given its last User). */
function allPages(state: State, term: string, limit: number, workMax: number, between: (last: User) => void = () => {}): { ids: string[]; stepsMax: number } {
  const ids: string[] = [];
  let after: PagePosition | undefined;
  let stepsMax = 0;
  for (let pages = 0; pages < 10_000; pages++) {
    const { page: p, steps } = page(state, term, after, limit, workMax);
    stepsMax = Math.max(stepsMax, steps);
    ids.push(...p.items.map((u) => u.id));
    if (!p.more) return { ids, stepsMax };
    const last = p.items[p.items.length - 1]!;
    after = { createdAt: last.createdAt, id: last.id };
    between(last);
  }
  throw new Error('paging did not end');
}

const matching = (state: State, term: string): string[] =>
  [...state.allUsers()].filter((u) => u.name.includes(term) || u.email.includes(term)).sort((a, b) => a.createdAt - b.createdAt).map((u) => u.id);

test('every page of a term matching one User in fifty takes one small step, however deep', () => {
  const { state, app, apply } = makeState();
  const ops: Op[] = [];
  for (let i = 0; i < 20_000; i++) ops.push({ op: 'put', kind: 'user', value: user(state, app, i, i % 50 === 7 ? 'needle' : 'hay') });
  for (let i = 0; i < ops.length; i += 1000) apply(ops.slice(i, i + 1000));
  const expected = matching(state, 'needle');
  assert.equal(expected.length, 400);
  // 2,000 units: the page and one more resolved (20 units each) and the postings probed to find them; before
  // pages started at their cursor, a deep page resolved every match before it too.
  const { ids, stepsMax } = allPages(state, 'needle', 20, 2000);
  assert.deepEqual(ids, expected);
  assert.equal(stepsMax, 1);
  // A term too short for a trigram (scanned), and one every User matches, page the same way.
  assert.deepEqual(allPages(state, 'ne', 50, 2000).ids, matching(state, 'ne'));
  assert.deepEqual(allPages(state, 'example', 1000, 5000).ids, matching(state, 'example'));
});

test('paging through deletions: of the cursor\'s own User, of runs of Users longer than a binary search steps over', () => {
  const { state, app, apply } = makeState();
  const ops: Op[] = [];
  for (let i = 0; i < 30_000; i++) ops.push({ op: 'put', kind: 'user', value: user(state, app, i, i % 37 === 3 ? 'needle' : 'hay') });
  for (let i = 0; i < ops.length; i += 1000) apply(ops.slice(i, i + 1000));
  // A run of 6,000 deleted Users (more than firstDocAfter steps over) and one of 300.
  const dead: Op[] = [];
  for (let i = 8000; i < 14_000; i++) dead.push({ op: 'del', kind: 'user', id: user(state, app, i, '').id });
  for (let i = 20_000; i < 20_300; i++) dead.push({ op: 'del', kind: 'user', id: user(state, app, i, '').id });
  apply(dead);
  for (const workMax of [50, 3000]) {
    const seen = allPages(state, 'needle', 7, workMax, (last) => {
      // The last User of every third page is deleted before the next page is asked for.
      if (Number(last.id.slice(1)) % 3 === 0) apply([{ op: 'del', kind: 'user', id: last.id }]);
    }).ids;
    // Deleted Users were answered before they went; every page answered what the filter answers past its cursor.
    const expectedNow = matching(state, 'needle');
    assert.deepEqual(seen.filter((id) => state.user(id) !== undefined), expectedNow, `steps of ${workMax}`);
    assert.equal(new Set(seen).size, seen.length, 'nothing twice');
  }
});

test('pages after a bulk load, while the index is built and once it is', () => {
  const { state: source, app, apply } = makeState();
  const ops: Op[] = [];
  for (let i = 0; i < 6000; i++) ops.push({ op: 'put', kind: 'user', value: user(source, app, i, i % 13 === 1 ? 'needle' : 'hay') });
  apply(ops);
  // A snapshot load of the same Users: the index defers its postings and haystacks to indexStep.
  const state = new State();
  for (const kind of entityKinds) {
    const values = kind === 'user' ? [...source.allUsers()] : kind === 'application' ? [...source.allApplications()] : kind === 'meta' ? [source.meta] : kind === 'organization' ? [...source.allOrganizations()] : [];
    if (values.length > 0) state.loadSection(kind, values);
  }
  state.finishLoad(source.lastSeq);
  assert.equal(state.search.building, true);
  const expected = matching(source, 'needle');
  assert.deepEqual(allPages(state, 'needle', 20, 400).ids, expected, 'before any build step');
  for (let i = 0; i < 30; i++) state.indexStep(100, 50);
  assert.deepEqual(allPages(state, 'needle', 20, 400).ids, expected, 'mid-build');
  while (state.indexStep());
  assert.deepEqual(allPages(state, 'needle', 20, 400).ids, expected, 'built');
});
