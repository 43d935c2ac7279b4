// Access tokens below HTTP (issue 26): sealing under the server key, signing-key rotation and dropping, expiry in introspection.

import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import type { SigningKey } from '../src/domain/entities.js';
import * as decide from '../src/store/decide.js';
import { SealError, Sealer } from '../src/tokens/sealer.js';
import { newSigningKey } from '../src/tokens/signing-keys.js';
import { TokenService } from '../src/tokens/token-service.js';
import { StateHarness } from './helpers/state-harness.js';

const dayMicros = 86_400_000_000;
const sealer = new Sealer(randomBytes(32));

test('a sealed secret opens only under its key and for its purpose, and shows nothing of the plaintext', () => {
  const plain = 'the-plaintext-secret-of-an-application';
  const sealed = sealer.seal(plain, 'jwt-secret');
  assert.equal(sealer.open(sealed, 'jwt-secret'), plain);
  assert.ok(!sealed.includes(plain) && !sealed.includes(Buffer.from(plain).toString('base64url').slice(0, 12)));
  assert.notEqual(sealer.seal(plain, 'jwt-secret'), sealed, 'a fresh nonce each time');
  assert.throws(() => new Sealer(randomBytes(32)).open(sealed, 'jwt-secret'), SealError, 'another server key');
  assert.throws(() => sealer.open(sealed, 'signing-key'), SealError, 'another purpose');
  const bytes = Buffer.from(sealed.slice(3), 'base64url');
  bytes[20]! ^= 1;
  assert.throws(() => sealer.open(`v1.${bytes.toString('base64url')}`, 'jwt-secret'), SealError, 'a flipped bit');
  for (const junk of ['', 'v1.', 'v2.AAAA', 'v1.AAAA']) assert.throws(() => sealer.open(junk, 'jwt-secret'), SealError);
});

/** A State with its base Application, and an Application issuing EdDSA tokens with one User. */
async function world(): Promise<{ h: StateHarness; tokens: TokenService; appId: string; userId: string; now: () => number }> {
  const h = new StateHarness();
  h.commit((s, ctx) => decide.bootstrap(s, { email: 'admin@example.com', passwordHash: '$argon2id$v=19$m=8,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA' }, ctx));
  // The State's time (the harness clock), not the wall clock: a token is issued when the State says it is.
  let micros = 0;
  const clock = { now: () => ++micros };
  const tokens = new TokenService(h.state, sealer, 'https://issuer.example', clock);
  const fresh = await Promise.all([newSigningKey('EdDSA', sealer), newSigningKey('ES256', sealer)]);
  h.commit((s, ctx) => decide.rotateSigningKeys(s, fresh, ctx));
  const app = h.commit((s, ctx) => decide.createApplication(s, { name: 'tokens', tokens: { enabled: true, ttl: 60 } }, ctx));
  const user = h.commit((s, ctx) => decide.createUser(s, { email: 'someone@example.com', passwordHash: '$argon2id$v=19$m=8,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA', applications: [app.id] }, ctx));
  micros = user.createdAt;
  return { h, tokens, appId: app.id, userId: user.id, now: () => micros };
}

test('introspection: active until the token expires, then inactive', async () => {
  const { h, tokens, appId, userId, now } = await world();
  const issued = await tokens.issue(h.state.user(userId)!, h.state.application(appId)!, undefined)!;
  assert.equal(issued.expiresIn, 60);
  assert.equal((await tokens.introspect(issued.token, now() / 1000)).active, true);
  // Times from the token's own claims: exp is whole seconds, up to a second before the issue time + 60 s.
  const { iat, exp } = decodeJwt(issued.token);
  assert.equal(exp! - iat!, 60);
  assert.equal((await tokens.introspect(issued.token, exp! * 1000 - 1000)).active, true);
  assert.deepEqual(await tokens.introspect(issued.token, exp! * 1000 + 1000), { active: false });
});

test('rotation retires the current keys; a retired key signs nothing, stays published a day, then leaves the JWKS and the State', async () => {
  const { h, tokens, appId, userId } = await world();
  const before = await tokens.issue(h.state.user(userId)!, h.state.application(appId)!, undefined)!;
  const oldKid = decodeProtectedHeader(before.token).kid!;
  const fresh = await Promise.all([newSigningKey('EdDSA', sealer), newSigningKey('ES256', sealer)]);
  const keys = h.commit((s, ctx) => decide.rotateSigningKeys(s, fresh, ctx));
  assert.equal(keys.length, 4);
  const retired = keys.find((k) => k.kid === oldKid)!;
  assert.ok(retired.retiredAt > 0);
  const after = await tokens.issue(h.state.user(userId)!, h.state.application(appId)!, undefined)!;
  assert.equal(decodeProtectedHeader(after.token).kid, fresh[0]!.kid);
  // Introspection's times are the harness clock's too (the State's), as the tokens' are.
  const retiredMs = retired.retiredAt / 1000;
  assert.equal((await tokens.introspect(before.token, retiredMs + 1000)).active, true, 'the old key still verifies its tokens');
  assert.equal((await tokens.introspect(before.token, retiredMs + dayMicros / 1000 + 1000)).active, false, 'not once it is no longer published');
  const kids = (text: string): string[] => (JSON.parse(text) as { keys: { kid: string }[] }).keys.map((k) => k.kid).sort();
  assert.ok(kids(tokens.jwks(retiredMs + dayMicros / 1000 - 1000)).includes(oldKid));
  assert.deepEqual(kids(tokens.jwks(retiredMs + dayMicros / 1000 + 1000)), fresh.map((k) => k.kid).sort(), 'gone from the JWKS after a day');
  // The next rotation, a day later, drops it from the State.
  const later = await Promise.all([newSigningKey('EdDSA', sealer)]);
  const ctx = { now: retired.retiredAt + dayMicros + 1, newId: () => 'x', newApikeyId: () => 'y', newNonce: () => 'z' };
  const dropped = decide.rotateSigningKeys(h.state, later, ctx).result;
  assert.ok(!dropped.some((k: SigningKey) => k.kid === oldKid));
  assert.deepEqual(dropped.map((k) => k.kid).sort(), [fresh[0]!.kid, fresh[1]!.kid, later[0]!.kid].sort());
});

test('a start\'s rotation makes a key only where the current one is what it saw: two starts at once make one set', async () => {
  const { h } = await world();
  const seen = new Map(h.state.meta!.signingKeys!.filter((k) => k.retiredAt === 0).map((k) => [k.alg, k.kid] as const));
  const first = await Promise.all([newSigningKey('EdDSA', sealer)]);
  const second = await Promise.all([newSigningKey('EdDSA', sealer)]);
  h.commit((s, ctx) => decide.rotateSigningKeys(s, first, ctx, seen));
  const keys = h.commit((s, ctx) => decide.rotateSigningKeys(s, second, ctx, seen));
  assert.equal(keys.filter((k) => k.alg === 'EdDSA' && k.retiredAt === 0).length, 1);
  assert.ok(!keys.some((k) => k.kid === second[0]!.kid), 'the second start saw a key that is no longer current');
});
