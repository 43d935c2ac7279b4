// Offset paging in the store (issue 26, clients written against econtext-auth): a page from an offset is the slice of the whole order, for every way a page is found.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { User } from '../src/domain/entities.js';
import { CreationOrder, precedes, sliceInCreationOrder, type Page } from '../src/store/creation-order.js';
import * as decide from '../src/store/decide.js';
import { prng } from './helpers/prng.js';
import { byCreation, namedUserOps, olderUserOps, StateHarness, steppedSearchPage } from './helpers/state-harness.js';

type Entry = { id: string; createdAt: number };

function expectSlice<T>(page: Page<T> | undefined, whole: readonly T[], offset: number, limit: number, what: string): void {
  assert.ok(page !== undefined, `${what}: a page`);
  assert.deepEqual(page.items, whole.slice(offset, offset + limit), `${what}: items`);
  assert.equal(page.more, whole.length > offset + limit, `${what}: more`);
}

test('CreationOrder.fromOffset is the slice of the sorted model, with and without a predicate, through imports, removals and compaction', () => {
  for (const seed of [1, 2, 3]) {
    const rnd = prng(seed);
    const order = new CreationOrder();
    const live = new Map<string, Entry>();
    let clock = 1_000_000;
    for (let step = 0; step < 3000; step++) {
      const r = rnd();
      if (r < 0.6) {
        clock += 1 + Math.floor(rnd() * 3);
        const e = { id: `e${step.toString(36).padStart(4, '0')}`, createdAt: clock };
        order.add(e.id, e.createdAt);
        live.set(e.id, e);
      } else if (r < 0.7) {
        // An import of an older entity: the order is unsorted until the next read.
        const e = { id: `i${step.toString(36).padStart(4, '0')}`, createdAt: Math.floor(rnd() * clock) };
        order.add(e.id, e.createdAt);
        live.set(e.id, e);
      } else if (live.size > 0) {
        const ids = [...live.keys()];
        const e = live.get(ids[Math.floor(rnd() * ids.length)]!)!;
        order.remove(e.id, e.createdAt);
        live.delete(e.id);
      }
      if (step % 300 === 0 || step === 2999) {
        const sorted = [...live.values()].sort((a, b) => (precedes(a.createdAt, a.id, b.createdAt, b.id) ? -1 : 1)).map((e) => e.id);
        const even = (id: string): boolean => id.charCodeAt(id.length - 1) % 2 === 0;
        const evens = sorted.filter(even);
        for (const offset of [0, 1, Math.floor(evens.length / 2), Math.floor(sorted.length / 3), sorted.length - 1, sorted.length, sorted.length + 5].filter((o) => o >= 0)) {
          const limit = 1 + Math.floor(rnd() * 40);
          expectSlice(order.fromOffset(offset, limit), sorted, offset, limit, `seed ${seed} step ${step} offset ${offset}`);
          expectSlice(order.fromOffset(offset, limit, even), evens, offset, limit, `seed ${seed} step ${step} offset ${offset}, evens`);
        }
      }
    }
  }
});

test('CreationOrder.fromOffset with a predicate counts the skipped slots against its visit budget', () => {
  const order = new CreationOrder();
  for (let i = 0; i < 1000; i++) order.add(`id${String(i).padStart(4, '0')}`, i + 1);
  assert.equal(order.fromOffset(500, 5, () => true, 400), undefined);
  assert.deepEqual(order.fromOffset(500, 2, () => true, 600), { items: ['id0500', 'id0501'], more: true });
  // Without a predicate the first slot is found without a walk: the budget counts from there.
  assert.deepEqual(order.fromOffset(998, 5, undefined, 10), { items: ['id0998', 'id0999'], more: false });
});

test('sliceInCreationOrder is the slice of the sorted items, creation times shared by many (an import) included', () => {
  const rnd = prng(11);
  for (let round = 0; round < 200; round++) {
    const n = Math.floor(rnd() * 60);
    // Few distinct times: most items share theirs with others, ordered among them by id.
    const items = Array.from({ length: n }, (_, i) => ({ id: `x${String(Math.floor(rnd() * 1000)).padStart(3, '0')}${i}`, createdAt: 1000 + Math.floor(rnd() * 6) }));
    const sorted = [...items].sort((a, b) => (precedes(a.createdAt, a.id, b.createdAt, b.id) ? -1 : 1));
    for (const start of [0, 1, Math.floor(n / 2), n - 1, n, n + 3].filter((o) => o >= 0)) {
      const limit = 1 + Math.floor(rnd() * 20);
      expectSlice(sliceInCreationOrder(items, start, limit), sorted, start, limit, `round ${round}: ${n} items from ${start} by ${limit}`);
    }
  }
});

const ids = (page: Page<{ id: string }>): Page<string> => ({ items: page.items.map((x) => x.id), more: page.more });

test('State pages from an offset: every kind, every subset (walked or sorted), search (each of its ways), before and after a merge import', () => {
  const h = new StateHarness();
  h.commit((s, ctx) => decide.bootstrap(s, { email: 'admin@example.com', passwordHash: 'h' }, ctx));
  const big = h.commit((s, ctx) => decide.createApplication(s, { name: 'big' }, ctx));
  const small = h.commit((s, ctx) => decide.createApplication(s, { name: 'small' }, ctx));
  const group = h.commit((s, ctx) => decide.createGroup(s, { name: 'g', application: big.id }, ctx));
  for (let i = 0; i < 4; i++) h.commit((s, ctx) => decide.createGroup(s, { name: `g${i}`, application: big.id }, ctx));
  const org = h.commit((s, ctx) => decide.createOrganization(s, { name: 'Acme' }, ctx));
  const rnd = prng(7);
  for (let i = 0; i < 600; i++) {
    // Everyone in `big`; a few in `small`, at the end, so a walk from the start runs out and the subset is sorted.
    const apps = i > 585 ? [big.id, small.id] : [big.id];
    h.commit((s, ctx) => decide.createUser(s, {
      email: `u${i}@example.com`, passwordHash: 'h', name: i % 3 === 0 ? 'alpha' : 'beta', applications: apps,
      groups: rnd() < 0.3 ? [group.id] : [], organization: rnd() < 0.5 ? org.id : undefined,
    }, ctx));
  }
  for (const u of [...h.state.allUsers()].filter((_, i) => i % 9 === 4)) {
    h.commit((s, ctx) => decide.updateUser(s, u.id, { status: 'DISABLED' }, ctx));
    h.commit((s) => decide.deleteUser(s, u.id));
  }
  const check = (what: string): void => {
    const s = h.state;
    const users = [...s.allUsers()];
    const listings: [string, string[], (limit: number, offset: number) => Page<{ id: string }>][] = [
      ['users', byCreation(users), (l, o) => s.pageUsers(undefined, l, o)],
      ['applications', byCreation(s.allApplications()), (l, o) => s.pageApplications(undefined, l, o)],
      ['groups', byCreation(s.allGroups()), (l, o) => s.pageGroups(undefined, l, o)],
      ['organizations', byCreation(s.allOrganizations()), (l, o) => s.pageOrganizations(undefined, l, o)],
      ['users of big', byCreation(users.filter((u) => u.applications.includes(big.id))), (l, o) => s.pageUsersOfApplication(big.id, undefined, l, o)],
      ['users of small', byCreation(users.filter((u) => u.applications.includes(small.id))), (l, o) => s.pageUsersOfApplication(small.id, undefined, l, o)],
      ['users of the group', byCreation(users.filter((u) => u.groups.includes(group.id))), (l, o) => s.pageUsersOfGroup(group.id, undefined, l, o)],
      ['users of the org', byCreation(users.filter((u) => u.organization === org.id)), (l, o) => s.pageUsersOfOrganization(org.id, undefined, l, o)],
      ['groups of big', byCreation([...s.allGroups()].filter((g) => g.application === big.id)), (l, o) => s.pageGroupsOfApplication(big.id, undefined, l, o)],
      ['search alpha', byCreation(users.filter((u) => u.name.includes('alpha'))), (l, o) => s.pageSearch('alpha', undefined, l, o)],
      ['search u1', byCreation(users.filter((u) => u.email.includes('u1'))), (l, o) => s.pageSearch('u1', undefined, l, o)],
      ['search alpha, stepped', byCreation(users.filter((u) => u.name.includes('alpha'))), (l, o) => steppedSearchPage(s, 'alpha', undefined, l, 97, o)],
    ];
    for (const [name, whole, page] of listings) {
      assert.ok(whole.length >= 2, `${what}: ${name} has something to page`);
      for (const limit of [1, 7, 1000]) {
        for (const offset of [0, 1, Math.floor(whole.length / 2), whole.length - 1, whole.length, whole.length + 100]) {
          expectSlice(ids(page(limit, offset)), whole, offset, limit, `${what}: ${name} by ${limit} from ${offset}`);
        }
      }
    }
  };
  check('created in order');
  h.apply(olderUserOps(org.id, [big.id, small.id], 'alpha'));
  check('after a merge import');
});

test('pageSearch from an offset takes each of its ways (walk, the index\'s matches in order, all of them) and agrees with a filter', () => {
  const h = new StateHarness();
  h.commit((s, ctx) => decide.bootstrap(s, { email: 'admin@example.com', passwordHash: 'h' }, ctx));
  const app = h.commit((s, ctx) => decide.createApplication(s, { name: 'a' }, ctx));
  // Bunched matches: once an older User is imported, a walk from the start fills a page of "alpha" near the
  // start, and runs out of budget for one deep into it or for the rare "gamma" (which then takes all matches).
  const names = [...Array(3000).fill('alpha'), ...Array(4000).fill('beta'), ...Array(3000).fill('alpha'), 'gamma', ...Array(50).fill('beta'), 'gamma'];
  const ops = namedUserOps(h.state, app.id, names);
  for (let i = 0; i < ops.length; i += 1000) h.apply(ops.slice(i, i + 1000));
  const check = (what: string): void => {
    const all = [...h.state.allUsers()];
    for (const term of ['alpha', 'gamma', 'al']) {
      const expected = byCreation(all.filter((u) => u.name.includes(term) || u.email.includes(term)));
      for (const limit of [1, 50, 1000]) {
        for (const offset of [0, 1, 10, 2999, 3000, expected.length - 1, expected.length, expected.length + 1].filter((o) => o >= 0)) {
          expectSlice(ids(h.state.pageSearch(term, undefined, limit, offset)), expected, offset, limit, `${what}: ${term} by ${limit} from ${offset}`);
          expectSlice(ids(steppedSearchPage(h.state, term, undefined, limit, 997, offset)), expected, offset, limit, `${what}: ${term} by ${limit} from ${offset}, stepped`);
        }
      }
    }
  };
  check('in insertion order');
  h.apply([{ op: 'put', kind: 'user', value: { ...(ops[0] as { value: User }).value, id: 'older', email: 'older@example.com', createdAt: 1 } }]);
  check('after an older User was imported');
});
