// The typed client's access-token side: verifyAccessToken against a stand-in service's JWKS and discovery documents, and the token calls' requests.

import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import * as jose from 'jose';
import { AuthClient, AuthError, type AccessTokenClaims } from '../src/client/index.js';

const appId = 'app-0001';
const hsSecret = 'an-application-secret-of-at-least-32-characters';

interface SigningKeyPair { readonly kid: string; readonly alg: 'EdDSA' | 'ES256' | 'RS256'; readonly privateKey: CryptoKey; readonly jwk: jose.JWK }

async function signingKey(alg: SigningKeyPair['alg']): Promise<SigningKeyPair> {
  const { privateKey, publicKey } = await jose.generateKeyPair(alg);
  const kid = randomUUID();
  return { kid, alg, privateKey, jwk: { ...(await jose.exportJWK(publicKey)), kid, alg, use: 'sig' } };
}

/** What the stand-in service answers and counts; a test changes `keys` to rotate. */
interface StandIn {
  readonly baseUrl: string;
  readonly issuer: string;
  keys: jose.JWK[];
  jwksHits: number;
  discoveryHits: number;
  /** How many discovery requests still get a 500. */
  discoveryFailures: number;
  /** Requests for either document that came with an Authorization header. */
  credentialedWellKnown: number;
  /** The other requests, with their bodies; each is answered the enveloped result `results` holds for its path, else `{}`. */
  readonly calls: { method: string; url: string; body: string }[];
  readonly results: Map<string, unknown>;
  close(): Promise<void>;
}

async function startStandIn(): Promise<StandIn> {
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  // A public URL other than the address the client uses, as behind a proxy: the issuer comes from discovery.
  const issuer = 'https://auth.example.test';
  const state: StandIn = {
    baseUrl, issuer, keys: [], jwksHits: 0, discoveryHits: 0, discoveryFailures: 0, credentialedWellKnown: 0, calls: [], results: new Map(),
    close: () => new Promise<void>((resolve) => { server.close(() => resolve()); server.closeAllConnections(); }),
  };
  const json = (res: ServerResponse, status: number, value: unknown): void => {
    res.writeHead(status, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(value));
  };
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.url?.startsWith('/.well-known/') === true && req.headers.authorization !== undefined) state.credentialedWellKnown++;
      if (req.method === 'GET' && req.url === '/.well-known/jwks.json') {
        state.jwksHits++;
        json(res, 200, { keys: state.keys });
      } else if (req.method === 'GET' && req.url === '/.well-known/openid-configuration') {
        state.discoveryHits++;
        if (state.discoveryFailures > 0) {
          state.discoveryFailures--;
          json(res, 500, { service: { error: { status: 500, code: 'internal', message: 'internal error' } } });
        } else {
          json(res, 200, { issuer, jwks_uri: `${issuer}/.well-known/jwks.json`, id_token_signing_alg_values_supported: ['EdDSA', 'ES256', 'HS256'] });
        }
      } else {
        state.calls.push({ method: req.method ?? '', url: req.url ?? '', body: Buffer.concat(chunks).toString('utf8') });
        json(res, 200, { service: { result: state.results.get(req.url ?? '') ?? {}, elapsed: 0 } });
      }
    });
  });
  return state;
}

function claimsFor(issuer: string, overrides: Partial<Record<keyof AccessTokenClaims, unknown>> = {}): Record<string, unknown> {
  const now = Math.floor(Date.now() / 1000);
  return {
    iss: issuer, sub: 'user-0001', aud: appId, iat: now, exp: now + 300, jti: randomUUID(),
    name: 'Jane Doe', email: 'jane@example.com', groups: ['admins', 'billing'], org: 'org-0001', ...overrides,
  };
}

function sign(key: SigningKeyPair, claims: Record<string, unknown>, kid: string = key.kid): Promise<string> {
  return new jose.SignJWT(claims).setProtectedHeader({ alg: key.alg, kid, typ: 'JWT' }).sign(key.privateKey);
}

function signHs(secret: string, claims: Record<string, unknown>): Promise<string> {
  return new jose.SignJWT(claims).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).sign(new TextEncoder().encode(secret));
}

/** The token with one JWS part replaced (0 header, 1 payload, 2 signature). */
function withPart(token: string, index: number, part: string): string {
  const parts = token.split('.');
  parts[index] = part;
  return parts.join('.');
}

const b64 = (value: unknown): string => Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');

/** Refused as invalid_token; `reason`, when given, is the code of jose's error, so that a token is known to fail the check it was made for. */
async function refused(call: Promise<unknown>, what: string, reason?: string): Promise<AuthError> {
  try {
    await call;
  } catch (err) {
    assert.ok(err instanceof AuthError, `${what}: expected an AuthError, got ${String(err)}`);
    assert.equal(err.status, 401, what);
    assert.equal(err.code, 'invalid_token', what);
    assert.ok(err.cause instanceof jose.errors.JOSEError, `${what}: jose's reason is the cause`);
    if (reason !== undefined) assert.equal(err.cause.code, reason, `${what}: ${err.cause.message}`);
    return err;
  }
  assert.fail(`${what}: expected the token to be refused`);
}

let standIn: StandIn;
let ed: SigningKeyPair;
let es: SigningKeyPair;

before(async () => {
  standIn = await startStandIn();
  ed = await signingKey('EdDSA');
  es = await signingKey('ES256');
  standIn.keys = [ed.jwk, es.jwk];
});

after(async () => {
  await standIn?.close();
});

describe('verifyAccessToken', () => {
  test('EdDSA and ES256 tokens verify to their claims; the issuer is read once, the JWKS fetched once', async () => {
    const client = new AuthClient({ baseUrl: `${standIn.baseUrl}/`, credentials: { username: 'u', password: 'p' }, tokenAudience: appId });
    const jwksBefore = standIn.jwksHits;
    const discoveryBefore = standIn.discoveryHits;
    for (const key of [ed, es]) {
      const claims = claimsFor(standIn.issuer);
      assert.deepEqual(await client.verifyAccessToken(await sign(key, claims)), claims, key.alg);
    }
    // The audience option overrides the client's default.
    const other = claimsFor(standIn.issuer, { aud: 'app-0002' });
    assert.deepEqual(await client.verifyAccessToken(await sign(ed, other), { audience: 'app-0002' }), other);
    // as() keeps what was learnt: no second fetch of either document.
    await client.as(null).verifyAccessToken(await sign(es, claimsFor(standIn.issuer)));
    assert.equal(standIn.jwksHits - jwksBefore, 1);
    assert.equal(standIn.discoveryHits - discoveryBefore, 1);
    assert.equal(standIn.credentialedWellKnown, 0, 'the client\'s credentials are not sent for public documents');
  });

  test('rotation: a new kid is fetched once past the cooldown, tokens under the old kid still verify while it is listed', async () => {
    const cooldownMs = 500;
    const client = new AuthClient({ baseUrl: standIn.baseUrl, tokenAudience: appId, jwksCooldownMs: cooldownMs });
    await client.verifyAccessToken(await sign(ed, claimsFor(standIn.issuer)));
    const jwksBefore = standIn.jwksHits;

    const next = await signingKey('EdDSA');
    standIn.keys = [ed.jwk, es.jwk, next.jwk];
    try {
      const underNew = await sign(next, claimsFor(standIn.issuer));
      // Within the cooldown the client does not ask again, so the new kid is not known yet.
      await refused(client.verifyAccessToken(underNew), 'a new kid within the cooldown', 'ERR_JWKS_NO_MATCHING_KEY');
      assert.equal(standIn.jwksHits, jwksBefore);
      await sleep(cooldownMs + 50);
      assert.equal((await client.verifyAccessToken(underNew)).sub, 'user-0001');
      assert.equal(standIn.jwksHits, jwksBefore + 1);
      assert.equal((await client.verifyAccessToken(await sign(ed, claimsFor(standIn.issuer)))).sub, 'user-0001', 'the old kid, still listed');
      assert.equal(standIn.jwksHits, jwksBefore + 1, 'a known kid costs no fetch');

      // A kid the service never listed is refused after the refetch.
      await sleep(cooldownMs + 50);
      const stranger = await signingKey('EdDSA');
      await refused(client.verifyAccessToken(await sign(stranger, claimsFor(standIn.issuer))), 'an unknown kid after refetch', 'ERR_JWKS_NO_MATCHING_KEY');
      assert.equal(standIn.jwksHits, jwksBefore + 2);
    } finally {
      standIn.keys = [ed.jwk, es.jwk];
    }
  });

  test('bad tokens are refused with invalid_token, jose\'s reason as the cause', async () => {
    const client = new AuthClient({ baseUrl: standIn.baseUrl, tokenAudience: appId });
    const now = Math.floor(Date.now() / 1000);
    const good = await sign(ed, claimsFor(standIn.issuer));
    assert.equal((await client.verifyAccessToken(good)).aud, appId);

    await refused(client.verifyAccessToken(new jose.UnsecuredJWT(claimsFor(standIn.issuer)).encode()), 'alg none', 'ERR_JOSE_ALG_NOT_ALLOWED');
    await refused(client.verifyAccessToken(withPart(good, 0, b64({ alg: 'none', kid: ed.kid, typ: 'JWT' }))), 'alg none over a real signature', 'ERR_JOSE_ALG_NOT_ALLOWED');
    await refused(client.verifyAccessToken(await signHs(hsSecret, claimsFor(standIn.issuer))), 'HS256 without a secret', 'ERR_JOSE_ALG_NOT_ALLOWED');
    // The classic confusion: HMAC keyed with the published key's text.
    const confused = await new jose.SignJWT(claimsFor(standIn.issuer)).setProtectedHeader({ alg: 'HS256', kid: ed.kid, typ: 'JWT' })
      .sign(new TextEncoder().encode(JSON.stringify(ed.jwk)));
    await refused(client.verifyAccessToken(confused), 'HS256 keyed with the public JWK', 'ERR_JOSE_ALG_NOT_ALLOWED');
    // RS256 is not accepted even when its key is published (to a client that has not fetched the JWKS yet, so it sees it).
    const rs = await signingKey('RS256');
    standIn.keys = [ed.jwk, es.jwk, rs.jwk];
    try {
      const fresh = new AuthClient({ baseUrl: standIn.baseUrl, tokenAudience: appId });
      await refused(fresh.verifyAccessToken(await sign(rs, claimsFor(standIn.issuer))), 'RS256', 'ERR_JOSE_ALG_NOT_ALLOWED');
    } finally {
      standIn.keys = [ed.jwk, es.jwk];
    }
    // An ES256 header on a token the EdDSA key signed: no ES256 key has that kid.
    await refused(client.verifyAccessToken(withPart(good, 0, b64({ alg: 'ES256', kid: ed.kid, typ: 'JWT' }))), 'header alg changed', 'ERR_JWKS_NO_MATCHING_KEY');

    const payload = JSON.parse(Buffer.from(good.split('.')[1]!, 'base64url').toString('utf8')) as Record<string, unknown>;
    await refused(client.verifyAccessToken(withPart(good, 1, b64({ ...payload, sub: 'user-0002' }))), 'tampered payload', 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED');
    const signature = good.split('.')[2]!;
    const flipped = (signature[5] === 'A' ? 'B' : 'A');
    await refused(client.verifyAccessToken(withPart(good, 2, signature.slice(0, 5) + flipped + signature.slice(6))), 'tampered signature', 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED');

    await refused(client.verifyAccessToken(await sign(ed, claimsFor(standIn.issuer, { iat: now - 400, exp: now - 60 }))), 'expired', 'ERR_JWT_EXPIRED');
    await refused(client.verifyAccessToken(await sign(ed, claimsFor(standIn.issuer, { aud: 'app-0002' }))), 'wrong audience', 'ERR_JWT_CLAIM_VALIDATION_FAILED');
    await refused(client.verifyAccessToken(await sign(ed, claimsFor('https://other.example.test'))), 'wrong issuer', 'ERR_JWT_CLAIM_VALIDATION_FAILED');
    const noExp = claimsFor(standIn.issuer);
    delete noExp['exp'];
    await refused(client.verifyAccessToken(await sign(ed, noExp)), 'no exp', 'ERR_JWT_CLAIM_VALIDATION_FAILED');
    for (const garbage of ['', 'not-a-token', 'a.b.c', `${good}.x`]) await refused(client.verifyAccessToken(garbage), `garbage ${JSON.stringify(garbage)}`, 'ERR_JWS_INVALID');
  });

  test('clock tolerance: 5 s by default on exp, as given otherwise', async () => {
    const client = new AuthClient({ baseUrl: standIn.baseUrl, tokenAudience: appId });
    const now = Math.floor(Date.now() / 1000);
    const justExpired = await sign(ed, claimsFor(standIn.issuer, { iat: now - 300, exp: now - 2 }));
    assert.equal((await client.verifyAccessToken(justExpired)).sub, 'user-0001');
    await refused(client.verifyAccessToken(justExpired, { clockToleranceS: 0 }), 'expired with no tolerance', 'ERR_JWT_EXPIRED');
    await assert.rejects(client.verifyAccessToken(justExpired, { clockToleranceS: -1 }), TypeError);
  });

  test('HS256 with the Application\'s secret, and then HS256 only; the JWKS is not read', async () => {
    const client = new AuthClient({ baseUrl: standIn.baseUrl, tokenAudience: appId });
    const jwksBefore = standIn.jwksHits;
    const claims = claimsFor(standIn.issuer);
    const token = await signHs(hsSecret, claims);
    assert.deepEqual(await client.verifyAccessToken(token, { secret: hsSecret }), claims);
    await refused(client.verifyAccessToken(token, { secret: `${hsSecret}!` }), 'another secret', 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED');
    await refused(client.verifyAccessToken(await sign(ed, claimsFor(standIn.issuer)), { secret: hsSecret }), 'EdDSA when a secret is given', 'ERR_JOSE_ALG_NOT_ALLOWED');
    await refused(client.verifyAccessToken(await signHs(hsSecret, claimsFor(standIn.issuer, { aud: 'app-0002' })), { secret: hsSecret }), 'HS256, wrong audience', 'ERR_JWT_CLAIM_VALIDATION_FAILED');
    assert.equal(standIn.jwksHits, jwksBefore);
    await assert.rejects(client.verifyAccessToken(token, { secret: '' }), TypeError);
  });

  test('no audience, neither given nor the client\'s: a TypeError before anything is fetched', async () => {
    const client = new AuthClient({ baseUrl: standIn.baseUrl });
    const hits = standIn.jwksHits + standIn.discoveryHits;
    const token = await sign(ed, claimsFor(standIn.issuer));
    await assert.rejects(client.verifyAccessToken(token), (err: unknown) => err instanceof TypeError && /audience/.test(err.message));
    await assert.rejects(client.verifyAccessToken(token, { audience: '' }), TypeError);
    assert.equal(standIn.jwksHits + standIn.discoveryHits, hits);
    assert.equal((await client.verifyAccessToken(token, { audience: appId })).aud, appId);
  });

  test('the issuer option is used as given, without reading discovery', async () => {
    const client = new AuthClient({ baseUrl: standIn.baseUrl, tokenAudience: appId });
    const discoveryBefore = standIn.discoveryHits;
    const token = await sign(ed, claimsFor('https://proxy.example.test'));
    assert.equal((await client.verifyAccessToken(token, { issuer: 'https://proxy.example.test' })).sub, 'user-0001');
    await refused(client.verifyAccessToken(await sign(ed, claimsFor(standIn.issuer)), { issuer: 'https://proxy.example.test' }), 'the discovered issuer when another is given', 'ERR_JWT_CLAIM_VALIDATION_FAILED');
    assert.equal(standIn.discoveryHits, discoveryBefore);
  });

  test('100 tokens with made-up kids cost the JWKS no more fetches than the cooldown allows', async () => {
    const stranger = await signingKey('EdDSA');
    const tokens = await Promise.all(Array.from({ length: 100 }, () => sign(stranger, claimsFor(standIn.issuer), randomUUID())));

    // Default cooldown (30 s), a fresh client, all at once: the first fetch is shared, and none follows.
    const flooded = new AuthClient({ baseUrl: standIn.baseUrl, tokenAudience: appId });
    let jwksBefore = standIn.jwksHits;
    const outcomes = await Promise.allSettled(tokens.map((t) => flooded.verifyAccessToken(t)));
    for (const o of outcomes) assert.ok(o.status === 'rejected' && o.reason instanceof AuthError && o.reason.code === 'invalid_token');
    assert.equal(standIn.jwksHits - jwksBefore, 1);

    // A short cooldown, one token every few ms: at most one fetch per cooldown period, plus the first.
    const cooldownMs = 50;
    const paced = new AuthClient({ baseUrl: standIn.baseUrl, tokenAudience: appId, jwksCooldownMs: cooldownMs });
    jwksBefore = standIn.jwksHits;
    const started = performance.now();
    for (const t of tokens) {
      await refused(paced.verifyAccessToken(t), 'a made-up kid', 'ERR_JWKS_NO_MATCHING_KEY');
      await sleep(3);
    }
    const elapsedMs = performance.now() - started;
    const fetches = standIn.jwksHits - jwksBefore;
    assert.ok(fetches >= 2, `the cooldown passed (${elapsedMs.toFixed(0)} ms), so the client asked again`);
    assert.ok(fetches <= 1 + Math.ceil(elapsedMs / cooldownMs), `${fetches} fetches in ${elapsedMs.toFixed(0)} ms with a ${cooldownMs} ms cooldown`);
  });

  test('a service that cannot be read is unreachable or invalid_response, not invalid_token; a failed discovery is tried again', async () => {
    const token = await sign(ed, claimsFor(standIn.issuer));
    const client = new AuthClient({ baseUrl: standIn.baseUrl, tokenAudience: appId });
    standIn.discoveryFailures = 1;
    await assert.rejects(client.verifyAccessToken(token), (err: unknown) => err instanceof AuthError && err.code === 'invalid_response' && err.status === 500);
    assert.equal((await client.verifyAccessToken(token)).sub, 'user-0001');

    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const { port } = probe.address() as AddressInfo;
    await new Promise<void>((r) => probe.close(() => r()));
    const gone = new AuthClient({ baseUrl: `http://127.0.0.1:${port}`, tokenAudience: appId });
    await assert.rejects(gone.verifyAccessToken(token), (err: unknown) => err instanceof AuthError && err.code === 'unreachable' && err.status === 0);
    // With the issuer given, the JWKS fetch is the one that fails, with the same code.
    await assert.rejects(gone.verifyAccessToken(token, { issuer: standIn.issuer }), (err: unknown) => err instanceof AuthError && err.code === 'unreachable');
  });
});

describe('token calls', () => {
  test('introspectToken, admin.rotateSigningKeys and applications.rotateJwtSecret send what the service expects', async () => {
    const client = new AuthClient({ baseUrl: standIn.baseUrl, credentials: { username: 'admin@example.com', password: 'pw' } });
    const keys = [{ kid: ed.kid, alg: 'EdDSA', status: 'current', created_at: '2026-11-26T08:00:00.000Z', published_until: '' }];
    const application = { id: 'app/1', name: 'Billing', jwt_secret: hsSecret };
    standIn.results.set('/tokens/introspect', { active: false });
    standIn.results.set('/admin/signing-keys/rotate', { signing_keys: keys });
    standIn.results.set('/applications/application/app%2F1/jwt-secret', { application });
    const from = standIn.calls.length;
    assert.deepEqual(await client.introspectToken('a.b.c'), { active: false });
    assert.deepEqual(await client.admin.rotateSigningKeys(), keys);
    assert.deepEqual(await client.applications.rotateJwtSecret('app/1'), application);
    assert.deepEqual(standIn.calls.slice(from), [
      { method: 'POST', url: '/tokens/introspect', body: JSON.stringify({ token: 'a.b.c' }) },
      { method: 'POST', url: '/admin/signing-keys/rotate', body: '' },
      { method: 'POST', url: '/applications/application/app%2F1/jwt-secret', body: '' },
    ]);
  });
});
