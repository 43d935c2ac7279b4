// The OpenAPI document agrees with the router, with docs/openapi.json, with what the server serves, and with real answers.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { openApiDocument, openApiJson } from '../src/http/openapi.js';
import { roleNames } from '../src/domain/roles.js';
import { routeTable } from '../src/http/routes/index.js';
import { baseApplicationId, createApikey, createApplication, createGroup, createUser, unknownId } from './helpers/http-fixtures.js';
import { startServer, type Api, type HttpResult, type ServerProcess } from './helpers/server.js';

type Json = Record<string, unknown>;
const doc = openApiDocument(routeTable) as { paths: Record<string, Record<string, Json>>; components: { schemas: Record<string, Json>; responses: Record<string, Json> } };

/** `/users/user/:userid` -> `/users/user/{userid}`, as OpenAPI writes paths. */
const templated = (pattern: string): string => pattern.replace(/:([A-Za-z]+)/g, '{$1}');

function documentedRoutes(): string[] {
  return Object.entries(doc.paths).flatMap(([path, item]) => Object.keys(item).map((m) => `${m.toUpperCase()} ${path}`)).sort();
}

describe('the document and the router', () => {
  test('name exactly the same routes', () => {
    const served = routeTable.map((r) => `${r.method} ${templated(r.pattern)}`).sort();
    assert.equal(new Set(served).size, served.length, 'no route is registered twice');
    assert.deepEqual(documentedRoutes(), served, 'every route is documented, and only those');
  });

  test('every route declares who may call it and how it is audited, and the document says so per operation', () => {
    const capabilities = new Set(['public', 'admin', 'manage', 'read', 'authenticate']);
    for (const r of routeTable) {
      const name = `${r.method} ${r.pattern}`;
      assert.ok(capabilities.has(r.access), `${name}: declares its access`);
      assert.ok(r.operationId.length > 0 && r.summary.length > 0, `${name}: operationId and summary`);
      if (r.method === 'GET') assert.equal(r.audit, 'none', `${name}: a read writes no audit line`);
      else assert.match(r.audit, /^(self|[a-z]+\.[a-z_]+)$/, `${name}: a change names its audit action`);
      if (r.access === 'public') assert.equal(r.method, 'GET', `${name}: only reads are public`);
      const op = doc.paths[templated(r.pattern)]![r.method.toLowerCase()]!;
      const roles = op['x-roles'] as string[];
      if (r.access === 'public') assert.deepEqual(roles, []);
      else {
        assert.ok(roles.includes('admin') && roles.every((role) => (roleNames as readonly string[]).includes(role)), `${name}: x-roles`);
        assert.match(op['description'] as string, new RegExp(`Roles: ${roles.join(', ')}\\.`));
        assert.ok((op['responses'] as Json)['403'] !== undefined, `${name}: documents 403`);
      }
    }
    const rolesOf = (method: string, path: string): unknown => doc.paths[path]![method]!['x-roles'];
    assert.deepEqual(rolesOf('post', '/authenticate'), ['admin', 'authenticator']);
    assert.deepEqual(rolesOf('get', '/users'), ['admin', 'manager', 'auditor']);
    assert.deepEqual(rolesOf('get', '/metrics'), ['admin', 'manager', 'auditor']);
    assert.deepEqual(rolesOf('delete', '/users/user/{userid}'), ['admin', 'manager']);
    assert.deepEqual(rolesOf('post', '/admin/snapshot'), ['admin']);
  });

  test('docs/openapi.json is what src/http/openapi.ts generates', () => {
    const checkedIn = readFileSync(new URL('../../docs/openapi.json', import.meta.url), 'utf8');
    assert.ok(checkedIn === openApiJson(routeTable), 'docs/openapi.json is out of date: run `npm run openapi`');
  });

  test('is OpenAPI 3.1 whose references all resolve, with unique operation ids and declared path parameters', () => {
    assert.equal((doc as unknown as Json)['openapi'], '3.1.0');
    const text = JSON.stringify(doc);
    for (const m of text.matchAll(/"\$ref":"#\/components\/(schemas|responses)\/([A-Za-z]+)"/g)) {
      assert.ok(doc.components[m[1] as 'schemas' | 'responses'][m[2]!] !== undefined, `${m[0]} resolves`);
    }
    const ids = Object.values(doc.paths).flatMap((item) => Object.values(item).map((op) => op['operationId']));
    assert.equal(new Set(ids).size, ids.length, 'operationIds are unique');
    for (const [path, item] of Object.entries(doc.paths)) {
      const names = [...path.matchAll(/\{([A-Za-z]+)\}/g)].map((m) => m[1]);
      for (const op of Object.values(item)) {
        const declared = ((op['parameters'] ?? []) as Json[]).filter((p) => p['in'] === 'path').map((p) => p['name']);
        assert.deepEqual(declared, names, `${path}: path parameters`);
      }
    }
  });
});

// ---- answers against their documented schemas ----

function resolve(schema: Json): Json {
  const r = schema['$ref'];
  if (typeof r !== 'string') return schema;
  return doc.components.schemas[r.split('/').pop()!]!;
}

function typeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

/** The subset of JSON Schema the document uses: $ref, type, properties, required, additionalProperties, items, enum, const. */
function conforms(value: unknown, raw: Json, where: string): void {
  const schema = resolve(raw);
  const types = schema['type'] === undefined ? [] : ([] as string[]).concat(schema['type'] as string | string[]);
  if (types.length > 0) {
    const t = typeOf(value);
    assert.ok(types.includes(t) || (t === 'integer' && types.includes('number')), `${where}: ${t} is not ${types.join('|')}`);
  }
  if (schema['enum'] !== undefined) assert.ok((schema['enum'] as unknown[]).includes(value), `${where}: ${String(value)} not in enum`);
  if (schema['const'] !== undefined) assert.equal(value, schema['const'], `${where}: const`);
  if (typeOf(value) === 'object' && schema['properties'] !== undefined) {
    const obj = value as Json;
    const props = schema['properties'] as Record<string, Json>;
    for (const k of (schema['required'] ?? []) as string[]) assert.ok(k in obj, `${where}: required "${k}" missing`);
    for (const [k, v] of Object.entries(obj)) {
      if (props[k] === undefined) {
        assert.notEqual(schema['additionalProperties'], false, `${where}: undocumented field "${k}"`);
        continue;
      }
      conforms(v, props[k]!, `${where}.${k}`);
    }
  }
  if (Array.isArray(value) && schema['items'] !== undefined) value.forEach((v, i) => conforms(v, schema['items'] as Json, `${where}[${i}]`));
}

/** The operation a concrete request path hits. */
function operationFor(method: string, path: string): Json {
  const bare = path.split('?')[0]!;
  for (const [template, item] of Object.entries(doc.paths)) {
    const pattern = new RegExp(`^${template.replace(/\{[A-Za-z]+\}/g, '[^/]+')}$`);
    if (pattern.test(bare) && item[method.toLowerCase()] !== undefined) return item[method.toLowerCase()]!;
  }
  assert.fail(`no documented operation for ${method} ${path}`);
}

function checkAnswer(method: string, path: string, res: HttpResult): void {
  const op = operationFor(method, path);
  const responses = op['responses'] as Record<string, Json>;
  if (res.status === 200) {
    const content = responses['200']!['content'] as Record<string, { schema: Json }>;
    const media = Object.keys(content)[0]!;
    assert.match(res.headers.get('content-type') ?? '', new RegExp(`^${media.split(';')[0]!.replace('/', '\\/')}`), `${method} ${path}: media type`);
    if (media === 'application/json') conforms(res.json, content[media]!.schema, `${method} ${path}`);
    return;
  }
  const documented = responses[String(res.status)] ?? responses['default'];
  assert.ok(documented !== undefined, `${method} ${path}: status ${res.status} documented`);
  conforms(res.json, doc.components.schemas['ErrorEnvelope']!, `${method} ${path} (${res.status})`);
}

describe('served document and real answers', () => {
  let server: ServerProcess;
  let api: Api;

  before(async () => {
    server = await startServer();
    api = server.api();
  });

  after(async () => {
    await server?.dispose();
  });

  test('GET /openapi.json answers the generated document without credentials, outside the envelope', async () => {
    const res = await api.get('/openapi.json', { credentials: null });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
    assert.ok(res.text === openApiJson(routeTable), 'served document equals the generated one');
    assert.deepEqual(await api.client.openapi(), JSON.parse(openApiJson(routeTable)));
  });

  test('answers of every kind match their documented schemas', async () => {
    const base = await baseApplicationId(api);
    const app = await createApplication(api, { custom_data: { tier: 'gold' } });
    const group = await createGroup(api, app.id);
    const org = await api.client.organizations.create({ name: 'Documented' });
    const user = await createUser(api, [app.id, base], { groups: [group.id], organization: org.id });
    const key = await createApikey(api, user.id);
    const calls: [string, string, unknown?][] = [
      ['GET', '/health'], ['GET', '/applications'], ['GET', '/applications?limit=1'], ['POST', '/applications/application', { name: 'doc' }],
      ['GET', `/applications/application/${app.id}`], ['PUT', `/applications/application/${app.id}`, { description: 'x' }],
      ['GET', `/applications/application/${app.id}/users`], ['GET', `/applications/application/${app.id}/groups?limit=1`],
      ['GET', '/groups'], ['GET', `/groups/group/${group.id}`], ['GET', `/groups/group/${group.id}/users`],
      ['GET', '/organizations'], ['GET', `/organizations/organization/${org.id}`], ['GET', `/organizations/organization/${org.id}/users?limit=5`],
      ['GET', '/users?limit=2'], ['GET', '/users/search/example'], ['GET', `/users/user/${user.id}`], ['PUT', `/users/user/${user.id}`, { name: 'n' }],
      ['GET', `/users/user/${user.id}/apikey/${key.id}`], ['PUT', `/users/user/${user.id}/apikey/${key.id}`, { name: 'k' }],
      ['POST', `/users/user/${user.id}/apikey`, { name: 'k2' }], ['DELETE', `/users/user/${user.id}/group/${group.id}`],
      ['POST', '/authenticate', { type: 'apikey', application: app.id, credential: { username: key.id, password: key.secret } }],
      ['POST', '/authenticate', { type: 'username', application: app.id, credential: { username: user.email, password: 'wrong-password' } }],
      ['POST', '/admin/snapshot'], ['GET', '/metrics'],
      // Refusals: the error envelope, with the refused delete's result.
      ['GET', `/users/user/${unknownId}`], ['DELETE', `/applications/application/${app.id}`], ['GET', '/users?limit=0'],
      ['POST', '/groups/group', { name: group.name, application: app.id }],
    ];
    for (const [method, path, body] of calls) checkAnswer(method, path, await api.request(method, path, { body }));
    checkAnswer('GET', '/applications', await api.get('/applications', { credentials: null }));
  });
});
