// Paging in the store: the creation-order index against a brute-force model, and State's pages (whole kinds, subsets, search).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { User } from '../src/domain/entities.js';
import { CreationOrder, precedes, type PagePosition } from '../src/store/creation-order.js';
import * as decide from '../src/store/decide.js';
import { State } from '../src/store/state.js';
import { prng } from './helpers/prng.js';
import { byCreation, namedUserOps, olderUserOps, StateHarness, steppedSearchPage } from './helpers/state-harness.js';


type Entry = { id: string; createdAt: number };

function modelSorted(live: Map<string, Entry>): Entry[] {
  return [...live.values()].sort((a, b) => (precedes(a.createdAt, a.id, b.createdAt, b.id) ? -1 : 1));
}

/** Every page of `limit` from the start, following the last item's position, as a client follows `next`. */
function walk(order: CreationOrder, at: (id: string) => number, limit: number): string[] {
  const out: string[] = [];
  let after: PagePosition | undefined;
  for (let guard = 0; guard < 100_000; guard++) {
    const page = order.after(after, limit)!;
    out.push(...page.items);
    if (!page.more) return out;
    const last = page.items[page.items.length - 1]!;
    after = { createdAt: at(last), id: last };
  }
  throw new Error('paging did not end');
}

test('CreationOrder agrees with a sorted model through appends, old adds (imports), removals, revivals and compaction', () => {
  for (const seed of [1, 2, 3, 4, 5]) {
    const rnd = prng(seed);
    const order = new CreationOrder();
    const live = new Map<string, Entry>();
    const everything = new Map<string, Entry>();
    let clock = 1_000_000;
    let n = 0;
    for (let step = 0; step < 4000; step++) {
      const r = rnd();
      if (r < 0.55) {
        // The normal case: a new entity, later than every other.
        clock += 1 + Math.floor(rnd() * 3);
        const e = { id: `e${(n++).toString(36).padStart(5, '0')}`, createdAt: clock };
        order.add(e.id, e.createdAt);
        live.set(e.id, e);
        everything.set(e.id, e);
      } else if (r < 0.65) {
        // An import of an older entity, possibly sharing a creation time with another.
        const e = { id: `i${(n++).toString(36).padStart(5, '0')}`, createdAt: Math.floor(rnd() * clock) };
        order.add(e.id, e.createdAt);
        live.set(e.id, e);
        everything.set(e.id, e);
      } else if (r < 0.95 && live.size > 0) {
        const ids = [...live.keys()];
        const e = live.get(ids[Math.floor(rnd() * ids.length)]!)!;
        order.remove(e.id, e.createdAt);
        live.delete(e.id);
      } else {
        // A deleted entity put again (an import re-run): its slot comes back once.
        const gone = [...everything.values()].filter((e) => !live.has(e.id));
        if (gone.length === 0) continue;
        const e = gone[Math.floor(rnd() * gone.length)]!;
        order.add(e.id, e.createdAt);
        live.set(e.id, e);
      }
      if (step % 500 === 0 || step === 3999) {
        const expected = modelSorted(live).map((e) => e.id);
        assert.equal(order.size, live.size, `seed ${seed} step ${step}: size`);
        assert.deepEqual(order.all(), expected, `seed ${seed} step ${step}: order`);
        const limit = 1 + Math.floor(rnd() * 50);
        assert.deepEqual(walk(order, (id) => everything.get(id)!.createdAt, limit), expected, `seed ${seed} step ${step}: paging by ${limit}`);
      }
    }
  }
});

test('a cursor stays valid when its own entity is deleted, and later entities only add to the end', () => {
  const order = new CreationOrder();
  for (let i = 1; i <= 10; i++) order.add(`id${i}`, i * 10);
  const first = order.after(undefined, 3)!;
  assert.deepEqual(first, { items: ['id1', 'id2', 'id3'], more: true });
  order.remove('id3', 30);
  order.remove('id4', 40);
  order.add('id11', 110);
  assert.deepEqual(order.after({ createdAt: 30, id: 'id3' }, 3)!.items, ['id5', 'id6', 'id7']);
  assert.deepEqual(order.after({ createdAt: 100, id: 'id10' }, 3), { items: ['id11'], more: false });
});

test('after() with a predicate answers undefined once its visit budget is spent, so the caller can sort instead', () => {
  const order = new CreationOrder();
  for (let i = 0; i < 1000; i++) order.add(`id${String(i).padStart(4, '0')}`, i + 1);
  assert.equal(order.after(undefined, 5, (id) => id === 'id0999', 100), undefined);
  assert.deepEqual(order.after(undefined, 5, (id) => id === 'id0999'), { items: ['id0999'], more: false });
});



function pages<T extends { id: string; createdAt: number }>(fetch: (after: PagePosition | undefined, limit: number) => { items: T[]; more: boolean }, limit: number): string[] {
  const out: string[] = [];
  let after: PagePosition | undefined;
  for (;;) {
    const page = fetch(after, limit);
    out.push(...page.items.map((x) => x.id));
    if (!page.more) return out;
    const last = page.items[page.items.length - 1]!;
    after = { createdAt: last.createdAt, id: last.id };
  }
}

test('State pages: every kind, every subset (walked or sorted), search, and after a merge import of older users', () => {
  const h = new StateHarness();
  h.commit((s, ctx) => decide.bootstrap(s, { email: 'admin@example.com', passwordHash: 'h' }, ctx));
  const big = h.commit((s, ctx) => decide.createApplication(s, { name: 'big' }, ctx));
  const small = h.commit((s, ctx) => decide.createApplication(s, { name: 'small' }, ctx));
  const group = h.commit((s, ctx) => decide.createGroup(s, { name: 'g', application: big.id }, ctx));
  const org = h.commit((s, ctx) => decide.createOrganization(s, { name: 'Acme' }, ctx));
  const rnd = prng(42);
  for (let i = 0; i < 600; i++) {
    // Everyone in `big`; a few in `small`, clustered at the end, so a walk from the start would be long.
    const apps = i > 590 ? [big.id, small.id] : [big.id];
    const groups = rnd() < 0.3 ? [group.id] : [];
    h.commit((s, ctx) => decide.createUser(s, {
      email: `u${i}@example.com`, passwordHash: 'h', applications: apps, groups, organization: rnd() < 0.5 ? org.id : undefined,
    }, ctx));
  }
  // Some leave and some are deleted: pages skip them, and membership changes keep creation order.
  for (const u of [...h.state.allUsers()].filter((_, i) => i % 7 === 3)) {
    h.commit((s, ctx) => decide.updateUser(s, u.id, { status: 'DISABLED' }, ctx));
    h.commit((s) => decide.deleteUser(s, u.id));
  }
  const check = (what: string): void => {
    const all = [...h.state.allUsers()];
    for (const limit of [1, 7, 100, 1000]) {
      assert.deepEqual(pages((a, l) => h.state.pageUsers(a, l), limit), byCreation(all), `${what}: users by ${limit}`);
      assert.deepEqual(pages((a, l) => h.state.pageUsersOfApplication(big.id, a, l), limit), byCreation(all.filter((u) => u.applications.includes(big.id))), `${what}: big by ${limit}`);
      assert.deepEqual(pages((a, l) => h.state.pageUsersOfApplication(small.id, a, l), limit), byCreation(all.filter((u) => u.applications.includes(small.id))), `${what}: small by ${limit}`);
      assert.deepEqual(pages((a, l) => h.state.pageUsersOfGroup(group.id, a, l), limit), byCreation(all.filter((u) => u.groups.includes(group.id))), `${what}: group by ${limit}`);
      assert.deepEqual(pages((a, l) => h.state.pageUsersOfOrganization(org.id, a, l), limit), byCreation(all.filter((u) => u.organization === org.id)), `${what}: org by ${limit}`);
      assert.deepEqual(pages((a, l) => h.state.pageSearch('u1', a, l), limit), byCreation(all.filter((u) => u.email.includes('u1'))), `${what}: search by ${limit}`);
    }
    assert.deepEqual(pages((a, l) => h.state.pageApplications(a, l), 2), byCreation(h.state.allApplications()), `${what}: applications`);
    assert.deepEqual(pages((a, l) => h.state.pageGroupsOfApplication(big.id, a, l), 1), [group.id], `${what}: groups of big`);
    assert.deepEqual(pages((a, l) => h.state.pageOrganizations(a, l), 1).length, 2, `${what}: organizations`);
  };
  check('created in order');

  // A merge import: users with older creation times than every existing one, so insertion order is no longer creation order.
  h.apply(olderUserOps(org.id, [big.id, small.id], ''));
  check('after a merge import');
});

test('pageSearch takes each of its ways (walk, the index\'s matches in creation order, all of them) and always agrees with a filter, in one step or many', () => {
  const h = new StateHarness();
  h.commit((s, ctx) => decide.bootstrap(s, { email: 'admin@example.com', passwordHash: 'h' }, ctx));
  const app = h.commit((s, ctx) => decide.createApplication(s, { name: 'a' }, ctx));
  // Bunched matches, so that paging "alpha" by 50 walks from the cursor (inside a block) and takes the
  // index's matches in creation order past a gap (up to the page; all of them once an older User is imported).
  const names = [
    ...Array(5000).fill('alpha'), ...Array(3000).fill('beta'), ...Array(5050).fill('alpha'), ...Array(2000).fill('beta'),
    ...Array(100).fill('alpha'), 'gamma', ...Array(50).fill('beta'),
  ];
  const ops = namedUserOps(h.state, app.id, names);
  for (let i = 0; i < ops.length; i += 1000) h.apply(ops.slice(i, i + 1000));
  const check = (what: string): void => {
    const all = [...h.state.allUsers()];
    // 'al' and 'et' are too short for a trigram: the index scans for them.
    for (const term of ['alpha', 'beta', 'gamma', 'example', 'al', 'et']) {
      const expected = byCreation(all.filter((u) => u.name.includes(term) || u.email.includes(term)));
      for (const limit of [50, 1000]) {
        assert.deepEqual(pages((a, l) => h.state.pageSearch(term, a, l), limit), expected, `${what}: ${term} by ${limit}`);
        for (const workMax of [97, 5000]) assert.deepEqual(pages((after, l) => steppedSearchPage(h.state, term, after, l, workMax), limit), expected, `${what}: ${term} by ${limit}, steps of ${workMax}`);
      }
    }
    assert.deepEqual(h.state.pageSearch('a\u0000b', undefined, 10), { items: [], more: false });
  };
  check('in insertion order');
  h.apply([{ op: 'put', kind: 'user', value: { ...(ops[0] as { value: User }).value, id: 'older', email: 'older@example.com', createdAt: 1 } }]);
  check('after an older User was imported');
});
