// HTTP: tokens that mean what they say (issue 42): HS256 only while the Application issues it, lifetimes within the ttl, the header as issued, the credential a token was obtained with, and current groups.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { decodeJwt, decodeProtectedHeader, SignJWT, type JWTPayload } from 'jose';
import { createApikey, createApplication, createGroup, createUser, defaultUserPassword, unique } from './helpers/http-fixtures.js';
import { ok, okKey, type ApplicationJson } from './helpers/http-shapes.js';
import { startServer, type Api, type ServerProcess } from './helpers/server.js';

type TokenApp = ApplicationJson & { tokens: { enabled: boolean; ttl: number; alg: string }; jwt_secret?: string };
interface TokenAnswer { authenticated: boolean; access_token?: string }
type Introspected = JWTPayload & { active: boolean };

let server: ServerProcess;
let api: Api;

before(async () => {
  server = await startServer();
  api = server.api();
});

after(async () => {
  await server?.dispose();
});

async function login(appId: string, email: string): Promise<string> {
  const answer = ok<TokenAnswer>(await api.post('/authenticate', { type: 'username', application: appId, credential: { username: email, password: defaultUserPassword } }));
  assert.equal(answer.authenticated, true);
  return answer.access_token!;
}

async function loginByKey(appId: string, key: { id: string; secret: string }): Promise<string> {
  const answer = ok<TokenAnswer>(await api.post('/authenticate', { type: 'apikey', application: appId, credential: { username: key.id, password: key.secret } }));
  assert.equal(answer.authenticated, true);
  return answer.access_token!;
}

async function introspect(token: string): Promise<Introspected> {
  return ok<Introspected>(await api.post('/tokens/introspect', { token }));
}

async function active(token: string): Promise<boolean> {
  return (await introspect(token)).active;
}

async function setTokens(appId: string, tokens: Record<string, unknown>): Promise<TokenApp> {
  return okKey<TokenApp>(await api.put(`/applications/application/${appId}`, { tokens }), 'application');
}

/** An HS256 Application (its secret) with a User of it, and a token the service issued that User. */
async function hsWorld(ttl = 900): Promise<{ app: TokenApp; secret: string; userId: string; email: string; token: string }> {
  const app = okKey<TokenApp>(await api.post('/applications/application', { name: unique('hs'), tokens: { enabled: true, alg: 'HS256', ttl } }), 'application');
  const user = await createUser(api, [app.id]);
  return { app, secret: app.jwt_secret!, userId: user.id, email: user.email, token: await login(app.id, user.email) };
}

/** Signs claims with an HS256 secret, as anyone holding it can; `header` adds to the header the service writes. */
function signHs(secret: string, claims: JWTPayload, header: Record<string, unknown> = {}): Promise<string> {
  return new SignJWT(claims).setProtectedHeader({ alg: 'HS256', typ: 'JWT', ...header }).sign(new TextEncoder().encode(secret));
}

describe('issue 42: HS256 only while the Application issues HS256 tokens', () => {
  test('a token signed with the jwt_secret of an Application switched to EdDSA is inactive; its EdDSA tokens are not', async () => {
    const { app, secret, email, token } = await hsWorld();
    const forged = await signHs(secret, { ...decodeJwt(token), name: 'Forged', groups: ['admins'] });
    assert.equal(await active(forged), true, 'while the Application issues HS256, its secret signs what introspection accepts');
    const switched = await setTokens(app.id, { alg: 'EdDSA' });
    assert.equal(switched.tokens.alg, 'EdDSA');
    assert.equal(await active(forged), false, 'a forged HS256 token for an EdDSA Application');
    assert.equal(await active(token), false, 'nor one the service signed with that secret before the switch');
    const eddsa = await login(app.id, email);
    assert.equal(decodeProtectedHeader(eddsa).alg, 'EdDSA');
    assert.equal(await active(eddsa), true);
    await setTokens(app.id, { alg: 'ES256' });
    assert.equal(await active(eddsa), true, 'a switch between the service\'s own algs cuts off nothing');
  });

  test('a token of an Application whose tokens are disabled is inactive, HS256 or EdDSA, and active again once re-enabled', async () => {
    const { app, secret, token } = await hsWorld();
    const forged = await signHs(secret, decodeJwt(token));
    await setTokens(app.id, { enabled: false });
    assert.equal(await active(token), false, 'HS256, issued by the service');
    assert.equal(await active(forged), false, 'HS256, signed by a holder of the secret');
    await setTokens(app.id, { enabled: true });
    assert.equal(await active(token), true, 're-enabled');

    const ed = await createApplication(api, { tokens: { enabled: true } });
    const user = await createUser(api, [ed.id]);
    const edToken = await login(ed.id, user.email);
    await setTokens(ed.id, { enabled: false });
    assert.equal(await active(edToken), false, 'EdDSA');
  });
});

describe('issue 42: lifetimes within the ttl', () => {
  test('exp - iat over the Application\'s ttl, or iat in the future, is inactive', async () => {
    const { secret, token } = await hsWorld(600);
    const claims = decodeJwt(token);
    const now = Math.floor(Date.now() / 1000);
    assert.equal(await active(await signHs(secret, { ...claims, iat: now, exp: now + 600 })), true, 'a lifetime of the ttl');
    assert.equal(await active(await signHs(secret, { ...claims, iat: now, exp: now + 601 })), false, 'a second over');
    assert.equal(await active(await signHs(secret, { ...claims, iat: now, exp: now + 365 * 86_400 })), false, 'a year');
    assert.equal(await active(await signHs(secret, { ...claims, iat: now + 3600, exp: now + 3600 + 600 })), false, 'issued an hour from now');
  });

  test('lowering the ttl makes longer-lived tokens inactive; raising it keeps them', async () => {
    const { app, token } = await hsWorld(600);
    await setTokens(app.id, { ttl: 1200 });
    assert.equal(await active(token), true);
    await setTokens(app.id, { ttl: 300 });
    assert.equal(await active(token), false);
  });
});

describe('issue 42: the header is the one the service writes', () => {
  test('a correctly signed token whose header carries jku, jwk, x5u, x5c, crit, cty or a kid on HS256 is inactive', async () => {
    const { secret, token } = await hsWorld();
    const claims = decodeJwt(token);
    assert.equal(await active(await signHs(secret, claims)), true, 'the plain header');
    const extras: Record<string, unknown>[] = [
      { jku: 'http://127.0.0.1:9/jwks.json' }, { jwk: { kty: 'oct', k: 'AAAA' } }, { x5u: 'http://127.0.0.1:9/cert.pem' },
      { x5c: ['AAAA'] }, { crit: ['b64'], b64: true }, { kid: 'some-key' }, { cty: 'JWT' },
    ];
    for (const extra of extras) assert.equal(await active(await signHs(secret, claims, extra)), false, JSON.stringify(extra));
    assert.equal(await active(await signHs(secret, claims, { typ: 'at+jwt' })), false, 'another typ');
  });
});

describe('issue 42: a token carries how it was obtained, and stands only while that does', () => {
  test('amr and apikey_id are in the tokens and in the discovery document', async () => {
    const app = await createApplication(api, { tokens: { enabled: true } });
    const user = await createUser(api, [app.id]);
    const key = await createApikey(api, user.id);
    const byPassword = decodeJwt(await login(app.id, user.email));
    assert.deepEqual(byPassword['amr'], ['pwd']);
    assert.equal(byPassword['apikey_id'], undefined);
    const byKey = decodeJwt(await loginByKey(app.id, key));
    assert.deepEqual(byKey['amr'], ['apikey']);
    assert.equal(byKey['apikey_id'], key.id);
    const discovery = (await api.get('/.well-known/openid-configuration', { credentials: null })).json as { claims_supported: string[] };
    for (const claim of ['amr', 'apikey_id']) assert.ok(discovery.claims_supported.includes(claim), claim);
  });

  test('an API Key token is inactive once the key is disabled, deleted, or the Application\'s tokens are disabled', async () => {
    const app = await createApplication(api, { tokens: { enabled: true } });
    const user = await createUser(api, [app.id]);
    const key = await createApikey(api, user.id);
    const keyPath = `/users/user/${user.id}/apikey/${key.id}`;
    const token = await loginByKey(app.id, key);
    assert.equal(await active(token), true);

    ok(await api.put(keyPath, { status: 'DISABLED' }));
    assert.deepEqual(await introspect(token), { active: false }, 'key disabled');
    ok(await api.put(keyPath, { status: 'ENABLED' }));
    const answer = await introspect(token);
    assert.equal(answer.active, true, 'key enabled again');
    assert.deepEqual(answer['amr'], ['apikey']);
    assert.equal(answer['apikey_id'], key.id);

    await setTokens(app.id, { enabled: false });
    assert.equal(await active(token), false, 'tokens disabled');
    await setTokens(app.id, { enabled: true });
    assert.equal(await active(token), true);

    ok(await api.put(keyPath, { status: 'DISABLED' }));
    ok(await api.delete(keyPath));
    assert.equal(await active(token), false, 'key deleted');
  });

  test('a token naming another User\'s key, or no credential at all, is inactive', async () => {
    const { secret, userId, token } = await hsWorld();
    const other = await createUser(api, [(await createApplication(api)).id]);
    const othersKey = await createApikey(api, other.id);
    const ownKey = await createApikey(api, userId);
    const claims = decodeJwt(token);
    assert.equal(await active(await signHs(secret, { ...claims, amr: ['apikey'], apikey_id: ownKey.id })), true, 'the User\'s own key');
    assert.equal(await active(await signHs(secret, { ...claims, amr: ['apikey'], apikey_id: othersKey.id })), false, 'another User\'s key');
    assert.equal(await active(await signHs(secret, { ...claims, amr: ['apikey'] })), false, 'an API Key token naming none');
    assert.equal(await active(await signHs(secret, { ...claims, amr: ['pwd'], apikey_id: ownKey.id })), false, 'a password token naming a key');
    const withoutAmr = { ...claims };
    delete withoutAmr['amr'];
    assert.equal(await active(await signHs(secret, withoutAmr)), false, 'a token from before tokens said how they were obtained');
  });

  test('a password change ends password tokens, not API Key tokens', async () => {
    const app = await createApplication(api, { tokens: { enabled: true } });
    const user = await createUser(api, [app.id]);
    const key = await createApikey(api, user.id);
    const byPassword = await login(app.id, user.email);
    const byKey = await loginByKey(app.id, key);
    ok(await api.put(`/users/user/${user.id}`, { password: 'another-password-7' }));
    assert.equal(await active(byPassword), false);
    assert.equal(await active(byKey), true);
  });

  test('a repeated API Key authentication (answered from the remembered success) names the key too', async () => {
    const app = await createApplication(api, { tokens: { enabled: true } });
    const user = await createUser(api, [app.id]);
    const key = await createApikey(api, user.id);
    for (let i = 0; i < 4; i++) assert.equal(decodeJwt(await loginByKey(app.id, key))['apikey_id'], key.id, `attempt ${i + 1}`);
  });
});

describe('issue 42: introspection answers the User as it is now', () => {
  test('groups left or DISABLED are not answered, a group joined is; name and email are current; other claims are not repeated', async () => {
    const { app, secret, userId, email } = await hsWorld();
    const [left, disabled, kept, joined] = await Promise.all([1, 2, 3, 4].map(() => createGroup(api, app.id, { name: unique('g') })));
    ok(await api.put(`/users/user/${userId}`, { groups: [left!.id, disabled!.id, kept!.id] }));
    const token = await login(app.id, email);
    assert.deepEqual([...(decodeJwt(token)['groups'] as string[])].sort(), [left!.name, disabled!.name, kept!.name].sort());
    ok(await api.delete(`/users/user/${userId}/group/${left!.id}`));
    ok(await api.put(`/groups/group/${disabled!.id}`, { status: 'DISABLED' }));
    ok(await api.post(`/users/user/${userId}/group/${joined!.id}`));
    ok(await api.put(`/users/user/${userId}`, { name: 'Renamed User' }));
    const answer = await introspect(token);
    assert.equal(answer.active, true);
    assert.deepEqual([...(answer['groups'] as string[])].sort(), [kept!.name, joined!.name].sort());
    assert.equal(answer['name'], 'Renamed User');
    assert.equal(answer['email'], email);

    const forged = await introspect(await signHs(secret, { ...decodeJwt(token), groups: ['admins'], roles: ['admin'], active: false }));
    assert.equal(forged.active, true);
    assert.deepEqual([...(forged['groups'] as string[])].sort(), [kept!.name, joined!.name].sort(), 'the groups a token claims are not answered');
    assert.equal(forged['roles'], undefined, 'nor a claim the service does not issue');
  });
});
