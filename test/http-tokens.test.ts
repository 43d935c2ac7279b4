// HTTP: access tokens (issue 26): token settings, the JWT on authenticate, JWKS and discovery, rotation across restarts, introspection, HS256 secrets.

import assert from 'node:assert/strict';
import { createHmac, createPublicKey, verify as cryptoVerify, type JsonWebKey } from 'node:crypto';
import { cpSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify, SignJWT, type JSONWebKeySet, type JWTPayload } from 'jose';
import {
  baseApplicationId, createApplication, createGroup, createUser, defaultUserPassword, getApplication, unique,
} from './helpers/http-fixtures.js';
import { fails, failsOnField, ok, okKey, type ApplicationJson } from './helpers/http-shapes.js';
import { authctl } from './helpers/authctl.js';
import { newServerDirs, startServer, type Api, type ServerProcess } from './helpers/server.js';

type TokenApp = ApplicationJson & { tokens: { enabled: boolean; ttl: number; alg: string }; jwt_secret?: string };
interface TokenAnswer { authenticated: boolean; access_token?: string; token_type?: string; expires_in?: number; user?: { id: string } }

let server: ServerProcess;
let api: Api;
let base: string;

before(async () => {
  server = await startServer();
  api = server.api();
  base = await baseApplicationId(api);
});

after(async () => {
  await server?.dispose();
});

async function login(appId: string, email: string, password = defaultUserPassword, as: Api = api): Promise<TokenAnswer> {
  return ok<TokenAnswer>(await as.post('/authenticate', { type: 'username', application: appId, credential: { username: email, password } }));
}

async function introspect(token: string, as: Api = api): Promise<JWTPayload & { active: boolean }> {
  return ok(await as.post('/tokens/introspect', { token }));
}

async function jwks(): Promise<JSONWebKeySet> {
  const res = await api.get('/.well-known/jwks.json', { credentials: null });
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
  return res.json as JSONWebKeySet;
}

/** Checks a token's signature with node:crypto alone against the JWK the service publishes for its kid. */
async function verifiedByNodeCrypto(token: string): Promise<boolean> {
  const [head, payload, signature] = token.split('.') as [string, string, string];
  const header = decodeProtectedHeader(token);
  const jwk = (await jwks()).keys.find((k) => k.kid === header.kid);
  assert.ok(jwk !== undefined, `kid ${header.kid} is published`);
  const key = createPublicKey({ key: jwk as JsonWebKey, format: 'jwk' });
  const input = Buffer.from(`${head}.${payload}`);
  const sig = Buffer.from(signature, 'base64url');
  return header.alg === 'EdDSA'
    ? cryptoVerify(null, input, key, sig)
    : cryptoVerify('sha256', input, { key, dsaEncoding: 'ieee-p1363' }, sig);
}

/** An Application issuing tokens and a User of it. */
async function appWithUser(tokens: Record<string, unknown>): Promise<{ app: TokenApp; email: string; userId: string }> {
  const app = await createApplication(api, { tokens }) as TokenApp;
  const user = await createUser(api, [app.id]);
  return { app, email: user.email, userId: user.id };
}

describe('token settings', () => {
  test('a new Application shows tokens disabled with the defaults, and its authentication answers no token', async () => {
    const app = await createApplication(api) as TokenApp;
    assert.deepEqual(app.tokens, { enabled: false, ttl: 900, alg: 'EdDSA' });
    const user = await createUser(api, [app.id]);
    const res = await api.post('/authenticate', { type: 'username', application: app.id, credential: { username: user.email, password: defaultUserPassword } });
    assert.deepEqual(Object.keys(ok(res)), ['authenticated', 'user']);
    assert.deepEqual((await getApplication(api, base) as TokenApp).tokens, { enabled: false, ttl: 900, alg: 'EdDSA' }, 'the base Application too');
  });

  test('set on create and update, any subset kept with the rest; bad values are 400 and change nothing', async () => {
    const app = await createApplication(api, { tokens: { enabled: true, ttl: 120 } }) as TokenApp;
    assert.deepEqual(app.tokens, { enabled: true, ttl: 120, alg: 'EdDSA' });
    const updated = okKey<TokenApp>(await api.put(`/applications/application/${app.id}`, { tokens: { alg: 'ES256' } }), 'application');
    assert.deepEqual(updated.tokens, { enabled: true, ttl: 120, alg: 'ES256' });
    for (const tokens of [{ ttl: 59 }, { ttl: 86_401 }, { ttl: 90.5 }, { ttl: '900' }, { alg: 'none' }, { alg: 'RS256' }, { enabled: 'yes' }, 'on']) {
      failsOnField(await api.put(`/applications/application/${app.id}`, { tokens }), 'tokens');
    }
    failsOnField(await api.post('/applications/application', { name: unique('app'), tokens: { ttl: 10 } }), 'tokens');
    assert.deepEqual((await getApplication(api, app.id) as TokenApp).tokens, { enabled: true, ttl: 120, alg: 'ES256' }, 'unchanged');
  });
});

describe('POST /authenticate with tokens', () => {
  for (const alg of ['EdDSA', 'ES256'] as const) {
    test(`${alg}: the token verifies with jose against the JWKS and with node:crypto, and carries the claims`, async () => {
      const { app, email, userId } = await appWithUser({ enabled: true, alg, ttl: 600 });
      const group = await createGroup(api, app.id, { name: unique('readers') });
      const off = await createGroup(api, app.id, { name: unique('off') });
      await api.put(`/groups/group/${off.id}`, { status: 'DISABLED' });
      await api.put(`/users/user/${userId}`, { groups: [group.id, off.id] });
      const answer = await login(app.id, email);
      assert.equal(answer.authenticated, true);
      assert.equal(answer.token_type, 'Bearer');
      assert.equal(answer.expires_in, 600);
      const token = answer.access_token!;
      const header = decodeProtectedHeader(token);
      assert.equal(header.alg, alg);
      assert.equal(header.typ, 'JWT');
      const discovery = (await api.get('/.well-known/openid-configuration', { credentials: null })).json as { issuer: string; jwks_uri: string };
      assert.equal(discovery.issuer, server.publicUrl);
      assert.equal(discovery.jwks_uri, `${server.publicUrl}/.well-known/jwks.json`);
      const { payload } = await jwtVerify(token, createLocalJWKSet(await jwks()), { issuer: discovery.issuer, audience: app.id, algorithms: [alg] });
      assert.equal(payload.sub, userId);
      assert.equal(payload.aud, app.id);
      assert.equal(payload.exp! - payload.iat!, 600);
      assert.ok(Math.abs(payload.iat! - Date.now() / 1000) < 60);
      assert.equal(typeof payload.jti, 'string');
      assert.equal(payload['email'], email);
      assert.equal(payload['name'], 'Test User');
      assert.deepEqual(payload['groups'], [group.name], 'the ENABLED Groups of this Application, by name');
      assert.equal(typeof payload['org'], 'string');
      assert.ok(!/password|hash|secret|nonce/i.test(JSON.stringify(payload)), 'nothing secret in the claims');
      assert.equal(await verifiedByNodeCrypto(token), true);
      // The typed client's local check, against this server's JWKS and discovery document.
      assert.equal((await api.client.verifyAccessToken(token, { audience: app.id })).sub, userId);
      await assert.rejects(api.client.verifyAccessToken(token, { audience: base }), (err: { code?: string }) => err.code === 'invalid_token', 'another audience');
      const tampered = token.slice(0, -4) + (token.endsWith('AAAA') ? 'BBBB' : 'AAAA');
      assert.equal(await verifiedByNodeCrypto(tampered), false, 'node:crypto refuses a changed signature');
    });
  }

  test('each success gets its own token, repeats of one request included; a failure stays {"authenticated": false}', async () => {
    const { app, email } = await appWithUser({ enabled: true });
    const jtis = new Set<string>();
    for (let i = 0; i < 4; i++) jtis.add(decodeJwt((await login(app.id, email)).access_token!).jti!);
    assert.equal(jtis.size, 4);
    const metrics = (await api.get('/metrics')).text;
    assert.match(metrics, /^authd_tokens_issued_total\{alg="EdDSA"\} [1-9]\d*$/m);
    const wrong = await api.post('/authenticate', { type: 'username', application: app.id, credential: { username: email, password: 'wrong-password-1' } });
    assert.equal(wrong.status, 200);
    assert.match(wrong.text, /^\{"service":\{"result":\{"authenticated":false\},"elapsed":/);
  });

  test('an API Key credential gets a token too', async () => {
    const { app, userId } = await appWithUser({ enabled: true });
    const key = okKey<{ id: string; secret: string }>(await api.post(`/users/user/${userId}/apikey`, {}), 'apikey');
    const answer = ok<TokenAnswer>(await api.post('/authenticate', { type: 'apikey', application: app.id, credential: { username: key.id, password: key.secret } }));
    assert.equal(decodeJwt(answer.access_token!).sub, userId);
  });
});

describe('discovery and JWKS', () => {
  test('served without credentials and outside the envelope; the JWKS may be cached, holds public keys only', async () => {
    const set = await jwks();
    assert.deepEqual(set.keys.map((k) => k.alg).sort(), ['ES256', 'EdDSA']);
    for (const k of set.keys) {
      assert.equal(k.use, 'sig');
      assert.equal(typeof k.kid, 'string');
      assert.equal(k['d'], undefined, 'no private part');
    }
    const res = await api.get('/.well-known/jwks.json', { credentials: null });
    assert.match(res.headers.get('cache-control') ?? '', /max-age=\d+/);
    const discovery = await api.get('/.well-known/openid-configuration', { credentials: null });
    assert.equal(discovery.status, 200);
    assert.equal((discovery.json as Record<string, unknown>)['service'], undefined);
  });
});

describe('POST /tokens/introspect', () => {
  test('active with the claims; inactive after each revoking change, and for a new password', async () => {
    const { app, email, userId } = await appWithUser({ enabled: true });
    const active = async (token: string): Promise<boolean> => (await introspect(token)).active;
    let token = (await login(app.id, email)).access_token!;
    const answer = await introspect(token);
    assert.equal(answer.active, true);
    assert.equal(answer.sub, userId);
    assert.equal(answer['token_type'], 'Bearer');

    await api.put(`/users/user/${userId}`, { status: 'DISABLED' });
    assert.deepEqual(await introspect(token), { active: false }, 'User disabled');
    await api.put(`/users/user/${userId}`, { status: 'ENABLED' });

    token = (await login(app.id, email)).access_token!;
    await api.put(`/applications/application/${app.id}`, { status: 'DISABLED' });
    assert.equal(await active(token), false, 'Application disabled');
    await api.put(`/applications/application/${app.id}`, { status: 'ENABLED' });

    token = (await login(app.id, email)).access_token!;
    await api.put(`/users/user/${userId}`, { password: 'a-new-password-9' });
    assert.equal(await active(token), false, 'password changed after issue');
    const fresh = (await login(app.id, email, 'a-new-password-9')).access_token!;
    assert.equal(await active(fresh), true, 'a token issued after the change is active');

    const other = await createApplication(api);
    await api.put(`/users/user/${userId}`, { applications: [other.id] });
    await api.delete(`/users/user/${userId}/application/${app.id}`);
    assert.equal(await active(fresh), false, 'removed from the Application');

    const again = await appWithUser({ enabled: true });
    const doomed = (await login(again.app.id, again.email)).access_token!;
    await api.put(`/users/user/${again.userId}`, { status: 'DISABLED' });
    ok(await api.delete(`/users/user/${again.userId}`));
    assert.equal(await active(doomed), false, 'User deleted');
  });

  test('bad tokens are inactive: none, wrong alg, tampered, garbage, unknown kid', async () => {
    const { app, email } = await appWithUser({ enabled: true });
    const token = (await login(app.id, email)).access_token!;
    const [head, payload, sig] = token.split('.') as [string, string, string];
    const b64 = (o: object): string => Buffer.from(JSON.stringify(o)).toString('base64url');
    const claims = decodeJwt(token);
    const header = decodeProtectedHeader(token);
    const bad = [
      `${b64({ alg: 'none', typ: 'JWT' })}.${payload}.`,
      `${b64({ ...header, alg: 'HS256' })}.${payload}.${sig}`,
      `${head}.${b64({ ...claims, sub: 'SOMEONEELSE', exp: claims.exp! + 3600 })}.${sig}`,
      `${head}.${payload}.${sig.slice(0, -3)}${sig.endsWith('AAA') ? 'BBB' : 'AAA'}`,
      `${b64({ ...header, kid: 'not-a-key' })}.${payload}.${sig}`,
      'not a token', `${head}.${payload}`, '',
    ];
    // The public key as an HMAC secret: the classic algorithm confusion.
    const jwk = (await jwks()).keys.find((k) => k.kid === header.kid)!;
    bad.push(await new SignJWT(claims).setProtectedHeader({ alg: 'HS256', kid: header.kid! }).sign(new TextEncoder().encode(JSON.stringify(jwk))));
    for (const t of bad) {
      const res = await api.post('/tokens/introspect', { token: t });
      if (t === '') { failsOnField(res, 'token'); continue; }
      assert.deepEqual(ok(res), { active: false }, t);
    }
    assert.equal((await introspect(token)).active, true, 'the real one still is');
  });

  test('callers need the authenticator role or more', async () => {
    const { app, email } = await appWithUser({ enabled: true });
    const token = (await login(app.id, email)).access_token!;
    fails(await api.post('/tokens/introspect', { token }, { credentials: null }), 401);
    const asRole = async (roles: string[]): Promise<Api> => {
      const u = await createUser(api, [base], { roles });
      return api.as({ username: u.email, password: defaultUserPassword });
    };
    fails(await (await asRole(['auditor'])).post('/tokens/introspect', { token }), 403, 'forbidden');
    assert.equal((await introspect(token, await asRole(['authenticator']))).active, true);
  });
});

describe('HS256', () => {
  test('a given secret turns HS256 on, is answered by that change only, and signs tokens verifiable with it', async () => {
    const secret = 'a-secret-of-at-least-thirty-two-bytes!';
    const created = okKey<TokenApp>(await api.post('/applications/application', { name: unique('hs'), jwt_secret: secret }), 'application');
    assert.deepEqual(created.tokens, { enabled: true, ttl: 900, alg: 'HS256' });
    assert.equal(created.jwt_secret, secret);
    const read = await getApplication(api, created.id) as TokenApp;
    assert.equal(read.jwt_secret, undefined, 'never in a GET');
    const listed = await api.get('/applications');
    assert.ok(!listed.text.includes(secret), 'nor in a listing');
    const renamed = okKey<TokenApp>(await api.put(`/applications/application/${created.id}`, { description: 'x' }), 'application');
    assert.equal(renamed.jwt_secret, undefined, 'nor in an update that does not set it');
    const user = await createUser(api, [created.id]);
    const token = (await login(created.id, user.email)).access_token!;
    const { payload, protectedHeader } = await jwtVerify(token, new TextEncoder().encode(secret), { algorithms: ['HS256'], audience: created.id, issuer: server.publicUrl });
    assert.equal(protectedHeader.alg, 'HS256');
    assert.equal(payload.sub, user.id);
    const [head, body, sig] = token.split('.') as [string, string, string];
    assert.equal(createHmac('sha256', secret).update(`${head}.${body}`).digest('base64url'), sig, 'node:crypto agrees');
    assert.equal((await introspect(token)).active, true);
    failsOnField(await api.post('/applications/application', { name: unique('hs'), jwt_secret: 'too-short' }), 'jwt_secret');
  });

  test('a generated secret is answered once; rotation answers a new one and the old tokens go inactive', async () => {
    const created = okKey<TokenApp>(await api.post('/applications/application', { name: unique('hs'), tokens: { enabled: true, alg: 'HS256' } }), 'application');
    const first = created.jwt_secret!;
    assert.match(first, /^[A-Za-z0-9_-]{43}$/);
    const user = await createUser(api, [created.id]);
    const before = (await login(created.id, user.email)).access_token!;
    await jwtVerify(before, new TextEncoder().encode(first), { algorithms: ['HS256'] });
    const rotated = okKey<TokenApp>(await api.post(`/applications/application/${created.id}/jwt-secret`), 'application');
    assert.notEqual(rotated.jwt_secret, first);
    assert.equal((await getApplication(api, created.id) as TokenApp).jwt_secret, undefined);
    assert.equal((await introspect(before)).active, false, 'signed with the old secret');
    const after = (await login(created.id, user.email)).access_token!;
    await jwtVerify(after, new TextEncoder().encode(rotated.jwt_secret!), { algorithms: ['HS256'] });
    // Tokens the test signs with the secret: the claims introspection checks on top of the signature.
    const key = new TextEncoder().encode(rotated.jwt_secret!);
    const now = Math.floor(Date.now() / 1000);
    const claims = { ...decodeJwt(after) };
    const signed = (c: JWTPayload): Promise<string> => new SignJWT(c).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).sign(key);
    assert.equal((await introspect(await signed(claims))).active, true, 'the test signs as the service does');
    assert.equal((await introspect(await signed({ ...claims, iat: now - 7200, exp: now - 3600 }))).active, false, 'expired');
    assert.equal((await introspect(await signed({ ...claims, iss: 'https://elsewhere.example' }))).active, false, 'wrong issuer');
    const other = await createApplication(api);
    assert.equal((await introspect(await signed({ ...claims, aud: other.id }))).active, false, 'wrong audience');
    fails(await api.post(`/applications/application/${created.id}/jwt-secret`, undefined, { credentials: null }), 401);
  });
});

describe('signing key rotation', () => {
  test('tokens of the old key verify until they expire; rotation survives a restart and a restore; only admins rotate', async () => {
    // The issuer is PUBLIC_URL: the same across a restart and a restore, whatever port each listens on.
    const env = { PUBLIC_URL: 'https://auth.example.test' };
    const own = await startServer({ env });
    const restoredDirs = newServerDirs();
    let restarted: ServerProcess | undefined;
    let restored: ServerProcess | undefined;
    try {
      const a = own.api();
      const app = await createApplication(a, { tokens: { enabled: true } });
      const user = await createUser(a, [app.id]);
      const loginHere = async (as: Api): Promise<string> => ok<TokenAnswer>(await as.post('/authenticate', {
        type: 'username', application: app.id, credential: { username: user.email, password: defaultUserPassword },
      })).access_token!;
      const keysOf = async (as: Api): Promise<JSONWebKeySet> => (await as.get('/.well-known/jwks.json', { credentials: null })).json as JSONWebKeySet;
      const old = await loginHere(a);
      const manager = await createUser(a, [await baseApplicationId(a)], { roles: ['manager'] });
      fails(await a.as({ username: manager.email, password: defaultUserPassword }).post('/admin/signing-keys/rotate'), 403, 'forbidden');

      const rotated = okKey<{ kid: string; alg: string; status: string; published_until: string }[]>(await a.post('/admin/signing-keys/rotate'), 'signing_keys');
      assert.deepEqual(rotated.map((k) => k.status).sort(), ['current', 'current', 'retired', 'retired']);
      const retiredUntil = Date.parse(rotated.find((k) => k.status === 'retired')!.published_until.replace(' ', 'T').replace('+00:00', 'Z'));
      assert.ok(Math.abs(retiredUntil - (Date.now() + 86_400_000)) < 600_000, 'a retired key stays published as long as the longest token lives');
      const fresh = await loginHere(a);
      assert.notEqual(decodeProtectedHeader(fresh).kid, decodeProtectedHeader(old).kid);
      const set = await keysOf(a);
      assert.equal(set.keys.length, 4);
      for (const token of [old, fresh]) {
        await jwtVerify(token, createLocalJWKSet(set), { audience: app.id, issuer: own.publicUrl });
        assert.equal(ok<{ active: boolean }>(await a.post('/tokens/introspect', { token })).active, true);
      }

      await own.stop();
      // A restore: the data directory copied elsewhere, with the same key file.
      cpSync(own.dirs.dataDir, restoredDirs.dataDir, { recursive: true });
      mkdirSync(dirname(restoredDirs.keyFile), { recursive: true, mode: 0o700 });
      cpSync(own.dirs.keyFile, restoredDirs.keyFile);
      restarted = await own.restart();
      restored = await startServer({ dirs: restoredDirs, env });
      for (const running of [restarted, restored]) {
        const b = running.api();
        assert.deepEqual(await keysOf(b), set, 'the same keys after a restart and a restore');
        assert.equal(decodeProtectedHeader(await loginHere(b)).kid, decodeProtectedHeader(fresh).kid, 'signed with the current key');
        for (const token of [old, fresh]) assert.equal(ok<{ active: boolean }>(await b.post('/tokens/introspect', { token })).active, true);
      }
    } finally {
      await restored?.dispose();
      await restarted?.dispose();
      await own.dispose();
    }
  });
});

describe('a replaced server key (authctl rotate-key)', () => {
  test('new signing keys at start, the old ones still published; an HS256 Application is named and works again once its secret is rotated', async () => {
    const env = { PUBLIC_URL: 'https://auth.example.test' };
    const first = await startServer({ env });
    let second: ServerProcess | undefined;
    try {
      const a = first.api();
      const ed = await createApplication(a, { tokens: { enabled: true } });
      const hs = okKey<TokenApp>(await a.post('/applications/application', { name: unique('hs'), tokens: { enabled: true, alg: 'HS256' } }), 'application');
      const user = await createUser(a, [ed.id, hs.id]);
      const loginTo = async (as: Api, appId: string) => as.post('/authenticate', { type: 'username', application: appId, credential: { username: user.email, password: defaultUserPassword } });
      const old = ok<TokenAnswer>(await loginTo(a, ed.id)).access_token!;
      await first.stop();
      const rotated = await authctl(['rotate-key', '--data-dir', first.dirs.dataDir, '--key-file', first.dirs.keyFile]);
      assert.equal(rotated.code, 0, rotated.stderr);

      second = await first.restart();
      const b = second.api();
      const warning = second.logLines().find((l) => typeof l['msg'] === 'string' && (l['msg'] as string).startsWith('HS256 secrets sealed under another server key'));
      assert.deepEqual(warning?.['applicationIds'], [hs.id], 'the start names the HS256 Application');
      const fresh = ok<TokenAnswer>(await loginTo(b, ed.id)).access_token!;
      assert.notEqual(decodeProtectedHeader(fresh).kid, decodeProtectedHeader(old).kid, 'signed with a key made at this start');
      const set = (await b.get('/.well-known/jwks.json', { credentials: null })).json as JSONWebKeySet;
      assert.equal(set.keys.length, 4, 'the old public keys stay published');
      for (const token of [old, fresh]) assert.equal(ok<{ active: boolean }>(await b.post('/tokens/introspect', { token })).active, true);

      fails(await loginTo(b, hs.id), 500, 'internal');
      const secret = okKey<TokenApp>(await b.post(`/applications/application/${hs.id}/jwt-secret`), 'application').jwt_secret!;
      const token = ok<TokenAnswer>(await loginTo(b, hs.id)).access_token!;
      await jwtVerify(token, new TextEncoder().encode(secret), { algorithms: ['HS256'], audience: hs.id });
    } finally {
      await second?.dispose();
      await first.dispose();
    }
  });
});
