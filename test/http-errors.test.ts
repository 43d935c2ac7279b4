// HTTP: every error class — 400 (JSON, fields, custom_data rules, path ids), 404, 405, 413, 415 — and that a refused request changes nothing.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createApplication, createGroup, createUser, getApplication, getGroup, getUser, unknownId } from './helpers/http-fixtures.js';
import {
  fails, failsOnField, ok, okKey, type ApplicationJson, type GroupJson, type UserFullJson,
} from './helpers/http-shapes.js';
import {
  adminEmail, adminPassword, basicAuth, rawRequest, startServer, type Api, type HttpResult, type ServerProcess,
} from './helpers/server.js';

let server: ServerProcess;
let api: Api;
let app: ApplicationJson;
let group: GroupJson;
let user: UserFullJson;

before(async () => {
  server = await startServer();
  api = server.api();
  app = await createApplication(api, { custom_data: { keep: 'me' } });
  group = await createGroup(api, app.id);
  user = await createUser(api, [app.id]);
});

after(async () => {
  await server?.dispose();
});

function sendJsonText(method: string, path: string, text: string | Uint8Array): Promise<HttpResult> {
  return api.request(method, path, { raw: text, headers: { 'Content-Type': 'application/json' } });
}

async function applicationCount(): Promise<number> {
  return okKey<ApplicationJson[]>(await api.get('/applications'), 'applications').length;
}

/** Runs `refuse` and checks that nothing observable changed: the Application list, and the seeded entities. */
async function changesNothing(refuse: () => Promise<void>): Promise<void> {
  const apps = await applicationCount();
  const groups = okKey<GroupJson[]>(await api.get('/groups'), 'groups').length;
  const users = okKey<UserFullJson[]>(await api.get('/users'), 'users').length;
  await refuse();
  assert.equal(await applicationCount(), apps, 'no Application was created');
  assert.equal(okKey<GroupJson[]>(await api.get('/groups'), 'groups').length, groups, 'no Group was created');
  assert.equal(okKey<UserFullJson[]>(await api.get('/users'), 'users').length, users, 'no User was created');
  assert.deepEqual(await getApplication(api, app.id), app, 'the seeded Application is unchanged');
  assert.deepEqual(await getGroup(api, group.id), group, 'the seeded Group is unchanged');
  assert.deepEqual(await getUser(api, user.id), user, 'the seeded User is unchanged');
}

/** `depth` nested objects, the innermost holding one scalar: {"k":{"k":...{"k":1}}}. */
function nestedObjects(depth: number): string {
  return '{"k":'.repeat(depth - 1) + '{"k":1}' + '}'.repeat(depth - 1);
}

describe('400 invalid_json', () => {
  test('a body that is not JSON, or not UTF-8, is refused', async () => {
    await changesNothing(async () => {
      for (const text of ['{', '{"name": "x",}', "{'name':'x'}", 'undefined', '{"name":"x"}garbage']) {
        fails(await sendJsonText('POST', '/applications/application', text), 400, 'invalid_json');
      }
      fails(await sendJsonText('POST', '/applications/application', Buffer.from([0x7b, 0x22, 0x6e, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d])), 400, 'invalid_json');
      fails(await sendJsonText('PUT', `/applications/application/${app.id}`, '{"name":'), 400, 'invalid_json');
    });
  });

  test('a JSON body that is not an object is a 400 invalid_field', async () => {
    await changesNothing(async () => {
      for (const text of ['[]', '[{"name":"x"}]', '"name"', '42', 'null', 'true']) {
        fails(await sendJsonText('POST', '/applications/application', text), 400, 'invalid_field');
      }
    });
  });
});

describe('400 invalid_field names the field', () => {
  test('wrong types and values on create and update', async () => {
    await changesNothing(async () => {
      failsOnField(await api.post('/applications/application', { name: 42 }), 'name');
      failsOnField(await api.post('/applications/application', { name: '   ' }), 'name');
      failsOnField(await api.post('/applications/application', { name: 'x', description: { a: 1 } }), 'description');
      failsOnField(await api.post('/applications/application', { name: 'x'.repeat(100_000) }), 'name');
      failsOnField(await api.put(`/applications/application/${app.id}`, { status: 'enabled' }), 'status');
      failsOnField(await api.put(`/applications/application/${app.id}`, { name: null }), 'name');
      failsOnField(await api.post('/groups/group', { name: 5, application: app.id }), 'name');
      failsOnField(await api.put(`/groups/group/${group.id}`, { description: 5 }), 'description');
      failsOnField(await api.put(`/users/user/${user.id}`, { email: 'nope' }), 'email');
      failsOnField(await api.put(`/users/user/${user.id}`, { groups: 'not-an-array' }), 'groups');
      failsOnField(await api.put(`/users/user/${user.id}`, { name: ['x'] }), 'name');
    });
  });
});

describe('custom_data rules', () => {
  test('custom_data that is not an object is a 400 naming custom_data', async () => {
    await changesNothing(async () => {
      for (const customData of [[], [1, 2], 'text', 5, true]) {
        failsOnField(await api.post('/applications/application', { name: 'cd', custom_data: customData }), 'custom_data');
        failsOnField(await api.post('/groups/group', { name: 'cd', application: app.id, custom_data: customData }), 'custom_data');
        failsOnField(await api.post('/users/user', { email: 'cd@example.com', password: 'long-enough', applications: [app.id], custom_data: customData }), 'custom_data');
        failsOnField(await api.put(`/applications/application/${app.id}`, { custom_data: customData }), 'custom_data');
        failsOnField(await api.put(`/groups/group/${group.id}`, { custom_data: customData }), 'custom_data');
        failsOnField(await api.put(`/users/user/${user.id}`, { custom_data: customData }), 'custom_data');
      }
    });
  });

  test('custom_data over 64 KiB encoded is a 400; just under is accepted', async () => {
    await changesNothing(async () => {
      const big = { blob: 'x'.repeat(64 * 1024) };
      failsOnField(await api.post('/applications/application', { name: 'big', custom_data: big }), 'custom_data');
      failsOnField(await api.put(`/applications/application/${app.id}`, { custom_data: big }), 'custom_data');
      failsOnField(await api.put(`/users/user/${user.id}`, { custom_data: big }), 'custom_data');
      // Far over 64 KiB but under the 1 MiB body limit: still the custom_data rule, not 413.
      failsOnField(await api.put(`/groups/group/${group.id}`, { custom_data: { blob: 'y'.repeat(900 * 1024) } }), 'custom_data');
    });
    const fits = { blob: 'z'.repeat(60 * 1024) };
    const made = okKey<ApplicationJson>(await api.post('/applications/application', { name: 'fits', custom_data: fits }), 'application');
    assert.deepEqual(made.custom_data, fits);
  });

  test('custom_data deeper than 32 levels is a 400', async () => {
    await changesNothing(async () => {
      failsOnField(await sendJsonText('POST', '/applications/application', `{"name":"deep","custom_data":${nestedObjects(33)}}`), 'custom_data');
      failsOnField(await sendJsonText('PUT', `/groups/group/${group.id}`, `{"custom_data":${nestedObjects(60)}}`), 'custom_data');
      const arrays = `{"a":${'['.repeat(40)}1${']'.repeat(40)}}`;
      failsOnField(await sendJsonText('PUT', `/applications/application/${app.id}`, `{"custom_data":${arrays}}`), 'custom_data');
      // Deep enough to break a recursive parser that has no limit: refused before parsing (over the body's
      // nesting bound), and the process lives on.
      fails(await sendJsonText('PUT', `/applications/application/${app.id}`, `{"custom_data":${nestedObjects(5000)}}`), 400, 'invalid_json');
    });
    const made = okKey<ApplicationJson>(await sendJsonText('POST', '/applications/application', `{"name":"deep-ok","custom_data":${nestedObjects(20)}}`), 'application');
    assert.deepEqual(made.custom_data, JSON.parse(nestedObjects(20)));
  });

  test('custom_data exactly 32 levels deep (32 nested objects, a scalar in the innermost) is accepted', async () => {
    const made = okKey<ApplicationJson>(await sendJsonText('POST', '/applications/application', `{"name":"deep-32","custom_data":${nestedObjects(32)}}`), 'application');
    assert.deepEqual(made.custom_data, JSON.parse(nestedObjects(32)));
    const updated = okKey<GroupJson>(await sendJsonText('PUT', `/groups/group/${group.id}`, `{"custom_data":${nestedObjects(32)}}`), 'group');
    assert.deepEqual(updated.custom_data, JSON.parse(nestedObjects(32)));
    group = updated;
  });

  test('keys __proto__, constructor and prototype are refused at any depth', async () => {
    await changesNothing(async () => {
      const bad = [
        '{"__proto__":{"polluted":true}}',
        '{"constructor":{"prototype":{"polluted":true}}}',
        '{"prototype":1}',
        '{"a":{"b":{"__proto__":1}}}',
        '{"list":[1,{"constructor":"x"}]}',
        '{"a":[[{"prototype":{}}]]}',
      ];
      for (const customData of bad) {
        failsOnField(await sendJsonText('POST', '/applications/application', `{"name":"proto","custom_data":${customData}}`), 'custom_data');
        failsOnField(await sendJsonText('PUT', `/groups/group/${group.id}`, `{"custom_data":${customData}}`), 'custom_data');
        failsOnField(await sendJsonText('PUT', `/users/user/${user.id}`, `{"custom_data":${customData}}`), 'custom_data');
      }
    });
    assert.equal(({} as Record<string, unknown>)['polluted'], undefined);
    // Such words are fine as values and inside longer keys.
    const fine = { note: '__proto__', constructor_name: 'x', my_prototype: 1 };
    assert.deepEqual(okKey<ApplicationJson>(await api.post('/applications/application', { name: 'proto-ok', custom_data: fine }), 'application').custom_data, fine);
  });

  test('a lone surrogate anywhere in a string is a 400', async () => {
    await changesNothing(async () => {
      failsOnField(await sendJsonText('POST', '/applications/application', '{"name":"s","custom_data":{"k":"\\ud800"}}'), 'custom_data');
      failsOnField(await sendJsonText('POST', '/applications/application', '{"name":"s","custom_data":{"\\udc00":"v"}}'), 'custom_data');
      failsOnField(await sendJsonText('POST', '/applications/application', '{"name":"s","custom_data":{"k":["ok","\\ud83d"]}}'), 'custom_data');
      failsOnField(await sendJsonText('POST', '/applications/application', '{"name":"bad \\ud800 name"}'), 'name');
      failsOnField(await sendJsonText('PUT', `/groups/group/${group.id}`, '{"description":"\\udfff"}'), 'description');
      failsOnField(await sendJsonText('PUT', `/users/user/${user.id}`, '{"name":"x\\ud800y"}'), 'name');
    });
    // A proper pair is fine.
    const made = okKey<ApplicationJson>(await sendJsonText('POST', '/applications/application', '{"name":"emoji \\ud83d\\ude00","custom_data":{"k":"\\ud83d\\ude00"}}'), 'application');
    assert.equal(made.name, 'emoji \u{1F600}');
  });
});

describe('400 invalid_id', () => {
  test('a malformed id in the path is refused before any lookup', async () => {
    const long = 'a'.repeat(65);
    const paths: [string, string][] = [
      ['GET', '/applications/application/bad-id'],
      ['GET', `/applications/application/${long}`],
      ['PUT', '/applications/application/bad.id'],
      ['DELETE', '/applications/application/bad_id'],
      ['GET', '/applications/application/%20x/users'],
      ['GET', '/groups/group/a%2Fb'],
      ['DELETE', '/groups/group/%00'],
      ['GET', '/users/user/%C3%A9t%C3%A9'],
      ['GET', `/users/user/${user.id}/apikey/not-a-key`],
      ['DELETE', `/users/user/${user.id}/application/x~y`],
      ['DELETE', `/users/user/${user.id}/group/x'y`],
      ['POST', '/users/user/x*y/apikey'],
    ];
    await changesNothing(async () => {
      for (const [method, path] of paths) {
        const res = await api.request(method, path, method === 'PUT' || method === 'POST' ? { body: { name: 'x' } } : {});
        fails(res, 400, 'invalid_id');
      }
    });
  });

  test('a malformed search term is a 400', async () => {
    fails(await api.get('/users/search/%ED%A0%80'), 400); // a UTF-8-encoded lone surrogate
    fails(await api.get('/users/search/%E0%A4%A'), 400); // a cut percent escape
    fails(await api.get(`/users/search/${'q'.repeat(300)}`), 400);
  });
});

describe('404', () => {
  test('an unknown route is a 404 route_not_found', async () => {
    for (const path of ['/nope', '/applications/application/x/y/z', `/users/user/${user.id}/unknown`, '/v2/applications', '/']) {
      fails(await api.get(path), 404, 'route_not_found');
    }
    fails(await api.post('/users/user/x/y/z', {}), 404, 'route_not_found');
  });

  test('a query string does not change the route', async () => {
    ok(await api.get('/applications?limit=1&x=%20'));
    assert.equal(okKey<ApplicationJson>(await api.get(`/applications/application/${app.id}?fields=all`), 'application').id, app.id);
  });

  test('an unknown id is a 404 not_found', async () => {
    fails(await api.get(`/applications/application/${unknownId}`), 404, 'not_found');
    fails(await api.get(`/groups/group/${unknownId}`), 404, 'not_found');
    fails(await api.get(`/users/user/${unknownId}`), 404, 'not_found');
  });
});

describe('405', () => {
  test('a known route with another method is a 405 with an Allow header', async () => {
    const cases: [string, string, string[]][] = [
      ['DELETE', '/applications', ['GET']],
      ['POST', '/applications', ['GET']],
      ['GET', '/applications/application', ['POST']],
      ['PUT', '/authenticate', ['POST']],
      ['GET', '/authenticate', ['POST']],
      ['POST', `/users/user/${user.id}`, ['GET', 'PUT', 'DELETE']],
      ['PUT', '/groups', ['GET']],
      ['POST', '/health', ['GET']],
    ];
    for (const [method, path, allowed] of cases) {
      const res = await api.request(method, path, method === 'GET' || method === 'DELETE' ? {} : { body: {} });
      fails(res, 405, 'method_not_allowed');
      const allow = (res.headers.get('allow') ?? '').split(',').map((m) => m.trim()).filter((m) => m !== '');
      assert.deepEqual(allow.sort(), [...allowed].sort(), `Allow of ${method} ${path}`);
    }
  });
});

describe('413', () => {
  const auth = basicAuth(adminEmail, adminPassword);

  test('a declared body over 1 MiB is refused before it is read, and creates nothing', async () => {
    await changesNothing(async () => {
      const head = [
        'POST /applications/application HTTP/1.1', 'Host: 127.0.0.1', `Authorization: ${auth}`,
        'Content-Type: application/json', `Content-Length: ${1024 * 1024 + 1}`,
      ].join('\r\n');
      const res = await rawRequest(server.port, head);
      assert.equal(res.status, 413, res.body);
      const body = JSON.parse(res.body) as { service: { error: { code: string; status: number } } };
      assert.equal(body.service.error.code, 'payload_too_large');
      assert.equal(body.service.error.status, 413);
    });
  });

  test('a body that turns out over 1 MiB while streaming is refused, and creates nothing', async () => {
    await changesNothing(async () => {
      const json = Buffer.from(JSON.stringify({ name: 'too-big', custom_data: { blob: 'x'.repeat(1024 * 1024 + 100) } }));
      const chunks: Buffer[] = [];
      for (let i = 0; i < json.length; i += 64 * 1024) {
        const part = json.subarray(i, i + 64 * 1024);
        chunks.push(Buffer.concat([Buffer.from(`${part.length.toString(16)}\r\n`), part, Buffer.from('\r\n')]));
      }
      chunks.push(Buffer.from('0\r\n\r\n'));
      const head = [
        'POST /applications/application HTTP/1.1', 'Host: 127.0.0.1', `Authorization: ${auth}`,
        'Content-Type: application/json', 'Transfer-Encoding: chunked',
      ].join('\r\n');
      const res = await rawRequest(server.port, head, chunks);
      assert.equal(res.status, 413, res.body);
    });
  });

  test('a body of just under 1 MiB is read (and judged on its fields)', async () => {
    const json = JSON.stringify({ name: 'near-limit', description: 'ok', padding: 'p'.repeat(1024 * 1024 - 200) });
    assert.ok(Buffer.byteLength(json) < 1024 * 1024);
    const made = okKey<ApplicationJson>(await sendJsonText('POST', '/applications/application', json), 'application');
    assert.equal(made.name, 'near-limit');
  });
});

describe('415', () => {
  test('a body with a non-JSON Content-Type is refused and creates nothing', async () => {
    await changesNothing(async () => {
      const body = JSON.stringify({ name: 'typed-wrong' });
      for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'text/html; charset=utf-8', 'application/xml']) {
        fails(await api.request('POST', '/applications/application', { raw: body, headers: { 'Content-Type': type } }), 415, 'unsupported_media_type');
      }
      fails(await api.request('PUT', `/applications/application/${app.id}`, { raw: JSON.stringify({ name: 'renamed' }), headers: { 'Content-Type': 'text/plain' } }), 415, 'unsupported_media_type');
    });
  });

  test('application/json with a charset parameter is JSON', async () => {
    const res = await api.request('POST', '/applications/application', {
      raw: JSON.stringify({ name: 'charset-ok' }), headers: { 'Content-Type': 'application/json; charset=utf-8' },
    });
    assert.equal(okKey<ApplicationJson>(res, 'application').name, 'charset-ok');
  });
});

describe('robustness', () => {
  test('after all of the above the server still runs and answers', async () => {
    assert.ok(server.running, 'the server process is alive');
    assert.deepEqual(ok(await api.get('/health', { credentials: null })), { status: 'ok' });
    ok(await api.get('/applications'));
    assert.ok(!/"level":(50|60)/.test(server.output()), 'no error or fatal line was logged');
  });
});
