// Issue 23, "Amplification": answers about Users whose Applications and Groups carry large custom_data stay bounded
// (POST /authenticate without embedded custom_data, pages cut to their byte budget, `minimal=1`), and so do the
// User renderings the server keeps (authd_render_cache_bytes).

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { pageBytesMax, renderCacheBytesMax } from '../src/config/limits.js';
import { createApplication, createGroup, createUser, defaultUserPassword, unique } from './helpers/http-fixtures.js';
import { fails, ok, okKey, type Json } from './helpers/http-shapes.js';
import { startServer, type Api, type ServerProcess } from './helpers/server.js';

let server: ServerProcess;
let api: Api;
let app: string;
/** Groups of `app`, each with `bulky` as custom_data. */
const groups: string[] = [];
/** Users in `app` and in groups[0..memberGroups), in creation order. */
const members: string[] = [];
let org: string;

/** Near the custom_data limit (64 KiB encoded). */
const bulky = { blob: 'x'.repeat(60_000) };
const memberGroups = 8;
const memberCount = 20;
const term = unique('bounded');

before(async () => {
  server = await startServer();
  api = server.api();
  app = (await createApplication(api, { custom_data: bulky })).id;
  for (let i = 0; i < memberGroups; i++) groups.push((await createGroup(api, app, { custom_data: bulky })).id);
  org = okKey<{ id: string }>(await api.post('/organizations/organization', { name: unique('Bounded Org'), custom_data: { small: true } }), 'organization').id;
  for (let i = 0; i < memberCount; i++) {
    const user = await createUser(api, [app], { groups: groups, organization: org, name: `${term} ${i}`, custom_data: { own: i } });
    members.push(user.id);
  }
});

after(async () => {
  await server?.dispose();
});

describe('POST /authenticate', () => {
  test('answers the User without the custom_data of its Applications and Groups: small, whatever they carry', async () => {
    const user = okKey<Json & { email: string }>(await api.get(`/users/user/${members[0]!}`), 'user');
    const full = (await api.get(`/users/user/${members[0]!}`)).text.length;
    assert.ok(full > (memberGroups + 1) * 60_000, `the full representation embeds every custom_data (${full} bytes)`);
    for (const round of ['first', 'recognised repeat']) {
      const res = await api.post('/authenticate', { type: 'username', application: app, credential: { username: user.email, password: defaultUserPassword } });
      const result = ok<{ authenticated: boolean; user: Json }>(res);
      assert.equal(result.authenticated, true);
      assert.ok(res.text.length < 4096, `${round}: the answer is small (${res.text.length} bytes)`);
      const answered = result.user as { custom_data: unknown; organization: unknown; applications: Json[]; groups: Json[] };
      assert.deepEqual(answered.custom_data, { own: 0 }, 'the User\'s own custom_data stays');
      assert.deepEqual(answered.applications.map((a) => Object.keys(a).sort()), [['id', 'name', 'status']]);
      assert.deepEqual(answered.groups.map((g) => g['id']), groups);
      for (const g of answered.groups) assert.deepEqual(Object.keys(g).sort(), ['application', 'id', 'name', 'status']);
      assert.deepEqual(Object.keys(answered.organization as Json).sort(), ['id', 'name']);
    }
  });
});

describe('paging within a byte budget', () => {
  /** Follows `next` from a first page of `limit`; checks each page's size against the budget. */
  async function pagedIds(path: string, limit: number): Promise<{ ids: string[]; pages: number[] }> {
    const ids: string[] = [];
    const pages: number[] = [];
    let cursor: string | undefined;
    for (;;) {
      const res = await api.get(`${path}?limit=${limit}${cursor === undefined ? '' : `&cursor=${cursor}`}`);
      const page = ok<{ users: { id: string }[]; next?: string }>(res);
      assert.ok(page.users.length >= 1, 'a page carries at least one item');
      const itemsBytes = Buffer.byteLength(JSON.stringify(page.users));
      assert.ok(page.users.length === 1 || itemsBytes <= pageBytesMax, `a page of ${page.users.length} holds ${itemsBytes} bytes, over the budget`);
      ids.push(...page.users.map((u) => u.id));
      pages.push(page.users.length);
      if (page.next === undefined) return { ids, pages };
      cursor = page.next;
    }
  }

  test('GET /users?limit=N: a page over the budget is cut, and its cursor continues without loss or repeat', async () => {
    const whole = okKey<{ id: string }[]>(await api.get('/users?minimal=1'), 'users').map((u) => u.id);
    const { ids, pages } = await pagedIds('/users', 1000);
    assert.deepEqual(ids, whole, 'the pages, joined, are the whole list once');
    assert.ok(pages.length > 1 && pages[0]! < whole.length, `the first page was cut (${pages.join(', ')})`);
  });

  test('a search page is cut the same way', async () => {
    const { ids, pages } = await pagedIds(`/users/search/${term}`, 100);
    assert.deepEqual(ids, members);
    assert.ok(pages.length > 1, `cut into ${pages.length} pages`);
  });

  test('an item larger than the budget still comes, alone on its page, and the next page follows it', async () => {
    const more: string[] = [];
    // Enough Groups of bulky custom_data that one User's full representation is over the budget.
    const needed = Math.ceil(pageBytesMax / 60_000) + 1;
    for (let i = groups.length; i < needed; i++) more.push((await createGroup(api, app, { custom_data: bulky })).id);
    const huge = await createUser(api, [app], { groups: [...groups, ...more], name: `${term} huge` });
    const after = await createUser(api, [app], { name: `${term} after` });
    const { ids, pages } = await pagedIds(`/users/search/${term}`, 3);
    assert.deepEqual(ids, [...members, huge.id, after.id]);
    const hugeAt = ids.indexOf(huge.id);
    let seen = 0;
    const pageOfHuge = pages.findIndex((n) => (seen += n) > hugeAt);
    assert.equal(pages[pageOfHuge], 1, 'the huge User is alone on its page');
  });
});

describe('?minimal=1', () => {
  const minimalKeys = ['id', 'username', 'email', 'name', 'status', 'custom_data', 'organization', 'href', 'created_at', 'modified_at'].sort();

  test('user listings and searches answer Users without applications, groups and API Keys', async () => {
    const listings = [
      '/users?minimal=1', '/users?minimal=1&limit=5', '/users?limit=5&minimal=true',
      `/users/search/${term}?minimal=1`, `/users/search/${term}?minimal=1&limit=3`,
      `/applications/application/${app}/users?minimal=1`, `/groups/group/${groups[0]!}/users?minimal=1&limit=2`,
      `/organizations/organization/${org}/users?minimal=1`,
    ];
    for (const path of listings) {
      const res = await api.get(path);
      const users = ok<{ users: Json[] }>(res).users;
      assert.ok(users.length >= 1, `${path} lists someone`);
      // `roles` comes along on Users of the base Application (the first admin is one), as in every representation.
      for (const u of users) assert.deepEqual(Object.keys(u).filter((k) => k !== 'roles').sort(), minimalKeys, `${path}: ${JSON.stringify(Object.keys(u))}`);
      assert.ok(res.text.length < users.length * 2048, `${path}: small (${res.text.length} bytes for ${users.length})`);
    }
  });

  test('the typed client asks for it', async () => {
    const listed = await api.client.users.list({ limit: 2, minimal: true });
    assert.equal(listed.items.length, 2);
    assert.ok(listed.next !== undefined);
    for (const u of listed.items) assert.ok(!('applications' in u) && !('groups' in u) && !('apikeys' in u));
    const found = await api.client.users.search(term)({ minimal: true });
    assert.deepEqual(found.map((u) => u.id).slice(0, members.length), members);
    for (const u of found) assert.ok(!('applications' in u));
    for (const u of await api.client.applications.users(app)({ minimal: true })) assert.ok(!('groups' in u));
    assert.ok('groups' in (await api.client.applications.users(app)({ limit: 1 })).items[0]!, 'without minimal, the usual representation');
  });

  test('minimal=0 is the usual representation; another value, or minimal twice, is a 400 invalid_query', async () => {
    const usual = ok<{ users: Json[] }>(await api.get(`/users/search/${term}?minimal=0&limit=1`)).users;
    assert.ok('applications' in usual[0]!);
    fails(await api.get('/users?minimal=2'), 400, 'invalid_query');
    fails(await api.get('/users?minimal=1&minimal=1'), 400, 'invalid_query');
  });
});

describe('the kept User renderings', () => {
  test('stay under renderCacheBytesMax however many large Users are read', async () => {
    const metric = async (): Promise<number> => {
      const line = (await api.client.metrics()).split('\n').find((l) => l.startsWith('authd_render_cache_bytes '));
      assert.ok(line !== undefined, 'GET /metrics has authd_render_cache_bytes');
      return Number(line.split(' ')[1]);
    };
    // Full representations of ~200 KB (an Application and three Groups of bulky custom_data): well past the bound in all.
    const users: string[] = [];
    const count = Math.ceil((renderCacheBytesMax * 1.5) / 200_000);
    for (let i = 0; i < count; i++) users.push((await createUser(api, [app], { groups: groups.slice(0, 3) })).id);
    let largest = 0;
    for (const id of users) {
      // Twice: a rendering is kept from a User's second one on.
      for (let read = 0; read < 2; read++) assert.ok((await api.get(`/users/user/${id}`)).text.length > 200_000);
      if (users.indexOf(id) % 25 === 0) largest = Math.max(largest, await metric());
    }
    largest = Math.max(largest, await metric());
    assert.ok(largest <= renderCacheBytesMax, `${largest} bytes kept, over ${renderCacheBytesMax}`);
    assert.ok(largest >= renderCacheBytesMax / 2, `renderings are kept (${largest} bytes)`);
  });
});
