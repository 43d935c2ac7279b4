// HTTP paging through the typed client: every list endpoint, `next` and its absence, invalid queries, writes while paging, a restart.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { AuthClient, Page, PageRequest } from '../src/client/index.js';
import { createApplication, createGroup, createUser } from './helpers/http-fixtures.js';
import { fails, ok } from './helpers/http-shapes.js';
import { startServer, type Api, type ServerProcess } from './helpers/server.js';

let server: ServerProcess;
let api: Api;
let client: AuthClient;
let app: string;
let group: string;
let org: string;
/** Users made in before(), in creation order; all in `app` and in `org`, every other one in `group`. */
const made: string[] = [];

before(async () => {
  server = await startServer();
  api = server.api();
  client = api.client;
  app = (await createApplication(api)).id;
  group = (await createGroup(api, app)).id;
  for (let i = 0; i < 3; i++) await createGroup(api, app);
  org = (await client.organizations.create({ name: 'Paged Inc' })).id;
  for (let i = 0; i < 23; i++) {
    const user = await createUser(api, [app], { organization: org, groups: i % 2 === 0 ? [group] : [], name: `pager ${i}` });
    made.push(user.id);
  }
});

after(async () => {
  await server?.dispose();
});

/** Follows `next` to the end; checks that every page but the last is full and only the last lacks `next`. */
async function collect<T extends { id: string }>(list: (page: PageRequest) => Promise<Page<T>>, limit: number): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await list(cursor === undefined ? { limit } : { limit, cursor });
    assert.ok(page.items.length <= limit, 'a page holds at most limit items');
    ids.push(...page.items.map((x) => x.id));
    if (page.next === undefined) return ids;
    assert.equal(page.items.length, limit, 'only the last page may be short');
    cursor = page.next;
  }
}

describe('every list endpoint pages', () => {
  const listings: [string, (c: AuthClient) => { whole: () => Promise<{ id: string }[]>; page: (p: PageRequest) => Promise<Page<{ id: string }>> }][] = [
    ['GET /applications', (c) => ({ whole: () => c.applications.list(), page: (p) => c.applications.list(p) })],
    ['GET /groups', (c) => ({ whole: () => c.groups.list(), page: (p) => c.groups.list(p) })],
    ['GET /organizations', (c) => ({ whole: () => c.organizations.list(), page: (p) => c.organizations.list(p) })],
    ['GET /users', (c) => ({ whole: () => c.users.list(), page: (p) => c.users.list(p) })],
    ['GET /users/search/{term}', (c) => ({ whole: () => c.users.search('pager')(), page: (p) => c.users.search('pager')(p) })],
    ['GET /applications/application/{id}/users', (c) => ({ whole: () => c.applications.users(app)(), page: (p) => c.applications.users(app)(p) })],
    ['GET /applications/application/{id}/groups', (c) => ({ whole: () => c.applications.groups(app)(), page: (p) => c.applications.groups(app)(p) })],
    ['GET /groups/group/{id}/users', (c) => ({ whole: () => c.groups.users(group)(), page: (p) => c.groups.users(group)(p) })],
    ['GET /organizations/organization/{id}/users', (c) => ({ whole: () => c.organizations.users(org)(), page: (p) => c.organizations.users(org)(p) })],
  ];
  for (const [name, make] of listings) {
    test(`${name}: the pages, joined, are the whole list in creation order`, async () => {
      const { whole, page } = make(client);
      const all = (await whole()).map((x) => x.id);
      assert.ok(all.length >= 2, `${name} has something to page`);
      for (const limit of [1, 3, 1000]) assert.deepEqual(await collect(page, limit), all, `${name} by ${limit}`);
    });
  }

  test('the per-Application listing is in creation order and the search finds the made Users', async () => {
    assert.deepEqual((await client.applications.users(app)()).map((u) => u.id), made);
    assert.deepEqual(await collect((p) => client.users.search('pager')(p), 4), made);
  });

  test('a last page carries no `next`; an exact fit too', async () => {
    const res = ok<{ users: unknown[]; next?: string }>(await api.get(`/applications/application/${app}/users?limit=${made.length}`));
    assert.equal(res.users.length, made.length);
    assert.ok(!('next' in res), 'no next when nothing follows');
    const first = ok<{ users: unknown[]; next?: string }>(await api.get(`/applications/application/${app}/users?limit=${made.length - 1}`));
    assert.equal(typeof first.next, 'string');
    assert.deepEqual(Object.keys(first).sort(), ['next', 'users']);
  });

  test('paginate() follows every page', async () => {
    const seen: string[] = [];
    for await (const u of client.paginate((p) => client.organizations.users(org)(p), 5)) seen.push(u.id);
    assert.deepEqual(seen, made);
  });
});

describe('invalid queries answer 400 invalid_query', () => {
  for (const query of ['limit=0', 'limit=1001', 'limit=abc', 'limit=1e3', 'limit=-1', 'limit=', 'limit=5&limit=6', 'cursor=abc', 'limit=5&cursor=%%%', 'limit=5&cursor=bm90LWEtY3Vyc29y', `limit=5&cursor=${'A'.repeat(200)}`]) {
    test(query, async () => {
      const error = fails(await api.get(`/users?${query}`), 400, 'invalid_query');
      assert.match(error.message, /limit|cursor/);
    });
  }

  test('other query parameters are ignored, and without limit the list is whole', async () => {
    const whole = ok<{ users: unknown[] }>(await api.get(`/applications/application/${app}/users?sort=name`));
    assert.equal(whole.users.length, made.length);
    assert.ok(!('next' in whole));
  });
});

test('paging while others write: every User that existed when paging began and was not deleted is seen once', async () => {
  const paged = (await createApplication(api)).id;
  const before: string[] = [];
  for (let i = 0; i < 20; i++) before.push((await createUser(api, [paged])).id);
  const deleted = new Set<string>();
  const seen: string[] = [];
  let cursor: string | undefined;
  let round = 0;
  for (;;) {
    const page = await client.applications.users(paged)(cursor === undefined ? { limit: 4 } : { limit: 4, cursor });
    seen.push(...page.items.map((u) => u.id));
    if (page.next === undefined) break;
    cursor = page.next;
    round++;
    // Between pages: a new User, an update of one already seen, and a deletion of the last one seen
    // (the cursor's own entity) and of one not yet seen.
    await createUser(api, [paged]);
    await client.users.update(seen[0]!, { name: `renamed ${round}` });
    for (const victim of [seen[seen.length - 1]!, before[before.length - round]!]) {
      if (deleted.has(victim)) continue;
      await client.users.update(victim, { status: 'DISABLED' });
      await client.users.delete(victim);
      deleted.add(victim);
    }
  }
  assert.equal(new Set(seen).size, seen.length, 'nothing seen twice');
  for (const id of before) {
    if (!deleted.has(id)) assert.ok(seen.includes(id), `User ${id}, there from the start, was seen`);
  }
  const existingAtStart = seen.filter((id) => before.includes(id));
  assert.deepEqual(existingAtStart, before.filter((id) => existingAtStart.includes(id)), 'in creation order');
});

test('a cursor keeps its place across a restart', async () => {
  const first = await client.applications.users(app)({ limit: 10 });
  assert.ok(first.next !== undefined);
  await server.stop();
  server = await server.restart();
  api = server.api();
  client = api.client;
  const rest = await collect((p) => client.applications.users(app)(p.cursor === undefined ? { limit: 10, cursor: first.next! } : p), 10);
  assert.deepEqual([...first.items.map((u) => u.id), ...rest], made);
});
