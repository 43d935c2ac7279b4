// HTTP: POST /authenticate (who passes, and that every failure looks alike) and the caller rules of Basic credentials.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  authenticate, baseApplicationId, createApikey, createApplication, createUser, getUser, unknownId,
} from './helpers/http-fixtures.js';
import {
  authenticatedView, fails, failsOnField, ok, okKey, withoutElapsed, type ApplicationJson, type UserAuthenticatedJson,
  type UserFullJson,
} from './helpers/http-shapes.js';
import {
  adminEmail, adminPassword, basicAuth, startServer, type Api, type HttpResult, type ServerProcess,
} from './helpers/server.js';

let server: ServerProcess;
let api: Api;
let baseApp: string;
let app: ApplicationJson;
/** Every plaintext secret sent by this file, right or wrong: none may show in a response or in the server's output. */
const secretsSent = new Set<string>([adminPassword]);

before(async () => {
  server = await startServer();
  api = server.api();
  baseApp = await baseApplicationId(api);
  app = await createApplication(api);
});

after(async () => {
  await server?.dispose();
});

/** A User with a password of its own, remembered for the secrets check. */
async function userWithPassword(applications: string[], password: string): Promise<UserFullJson> {
  secretsSent.add(password);
  return createUser(api, applications, { password });
}

async function authenticateRaw(body: unknown): Promise<HttpResult> {
  return api.post('/authenticate', body);
}

/** The same text with its last character changed. */
function flipLast(s: string): string {
  return `${s.slice(0, -1)}${s.endsWith('A') ? 'B' : 'A'}`;
}

function credentialBody(application: string, type: string, username: string, password: string): unknown {
  secretsSent.add(password);
  return { type, application, credential: { username, password } };
}

describe('POST /authenticate with a password', () => {
  test('succeeds for an associated Application and carries the User, its memberships by id and name', async () => {
    const user = await userWithPassword([app.id], 'pw-success-1');
    const res = await authenticateRaw(credentialBody(app.id, 'username', user.email, 'pw-success-1'));
    const result = ok<{ authenticated: boolean; user: UserAuthenticatedJson }>(res);
    assert.deepEqual(Object.keys(result).sort(), ['authenticated', 'user']);
    assert.equal(result.authenticated, true);
    assert.deepEqual(result.user, authenticatedView(await getUser(api, user.id)));
  });

  test('the username matches the email case-insensitively', async () => {
    const user = await userWithPassword([app.id], 'pw-case-2');
    assert.equal((await authenticate(api, app.id, 'username', user.email.toUpperCase(), 'pw-case-2')).authenticated, true);
  });

  test('UNVERIFIED and ENABLED Users pass', async () => {
    const user = await userWithPassword([app.id], 'pw-states-3');
    assert.equal(user.status, 'UNVERIFIED');
    assert.equal((await authenticate(api, app.id, 'username', user.email, 'pw-states-3')).authenticated, true);
    ok(await api.put(`/users/user/${user.id}`, { status: 'ENABLED' }));
    assert.equal((await authenticate(api, app.id, 'username', user.email, 'pw-states-3')).authenticated, true);
  });

  test('accepts ip_address', async () => {
    const user = await userWithPassword([app.id], 'pw-ip-4');
    const res = await authenticateRaw({ ...(credentialBody(app.id, 'username', user.email, 'pw-ip-4') as object), ip_address: '203.0.113.9' });
    assert.equal(ok<{ authenticated: boolean }>(res).authenticated, true);
  });
});

describe('POST /authenticate failures', () => {
  test('every failure answers 200 authenticated:false with the very same body', async () => {
    const user = await userWithPassword([app.id], 'pw-fail-5');
    const outsider = await userWithPassword([baseApp], 'pw-fail-6');
    const disabledUser = await userWithPassword([app.id], 'pw-fail-7');
    ok(await api.put(`/users/user/${disabledUser.id}`, { status: 'DISABLED' }));
    const disabledApp = await createApplication(api);
    const inDisabledApp = await userWithPassword([disabledApp.id], 'pw-fail-8');
    ok(await api.put(`/applications/application/${disabledApp.id}`, { status: 'DISABLED' }));
    const key = await createApikey(api, user.id);
    const disabledKey = await createApikey(api, user.id, { status: 'DISABLED' });
    const outsiderKey = await createApikey(api, outsider.id);
    const disabledUserKey = await createApikey(api, disabledUser.id);
    for (const k of [key, disabledKey, outsiderKey, disabledUserKey]) secretsSent.add(k.secret);

    const cases: [string, unknown][] = [
      ['wrong password', credentialBody(app.id, 'username', user.email, 'pw-fail-5-wrong')],
      ['empty password', credentialBody(app.id, 'username', user.email, '')],
      ['unknown user', credentialBody(app.id, 'username', 'nobody@example.com', 'pw-fail-5')],
      ['not associated with the Application', credentialBody(app.id, 'username', outsider.email, 'pw-fail-6')],
      ['DISABLED user', credentialBody(app.id, 'username', disabledUser.email, 'pw-fail-7')],
      ['DISABLED application', credentialBody(disabledApp.id, 'username', inDisabledApp.email, 'pw-fail-8')],
      ['unknown application id', credentialBody(unknownId, 'username', user.email, 'pw-fail-5')],
      ['malformed application id', credentialBody('no such app!', 'username', user.email, 'pw-fail-5')],
      ['apikey with a wrong secret', credentialBody(app.id, 'apikey', key.id, flipLast(key.secret))],
      ['apikey secret sent as a password', credentialBody(app.id, 'username', user.email, key.secret)],
      ['password sent for an apikey', credentialBody(app.id, 'apikey', key.id, 'pw-fail-5')],
      ['DISABLED apikey', credentialBody(app.id, 'apikey', disabledKey.id, disabledKey.secret)],
      ['unknown apikey', credentialBody(app.id, 'apikey', 'ZZZZZZZZZZZZZZZZZZZZZZZZZ', key.secret)],
      ['apikey of a user not associated', credentialBody(app.id, 'apikey', outsiderKey.id, outsiderKey.secret)],
      ['apikey of a DISABLED user', credentialBody(app.id, 'apikey', disabledUserKey.id, disabledUserKey.secret)],
      ['apikey against a DISABLED application', credentialBody(disabledApp.id, 'apikey', key.id, key.secret)],
    ];
    let reference: string | undefined;
    for (const [why, body] of cases) {
      const res = await authenticateRaw(body);
      assert.deepEqual(ok(res), { authenticated: false }, why);
      const text = withoutElapsed(res);
      reference ??= text;
      assert.equal(text, reference, `${why}: the body is identical to every other failure's`);
    }
    // The same credentials succeed where they should, so the failures above are for the stated reason.
    assert.equal((await authenticate(api, app.id, 'username', user.email, 'pw-fail-5')).authenticated, true);
    assert.equal((await authenticate(api, app.id, 'apikey', key.id, key.secret)).authenticated, true);
    assert.equal((await authenticate(api, baseApp, 'username', outsider.email, 'pw-fail-6')).authenticated, true);
  });

  test('a DISABLED Application fails every authentication until it is ENABLED again', async () => {
    const other = await createApplication(api);
    const user = await userWithPassword([other.id], 'pw-app-9');
    const key = await createApikey(api, user.id);
    secretsSent.add(key.secret);
    assert.equal((await authenticate(api, other.id, 'username', user.email, 'pw-app-9')).authenticated, true);
    ok(await api.put(`/applications/application/${other.id}`, { status: 'DISABLED' }));
    assert.equal((await authenticate(api, other.id, 'username', user.email, 'pw-app-9')).authenticated, false);
    assert.equal((await authenticate(api, other.id, 'apikey', key.id, key.secret)).authenticated, false);
    ok(await api.put(`/applications/application/${other.id}`, { status: 'ENABLED' }));
    assert.equal((await authenticate(api, other.id, 'username', user.email, 'pw-app-9')).authenticated, true);
    assert.equal((await authenticate(api, other.id, 'apikey', key.id, key.secret)).authenticated, true);
  });
});

describe('POST /authenticate with an API Key', () => {
  test('authenticates its User; DISABLED it fails; ENABLED again it passes', async () => {
    const user = await userWithPassword([app.id], 'pw-key-10');
    const key = await createApikey(api, user.id);
    secretsSent.add(key.secret);
    const result = await authenticate(api, app.id, 'apikey', key.id, key.secret);
    assert.equal(result.authenticated, true);
    assert.deepEqual(result.user, authenticatedView(await getUser(api, user.id)));
    ok(await api.put(`/users/user/${user.id}/apikey/${key.id}`, { status: 'DISABLED' }));
    assert.equal((await authenticate(api, app.id, 'apikey', key.id, key.secret)).authenticated, false);
    ok(await api.put(`/users/user/${user.id}/apikey/${key.id}`, { status: 'ENABLED' }));
    assert.equal((await authenticate(api, app.id, 'apikey', key.id, key.secret)).authenticated, true);
  });
});

describe('changes take effect at once (no stale verification is trusted)', () => {
  test('after a password change the old password fails and the new one passes', async () => {
    const user = await userWithPassword([app.id], 'pw-old-11');
    assert.equal((await authenticate(api, app.id, 'username', user.email, 'pw-old-11')).authenticated, true);
    secretsSent.add('pw-new-11');
    ok(await api.put(`/users/user/${user.id}`, { password: 'pw-new-11' }));
    assert.equal((await authenticate(api, app.id, 'username', user.email, 'pw-old-11')).authenticated, false);
    assert.equal((await authenticate(api, app.id, 'username', user.email, 'pw-new-11')).authenticated, true);
  });

  test('a User DISABLED right after a success fails at once, and passes again once ENABLED', async () => {
    const user = await userWithPassword([app.id], 'pw-dis-12');
    assert.equal((await authenticate(api, app.id, 'username', user.email, 'pw-dis-12')).authenticated, true);
    ok(await api.put(`/users/user/${user.id}`, { status: 'DISABLED' }));
    assert.equal((await authenticate(api, app.id, 'username', user.email, 'pw-dis-12')).authenticated, false);
    ok(await api.put(`/users/user/${user.id}`, { status: 'ENABLED' }));
    assert.equal((await authenticate(api, app.id, 'username', user.email, 'pw-dis-12')).authenticated, true);
  });

  test('a User removed from the Application fails at once', async () => {
    const user = await userWithPassword([app.id, baseApp], 'pw-rm-13');
    assert.equal((await authenticate(api, app.id, 'username', user.email, 'pw-rm-13')).authenticated, true);
    ok(await api.delete(`/users/user/${user.id}/application/${app.id}`));
    assert.equal((await authenticate(api, app.id, 'username', user.email, 'pw-rm-13')).authenticated, false);
    assert.equal((await authenticate(api, baseApp, 'username', user.email, 'pw-rm-13')).authenticated, true);
  });

  test('a changed email authenticates, the old one no longer does', async () => {
    const user = await userWithPassword([app.id], 'pw-mail-14');
    assert.equal((await authenticate(api, app.id, 'username', user.email, 'pw-mail-14')).authenticated, true);
    const email = `renamed.${user.email}`;
    ok(await api.put(`/users/user/${user.id}`, { email }));
    assert.equal((await authenticate(api, app.id, 'username', user.email, 'pw-mail-14')).authenticated, false);
    assert.equal((await authenticate(api, app.id, 'username', email, 'pw-mail-14')).authenticated, true);
  });
});

describe('POST /authenticate with a malformed body', () => {
  test('a missing or unknown type, a missing application, credential or credential field is a 400 naming it', async () => {
    const credential = { username: adminEmail, password: adminPassword };
    failsOnField(await authenticateRaw({ application: baseApp, credential }), 'type');
    failsOnField(await authenticateRaw({ type: 'token', application: baseApp, credential }), 'type');
    failsOnField(await authenticateRaw({ type: 'USERNAME', application: baseApp, credential }), 'type');
    failsOnField(await authenticateRaw({ type: 'username', credential }), 'application');
    failsOnField(await authenticateRaw({ type: 'username', application: baseApp }), 'credential');
    failsOnField(await authenticateRaw({ type: 'username', application: baseApp, credential: 'admin:pw' }), 'credential');
    // A nested field is named by its path, missing or wrong alike.
    failsOnField(await authenticateRaw({ type: 'username', application: baseApp, credential: { username: adminEmail } }), 'credential.password');
    failsOnField(await authenticateRaw({ type: 'username', application: baseApp, credential: { password: adminPassword } }), 'credential.username');
    failsOnField(await authenticateRaw({ type: 'username', application: baseApp, credential: { username: adminEmail, password: 7 } }), 'password');
  });

  test('a body that is not a JSON object is a 400', async () => {
    fails(await api.post('/authenticate', undefined, { raw: '{"type":', headers: { 'Content-Type': 'application/json' } }), 400, 'invalid_json');
    fails(await authenticateRaw([1, 2]), 400, 'invalid_field');
    fails(await api.post('/authenticate'), 400);
  });
});

// ---- caller rules (HTTP Basic) ----

function assertUnauthorized(res: HttpResult, why: string): void {
  fails(res, 401, 'unauthorized');
  assert.match(res.headers.get('www-authenticate') ?? '', /^Basic realm="[^"]*"/, `${why}: WWW-Authenticate names a Basic realm`);
}

describe('callers', () => {
  test('without credentials every endpoint but /health is a 401 with a Basic challenge', async () => {
    const anonymous = api.as(null);
    const calls: [string, string][] = [
      ['GET', '/applications'], ['POST', '/applications/application'], ['GET', `/applications/application/${app.id}`],
      ['GET', '/groups'], ['GET', '/users'], ['GET', '/users/search/admin'], ['POST', '/users/user'],
      ['GET', `/users/user/${unknownId}`], ['POST', '/authenticate'], ['DELETE', `/applications/application/${app.id}`],
    ];
    for (const [method, path] of calls) assertUnauthorized(await anonymous.request(method, path), `${method} ${path}`);
    ok(await anonymous.get('/health'));
  });

  test('a wrong password, an unknown user or a malformed Authorization header is a 401', async () => {
    secretsSent.add('not-the-admin-password');
    assertUnauthorized(await api.get('/applications', { credentials: { username: adminEmail, password: 'not-the-admin-password' } }), 'wrong password');
    assertUnauthorized(await api.get('/applications', { credentials: { username: 'ghost@example.com', password: adminPassword } }), 'unknown user');
    assertUnauthorized(await api.get('/applications', { credentials: { username: adminEmail, password: '' } }), 'empty password');
    const malformed = [
      'Bearer abc', 'Basic', 'Basic !!!notbase64', `Basic ${Buffer.from('no-colon-here').toString('base64')}`,
      `Digest ${Buffer.from(`${adminEmail}:${adminPassword}`).toString('base64')}`,
    ];
    for (const header of malformed) {
      assertUnauthorized(await api.get('/applications', { credentials: null, headers: { Authorization: header } }), header);
    }
  });

  test('a refused caller changes nothing', async () => {
    const name = `never-created-${process.pid}`;
    const res = await api.post('/applications/application', { name }, { credentials: { username: adminEmail, password: 'wrong-password!' } });
    assertUnauthorized(res, 'wrong password on POST');
    const apps = okKey<ApplicationJson[]>(await api.get('/applications'), 'applications');
    assert.ok(!apps.some((a) => a.name === name));
  });

  test('a User outside the base Application is refused even with the right password', async () => {
    const user = await userWithPassword([app.id], 'pw-caller-15');
    assertUnauthorized(await api.get('/applications', { credentials: { username: user.email, password: 'pw-caller-15' } }), 'not in the base Application');
    // The same credentials are right: they authenticate against the User's own Application.
    assert.equal((await authenticate(api, app.id, 'username', user.email, 'pw-caller-15')).authenticated, true);
  });

  test('any not-DISABLED User of the base Application may call; DISABLED it may not; removed from it, it may not', async () => {
    const user = await userWithPassword([baseApp], 'pw-caller-16');
    const caller = { username: user.email, password: 'pw-caller-16' };
    assert.equal(user.status, 'UNVERIFIED');
    ok(await api.get('/applications', { credentials: caller }));
    ok(await api.put(`/users/user/${user.id}`, { status: 'DISABLED' }));
    assertUnauthorized(await api.get('/applications', { credentials: caller }), 'DISABLED caller');
    ok(await api.put(`/users/user/${user.id}`, { status: 'ENABLED', applications: [app.id] }));
    ok(await api.get('/applications', { credentials: caller }));
    ok(await api.delete(`/users/user/${user.id}/application/${baseApp}`));
    assertUnauthorized(await api.get('/applications', { credentials: caller }), 'caller removed from the base Application');
  });

  test('an API Key id and secret work as Basic credentials; DISABLED, wrong or of a DISABLED User they do not', async () => {
    const user = await userWithPassword([baseApp], 'pw-caller-17');
    const key = await createApikey(api, user.id);
    secretsSent.add(key.secret);
    const asKey = { username: key.id, password: key.secret };
    const apps = okKey<ApplicationJson[]>(await api.get('/applications', { credentials: asKey }), 'applications');
    assert.ok(apps.some((a) => a.id === baseApp));
    // A write by key, too.
    ok(await api.post('/applications/application', { name: 'made-by-key' }, { credentials: asKey }));

    const wrong = flipLast(key.secret);
    assertUnauthorized(await api.get('/applications', { credentials: { username: key.id, password: wrong } }), 'wrong key secret');
    assertUnauthorized(await api.get('/applications', { credentials: { username: key.id.toLowerCase(), password: key.secret } }), 'key id in the wrong case');

    ok(await api.put(`/users/user/${user.id}/apikey/${key.id}`, { status: 'DISABLED' }));
    assertUnauthorized(await api.get('/applications', { credentials: asKey }), 'DISABLED key');
    ok(await api.put(`/users/user/${user.id}/apikey/${key.id}`, { status: 'ENABLED' }));
    ok(await api.get('/applications', { credentials: asKey }));
    ok(await api.put(`/users/user/${user.id}`, { status: 'DISABLED' }));
    assertUnauthorized(await api.get('/applications', { credentials: asKey }), 'key of a DISABLED User');

    const outsider = await userWithPassword([app.id], 'pw-caller-18');
    const outsiderKey = await createApikey(api, outsider.id);
    secretsSent.add(outsiderKey.secret);
    assertUnauthorized(await api.get('/applications', { credentials: { username: outsiderKey.id, password: outsiderKey.secret } }), 'key of a User outside the base Application');
  });

  test('Basic credentials split on the first colon only and are UTF-8', async () => {
    const password = 'pä:ss wörd:✓';
    const user = await userWithPassword([baseApp], password);
    ok(await api.get('/applications', { credentials: { username: user.email, password } }));
    // The header built by hand, to be sure of the bytes sent.
    ok(await api.get('/applications', { credentials: null, headers: { Authorization: basicAuth(user.email, password) } }));
    assertUnauthorized(await api.get('/applications', { credentials: { username: user.email, password: 'pä:ss wörd' } }), 'a prefix of the password');
    // Latin-1 bytes of the same text are not its UTF-8 form.
    const latin1 = `Basic ${Buffer.from(`${user.email}:pä:ss`, 'latin1').toString('base64')}`;
    assertUnauthorized(await api.get('/applications', { credentials: null, headers: { Authorization: latin1 } }), 'latin-1 bytes');
  });
});

describe('secrets', () => {
  test('no response and no line of the server\'s output carries a password or key secret that was sent', () => {
    const transcript = api.transcript.join('\n');
    const output = server.output();
    for (const secret of secretsSent) {
      if (secret.length < 7) continue; // '' and the like match everywhere
      // A key secret is sent back by design by the create and update responses, so only passwords are checked there.
      if (!/^[A-Za-z0-9_-]{43}$/.test(secret)) {
        assert.ok(!transcript.includes(secret), `a response carried ${JSON.stringify(secret.slice(0, 10))}...`);
      }
      assert.ok(!output.includes(secret), `the server's output carried ${JSON.stringify(secret.slice(0, 10))}...`);
    }
    // The Authorization header never reaches the log.
    assert.ok(!output.includes(basicAuth(adminEmail, adminPassword).slice(6)), 'the server\'s output carried a Basic credential');
  });
});
