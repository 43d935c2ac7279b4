// `limit` with `offset` over HTTP on every paged listing and search (issue 26, clients written against econtext-auth): the slices of a cursor walk, `next` on every page, the 400s.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { pageOffsetMax } from '../src/config/limits.js';
import { createApplication, createGroup, createUser } from './helpers/http-fixtures.js';
import { fails, ok } from './helpers/http-shapes.js';
import { startServer, type Api, type ServerProcess } from './helpers/server.js';

let server: ServerProcess;
let api: Api;
let app: string;
let group: string;
let org: string;

before(async () => {
  server = await startServer();
  api = server.api();
  app = (await createApplication(api)).id;
  for (let i = 0; i < 4; i++) await createApplication(api);
  group = (await createGroup(api, app)).id;
  for (let i = 0; i < 5; i++) await createGroup(api, app);
  org = (await api.client.organizations.create({ name: 'Offset Inc' })).id;
  for (let i = 0; i < 4; i++) await api.client.organizations.create({ name: `Offset ${i}` });
  for (let i = 0; i < 13; i++) {
    await createUser(api, [app], { organization: org, groups: i % 2 === 0 ? [group] : [], name: `offsetter ${i}` });
  }
  // One deleted in the middle: an offset counts live entities only, as the cursor's pages do.
  const gone = await createUser(api, [app], { organization: org, groups: [group], name: 'offsetter gone' });
  for (let i = 0; i < 3; i++) await createUser(api, [app], { organization: org, name: `offsetter late ${i}` });
  await api.client.users.update(gone.id, { status: 'DISABLED' });
  await api.client.users.delete(gone.id);
});

after(async () => {
  await server?.dispose();
});

type PageJson = Record<string, unknown> & { next?: string };

function page(res: Awaited<ReturnType<Api['get']>>, key: string): { ids: string[]; next: string | undefined } {
  const result = ok<PageJson>(res);
  const items = result[key] as { id: string }[];
  assert.ok(Array.isArray(items), `result.${key} is a list`);
  return { ids: items.map((x) => x.id), next: result.next };
}

/** The whole listing by following `next`, `limit` at a time, as a cursor client reads it. */
async function cursorWalk(path: string, key: string, limit: number): Promise<string[]> {
  const ids: string[] = [];
  let next: string | undefined;
  for (let guard = 0; guard < 1000; guard++) {
    const p = page(await api.get(`${path}?limit=${limit}${next === undefined ? '' : `&cursor=${next}`}`), key);
    ids.push(...p.ids);
    if (p.next === undefined) return ids;
    next = p.next;
  }
  throw new Error('paging did not end');
}

const listings: [string, () => string, string][] = [
  ['GET /users', () => '/users', 'users'],
  ['GET /applications', () => '/applications', 'applications'],
  ['GET /groups', () => '/groups', 'groups'],
  ['GET /organizations', () => '/organizations', 'organizations'],
  ['GET /users/search/{term}', () => '/users/search/offsetter', 'users'],
  ['GET /applications/application/{id}/users', () => `/applications/application/${app}/users`, 'users'],
  ['GET /applications/application/{id}/groups', () => `/applications/application/${app}/groups`, 'groups'],
  ['GET /groups/group/{id}/users', () => `/groups/group/${group}/users`, 'users'],
  ['GET /organizations/organization/{id}/users', () => `/organizations/organization/${org}/users`, 'users'],
];

describe('an offset page is the slice of a cursor walk, with the same `next`', () => {
  for (const [name, pathOf, key] of listings) {
    test(name, async () => {
      const path = pathOf();
      const whole = await cursorWalk(path, key, 2);
      assert.ok(whole.length >= 5, `${name} has something to page`);
      for (const limit of [1, 3, 1000]) {
        for (let offset = 0; offset <= whole.length + 1; offset++) {
          const what = `${name}?limit=${limit}&offset=${offset}`;
          const p = page(await api.get(`${path}?limit=${limit}&offset=${offset}`), key);
          assert.deepEqual(p.ids, whole.slice(offset, offset + limit), what);
          assert.equal(p.next !== undefined, offset + limit < whole.length, `${what}: next only when more follow`);
          if (p.next !== undefined) {
            // A client can switch to the cursor: it continues right after the offset page.
            const after = page(await api.get(`${path}?limit=${limit}&cursor=${p.next}`), key);
            assert.deepEqual(after.ids, whole.slice(offset + limit, offset + 2 * limit), `${what}: its next`);
          }
        }
      }
    });
  }

  test('an offset client advancing by the items it got reads every User once, in the cursor\'s order', async () => {
    const whole = await cursorWalk('/users', 'users', 1000);
    const read: string[] = [];
    for (let guard = 0; guard < 1000; guard++) {
      const p = page(await api.get(`/users?offset=${read.length}&limit=4`), 'users');
      if (p.ids.length === 0) break;
      read.push(...p.ids);
    }
    assert.deepEqual(read, whole);
  });

  test('with minimal=1, and the parameters in any order', async () => {
    const whole = await cursorWalk(`/applications/application/${app}/users`, 'users', 1000);
    const p = ok<{ users: Record<string, unknown>[] }>(await api.get(`/applications/application/${app}/users?offset=2&minimal=1&limit=3`));
    assert.deepEqual(p.users.map((u) => u['id']), whole.slice(2, 5));
    assert.ok(p.users.every((u) => !('applications' in u)), 'minimal representation');
  });
});

describe('an offset past the end is an empty page', () => {
  for (const [name, pathOf, key] of listings) {
    test(name, async () => {
      for (const offset of [1000, pageOffsetMax]) {
        const result = ok<PageJson>(await api.get(`${pathOf()}?limit=10&offset=${offset}`));
        assert.deepEqual(result, { [key]: [] }, `offset ${offset}: no items and no next`);
      }
    });
  }
});

describe('invalid offsets answer 400 invalid_query naming offset', () => {
  const refused = [
    'limit=5&offset=-1', 'limit=5&offset=1.5', 'limit=5&offset=1e3', 'limit=5&offset=abc', 'limit=5&offset=', 'limit=5&offset',
    'limit=5&offset=%2B1', 'limit=5&offset=0x10', 'limit=5&offset=%201', `limit=5&offset=${pageOffsetMax + 1}`, 'limit=5&offset=99999999999999999999999',
    'limit=5&offset=1&offset=2', 'offset=5',
  ];
  for (const query of refused) {
    test(query, async () => {
      for (const path of ['/users', '/applications', `/groups/group/${group}/users`, '/users/search/offsetter']) {
        const error = fails(await api.get(`${path}?${query}`), 400, 'invalid_query');
        assert.match(error.message, /offset/, `${path}?${query}`);
      }
    });
  }

  test('offset with a cursor names both', async () => {
    const first = page(await api.get('/users?limit=2'), 'users');
    assert.ok(first.next !== undefined);
    for (const query of [`limit=2&offset=0&cursor=${first.next}`, `cursor=${first.next}&limit=2&offset=4`]) {
      const error = fails(await api.get(`/users?${query}`), 400, 'invalid_query');
      assert.match(error.message, /offset/);
      assert.match(error.message, /cursor/);
    }
  });

  test('the bound is named in the message, and the OpenAPI document declares offset on every paged route', async () => {
    const error = fails(await api.get(`/users?limit=5&offset=${pageOffsetMax + 1}`), 400, 'invalid_query');
    assert.match(error.message, new RegExp(String(pageOffsetMax)));
    const doc = JSON.parse((await api.get('/openapi.json')).text) as { paths: Record<string, Record<string, { parameters?: { name: string; schema: Record<string, unknown> }[] }>> };
    for (const [name] of listings) {
      const path = name.slice('GET '.length).replace('{id}', name.includes('/applications/') ? '{appid}' : name.includes('/groups/') ? '{groupid}' : '{orgid}').replace('{term}', '{search}');
      const offset = doc.paths[path]?.['get']?.parameters?.find((p) => p.name === 'offset');
      assert.deepEqual(offset?.schema, { type: 'integer', minimum: 0, maximum: pageOffsetMax }, `${path} declares offset`);
    }
  });
});
