// A search page's Users are rendered fresh, never kept in the per-User render cache (random terms would cycle it): the same text as GET of each, current after every change.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { joined } from '../src/http/adapter.js';
import { Renderer } from '../src/http/render.js';
import type { RouteContext, RouteResult } from '../src/http/route.js';
import { userRoutes } from '../src/http/routes/users.js';
import type { User } from '../src/domain/entities.js';
import * as decide from '../src/store/decide.js';
import { StateHarness } from './helpers/state-harness.js';

class Harness extends StateHarness {
  readonly renderer = new Renderer('http://localhost:8080', this.state);

  /** GET /users/search/{term}?{query}, through the route's own handler. */
  async search(term: string, query: string): Promise<{ users: Record<string, unknown>[]; next?: string }> {
    const route = userRoutes.find((r) => r.operationId === 'searchUsers')!;
    const ctx = { params: { search: encodeURIComponent(term) }, query, deps: { state: this.state, renderer: this.renderer } };
    const answer = (await route.handler(ctx as unknown as RouteContext<unknown>)) as RouteResult;
    assert.ok(answer.list === undefined, 'a short answer is one text');
    return JSON.parse(joined(answer.result)) as { users: Record<string, unknown>[]; next?: string };
  }
}

test('search pages render their Users fresh, keep none of them, and follow changes', async () => {
  const h = new Harness();
  h.commit((s, ctx) => decide.bootstrap(s, { email: 'admin@example.com', passwordHash: 'h' }, ctx));
  const app = h.commit((s, ctx) => decide.createApplication(s, { name: 'Äpp', custom_data: { tier: 'gold' } }, ctx));
  const group = h.commit((s, ctx) => decide.createGroup(s, { name: 'grüppe', application: app.id }, ctx));
  const users: User[] = [];
  for (let i = 0; i < 30; i++) {
    users.push(h.commit((s, ctx) => decide.createUser(s, {
      email: `jo${i}@example.com`, name: `Jo Ümlaut ${i}`, passwordHash: 'h', applications: [app.id], groups: i % 2 === 0 ? [group.id] : [],
      custom_data: { company_name: 'Acme' },
    }, ctx)));
  }
  const fresh = (u: User): Record<string, unknown> => JSON.parse(h.renderer.userFull(h.state.user(u.id)!)) as Record<string, unknown>;

  assert.equal(h.renderer.cacheBytes, 0);
  for (let round = 0; round < 3; round++) {
    const page = await h.search('JO', 'limit=20');
    assert.deepEqual(page.users, users.slice(0, 20).map(fresh), `round ${round}`);
    assert.equal(typeof page.next, 'string');
    const rest = await h.search('jo', `limit=20&cursor=${page.next!}`);
    assert.deepEqual(rest.users, users.slice(20).map(fresh), `round ${round}: the next page`);
    assert.equal(rest.next, undefined);
  }
  // Each User was on a page three times, and none was kept.
  assert.equal(h.renderer.cacheBytes, 0, 'search pages keep nothing in the render cache');

  // A change to the User, or to a Group it shows, is on the next page at once.
  h.commit((s, ctx) => decide.updateUser(s, users[3]!.id, { name: 'Jo Renamed' }, ctx));
  h.commit((s, ctx) => decide.updateGroup(s, group.id, { name: 'Gruppe ñ' }, ctx));
  const changed = await h.search('jo', 'limit=20');
  assert.equal(changed.users[3]!['name'], 'Jo Renamed');
  assert.deepEqual(changed.users, users.slice(0, 20).map(fresh));
  assert.equal((changed.users[0]!['groups'] as { name: string }[])[0]!.name, 'Gruppe ñ');

  // minimal=1 answers the minimal representation; an unpaged search the full one, as before.
  const minimal = await h.search('jo', 'limit=5&minimal=1');
  assert.deepEqual(minimal.users, users.slice(0, 5).map((u) => JSON.parse(h.renderer.userMinimal(h.state.user(u.id)!)) as Record<string, unknown>));
  const unpaged = await h.search('jo', '');
  assert.deepEqual(unpaged.users, users.map(fresh));
});
