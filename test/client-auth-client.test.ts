// The typed client itself: the package export, AuthError from error envelopes, transport failures, API Key credentials, every remaining call.

import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { AuthClient, AuthError } from '../src/client/index.js';
import { baseApplicationId, createApplication, createGroup, createUser, defaultUserPassword, unknownId } from './helpers/http-fixtures.js';
import { startServer, type Api, type ServerProcess } from './helpers/server.js';

let server: ServerProcess;
let api: Api;
let client: AuthClient;

before(async () => {
  server = await startServer();
  api = server.api();
  client = api.client;
});

after(async () => {
  await server?.dispose();
});

async function caught(call: Promise<unknown>): Promise<AuthError> {
  try {
    await call;
  } catch (err) {
    assert.ok(err instanceof AuthError, `expected an AuthError, got ${String(err)}`);
    return err;
  }
  assert.fail('expected the call to throw');
}

describe('the package', () => {
  test('exports AuthClient and AuthError under its own name', async () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { name: string };
    const mod = (await import(pkg.name)) as { AuthClient: unknown; AuthError: unknown };
    assert.equal(mod.AuthClient, AuthClient);
    assert.equal(mod.AuthError, AuthError);
  });

  test('the client loads nothing of the server at run time (only node built-ins, jose and its own files)', () => {
    const dir = new URL('../src/client/', import.meta.url);
    for (const file of readdirSync(dir).filter((f) => f.endsWith('.js'))) {
      const text = readFileSync(new URL(file, dir), 'utf8');
      for (const m of text.matchAll(/^import .* from '([^']+)';$|import\('([^']+)'\)/gm)) {
        const spec = m[1] ?? m[2]!;
        assert.ok(spec.startsWith('./') || spec.startsWith('node:') || spec === 'jose', `${file} imports ${spec}`);
      }
    }
  });
});

describe('AuthError', () => {
  test('carries the status, code and message of an error envelope, and the result of a refused delete', async () => {
    const missing = await caught(client.applications.get(unknownId));
    assert.equal(missing.status, 404);
    assert.equal(missing.code, 'not_found');
    assert.match(missing.message, new RegExp(unknownId));
    assert.equal(missing.name, 'AuthError');
    assert.equal(missing.result, undefined);

    const app = await createApplication(api);
    const refused = await caught(client.applications.delete(app.id));
    assert.equal(refused.status, 409);
    assert.equal(refused.code, 'delete_refused');
    assert.deepEqual(refused.result, { deleted: false });

    const invalid = await caught(client.users.create({ email: 'not-an-email', password: 'long-enough', applications: [app.id] }));
    assert.equal(invalid.code, 'invalid_field');
    assert.match(invalid.message, /email/);

    const anonymous = await caught(client.as(null).applications.list());
    assert.equal(anonymous.status, 401);
    assert.equal(anonymous.code, 'unauthorized');
  });

  test('a server that is not there: status 0, code unreachable', async () => {
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const { port } = probe.address() as AddressInfo;
    await new Promise<void>((r) => probe.close(() => r()));
    const err = await caught(new AuthClient({ baseUrl: `http://127.0.0.1:${port}`, credentials: null }).health());
    assert.equal(err.status, 0);
    assert.equal(err.code, 'unreachable');
    assert.match(err.message, new RegExp(`127.0.0.1:${port}`));
  });

  test('something that is not the service (a proxy\'s error page): invalid_response', async () => {
    const proxy: Server = createServer((_req, res) => { res.writeHead(502, { 'Content-Type': 'text/html' }); res.end('<h1>Bad Gateway</h1>'); });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    try {
      const { port } = proxy.address() as AddressInfo;
      const err = await caught(new AuthClient({ baseUrl: `http://127.0.0.1:${port}/`, credentials: null }).applications.list());
      assert.equal(err.status, 502);
      assert.equal(err.code, 'invalid_response');
    } finally {
      await new Promise<void>((r) => proxy.close(() => r()));
    }
  });
});

describe('calls', () => {
  test('an API Key works as the client\'s credentials; disable() turns it off for the next call', async () => {
    const base = await baseApplicationId(api);
    const operator = await createUser(api, [base]);
    const key = await client.apikeys.create(operator.id, { name: 'ci' });
    const asKey = client.as({ username: key.id, password: key.secret });
    assert.ok((await asKey.applications.list()).length >= 1);
    const disabled = await client.apikeys.disable(operator.id, key.id);
    assert.equal(disabled.status, 'DISABLED');
    assert.equal(disabled.secret, key.secret, 'the update answer carries the secret');
    assert.equal((await caught(asKey.applications.list())).status, 401);
    assert.deepEqual(Object.keys(await client.apikeys.get(operator.id, key.id)).sort(), ['description', 'href', 'id', 'name', 'status']);
    assert.equal(await client.apikeys.delete(operator.id, key.id), true);
  });

  test('memberships, deletes and search terms that need encoding', async () => {
    const app = await createApplication(api);
    const group = await createGroup(api, app.id);
    const other = await createApplication(api);
    const user = await client.users.create({
      email: 'client.search+tag@example.com', password: defaultUserPassword, name: 'Zoë / Ünïcode', applications: [app.id, other.id], groups: [group.id],
    });
    assert.deepEqual((await client.users.search('zoë / ü')()).map((u) => u.id), [user.id]);
    assert.deepEqual((await client.users.search('+tag@')()).map((u) => u.id), [user.id]);
    assert.equal(await client.users.removeGroup(user.id, group.id), true);
    assert.equal(await client.users.removeApplication(user.id, other.id), true);
    const after = await client.users.get(user.id);
    assert.deepEqual(after.applications.map((a) => a.id), [app.id]);
    assert.deepEqual(after.groups, []);
    await client.groups.update(group.id, { status: 'DISABLED' });
    assert.equal(await client.groups.delete(group.id), true);
    await client.users.update(user.id, { status: 'DISABLED' });
    assert.equal(await client.users.delete(user.id), true);
    await client.applications.update(other.id, { status: 'DISABLED' });
    assert.equal(await client.applications.delete(other.id), true);
    assert.deepEqual(await client.health(), { status: 'ok' });
  });
});
