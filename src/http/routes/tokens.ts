// Routes of access tokens: the JWKS and discovery documents, introspection, and rotating the signing keys.

import type { SigningKey } from '../../domain/entities.js';
import { formatTimestamp } from '../../domain/time.js';
import { isPublished, publishedUntil } from '../../domain/signing-keys.js';
import { tokenIntrospect } from '../bodies.js';
import { listOf, obj, ref, str } from '../openapi.js';
import { route, type RouteDecl } from '../route.js';

const jsonType = 'application/json';
/** Verifiers may keep the JWKS this long; one that meets an unknown kid fetches it again (a rotation). */
const jwksCacheControl = 'public, max-age=300';

function signingKeyJson(key: SigningKey): object {
  const until = publishedUntil(key);
  return {
    kid: key.kid, alg: key.alg, status: key.retiredAt === 0 ? 'current' : 'retired',
    created_at: formatTimestamp(key.createdAt), published_until: until === Infinity ? '' : formatTimestamp(until),
  };
}

export const tokenRoutes: readonly RouteDecl[] = [
  route({
    method: 'GET', pattern: '/.well-known/jwks.json', operationId: 'jwks', tag: 'Tokens',
    summary: 'The public keys access tokens are signed with (JWK Set, RFC 7517)',
    description: 'Not enveloped. A key replaced by a rotation stays listed until every token it signed has expired.',
    access: 'public', audit: 'none', raw: jsonType, result: ref('Jwks'),
    handler: ({ deps }) => ({ result: deps.tokens.jwks(), contentType: jsonType, headers: [['Cache-Control', jwksCacheControl]] }),
  }),
  route({
    method: 'GET', pattern: '/.well-known/openid-configuration', operationId: 'discovery', tag: 'Tokens',
    summary: 'Where verifiers find the issuer and its keys (OpenID Connect Discovery shape)',
    description: 'Not enveloped.',
    access: 'public', audit: 'none', raw: jsonType, result: obj({ issuer: str, jwks_uri: str, introspection_endpoint: str }),
    handler: ({ deps }) => ({ result: JSON.stringify(deps.tokens.discovery()), contentType: jsonType }),
  }),
  route({
    method: 'POST', pattern: '/tokens/introspect', operationId: 'introspectToken', tag: 'Tokens',
    summary: 'Whether an access token is active (RFC 7662), and its claims if it is',
    description: 'Inactive once expired, or once its User was disabled, deleted or removed from the Application, or the password or API Key ' +
      'it was obtained with changed, was disabled or deleted, or its Application was disabled or stopped issuing tokens (HS256 ones: stopped ' +
      'issuing HS256), or its signing key or HS256 secret is gone. An active token answers its claims with the User\'s name, email, ' +
      'groups and org as they are now; an inactive one only `{"active": false}`.',
    access: 'authenticate', audit: 'token.introspect', body: tokenIntrospect, result: ref('Introspection'),
    handler: async ({ body, deps }) => {
      const answer = await deps.tokens.introspect(body.token!);
      deps.metrics.tokenIntrospected(answer.active);
      return { result: JSON.stringify(answer) };
    },
  }),
  route({
    method: 'GET', pattern: '/admin/signing-keys', operationId: 'listSigningKeys', tag: 'Admin',
    summary: 'The signing keys: the current one of each algorithm, and retired ones still published',
    access: 'read', audit: 'none', result: listOf('signing_keys', ref('SigningKey')),
    handler: ({ deps }) => {
      // A retired key past its time is only kept until the next rotation drops it: not listed.
      const now = Date.now() * 1000;
      return { result: JSON.stringify({ signing_keys: (deps.state.meta?.signingKeys ?? []).filter((k) => isPublished(k, now)).map(signingKeyJson) }) };
    },
  }),
  route({
    method: 'POST', pattern: '/admin/signing-keys/rotate', operationId: 'rotateSigningKeys', tag: 'Admin',
    summary: 'Make new current signing keys (EdDSA and ES256)',
    description: 'New tokens are signed with the new keys; the old ones stay published until every token they signed has expired.',
    access: 'admin', audit: 'token.rotate_keys', result: listOf('signing_keys', ref('SigningKey')),
    handler: async (ctx) => {
      // The context is the Commits: the caller must still be an admin where the new keys are decided.
      const { keys } = await ctx.deps.tokens.rotate(ctx, 'all');
      return { result: JSON.stringify({ signing_keys: keys.map(signingKeyJson) }) };
    },
  }),
];
