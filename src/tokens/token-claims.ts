// What an access token says and when it still stands: the header and claims as issued, the checks introspection makes against the State, and its answer.

import type { JWTPayload, ProtectedHeaderParameters } from 'jose';
import { tokenIssuedAheadSecondsMax, tokenJtiRandomBytes } from '../config/limits.js';
import { tokenAlgs, type Application, type TokenAlg, type TokenSettings, type User } from '../domain/entities.js';
import { mayAuthenticate } from '../service/authenticator.js';
import type { State } from '../store/state.js';

/** RFC 8176's `amr` of a token obtained with a password. */
export const passwordAmr: readonly string[] = Object.freeze(['pwd']);
/** `amr` of a token obtained with an API Key: not in RFC 8176's registry (it has no value for a bearer API Key), named as POST /authenticate's `type`. */
export const apikeyAmr: readonly string[] = Object.freeze(['apikey']);
/** The claim naming the API Key a token was obtained with. */
export const apikeyIdClaim = 'apikey_id';
/** Every claim a token carries, for the discovery document. */
export const claimsSupported: readonly string[] = ['iss', 'sub', 'aud', 'iat', 'exp', 'jti', 'amr', apikeyIdClaim, 'name', 'email', 'groups', 'org'];

/** Bytes of issue time (microseconds) at the start of a jti. */
export const jtiTimeBytes = 8;

/** What introspection answers for a token that still stands: its own claims, and the User's as they are now. */
export interface ActiveIntrospection {
  readonly active: true;
  readonly token_type: 'Bearer';
  readonly iss: string;
  readonly sub: string;
  readonly aud: string;
  readonly iat: number;
  readonly exp: number;
  readonly jti: string;
  readonly amr: readonly string[];
  readonly apikey_id?: string;
  readonly name: string;
  readonly email: string;
  readonly groups: readonly string[];
  readonly org: string;
}

export type Introspection = { readonly active: false } | ActiveIntrospection;

/**
 * The token's alg if its protected header is exactly what the service writes (`alg`, `typ: "JWT"`, and `kid` for the
 * service's own keys), else undefined. jose, given a key rather than a key-finding function, honours none of jku,
 * jwk, x5u, x5c or crit (but for `b64`, which a JWT may not use): refusing every other parameter keeps it so
 * whatever a later jose does with them.
 */
export function issuedAlg(header: ProtectedHeaderParameters): TokenAlg | undefined {
  const alg = header.alg as TokenAlg;
  if (!tokenAlgs.includes(alg) || header.typ !== 'JWT') return undefined;
  const fields = Object.keys(header).length;
  if (alg === 'HS256') return fields === 2 ? alg : undefined;
  return fields === 3 && typeof header.kid === 'string' ? alg : undefined;
}

/** Whether the Application answers tokens now. */
export function issuesTokens(app: Application | undefined): app is Application & { readonly tokens: TokenSettings } {
  return app?.tokens?.enabled === true;
}

/**
 * Whether a token whose signature, issuer, audience and expiry jose has checked still stands, `nowMs` being
 * introspection's time: its Application answers tokens (and HS256 ones only while its alg is HS256: the secret is held
 * by the Application, whose holders could otherwise go on minting tokens after a switch to the service's keys); its
 * lifetime is within the Application's ttl and it was not issued in the future; its User may authenticate against
 * the Application; and the credential it was obtained with still stands (see credentialStands). Answers the User.
 */
export function standingUser(state: State, payload: JWTPayload, alg: TokenAlg, nowMs: number): { readonly user: User; readonly app: Application } | undefined {
  const { aud, sub, iat, exp } = payload;
  if (typeof aud !== 'string' || typeof sub !== 'string' || typeof iat !== 'number' || typeof exp !== 'number') return undefined;
  const app = state.application(aud);
  if (!issuesTokens(app) || (alg === 'HS256' && app.tokens.alg !== 'HS256')) return undefined;
  if (exp - iat > app.tokens.ttl || iat * 1000 > nowMs + tokenIssuedAheadSecondsMax * 1000) return undefined;
  const user = state.user(sub);
  if (user === undefined || !mayAuthenticate(user, app) || !credentialStands(user, payload, iat)) return undefined;
  return { user, app };
}

/**
 * A password token stands while the User's password is the one it was issued for (a re-hash is not a change); an
 * API Key token while that key is the User's and ENABLED, whatever happens to the password. A token that says
 * neither (one issued before tokens said how they were obtained) does not stand.
 */
function credentialStands(user: User, payload: JWTPayload, iat: number): boolean {
  const { amr } = payload;
  const keyId = payload[apikeyIdClaim];
  if (!Array.isArray(amr) || amr.length !== 1) return false;
  if (amr[0] === passwordAmr[0]) return keyId === undefined && (user.passwordChangedAt ?? 0) <= issuedAtMicros(payload.jti, iat);
  if (amr[0] !== apikeyAmr[0] || typeof keyId !== 'string') return false;
  return user.apikeys.some((k) => k.id === keyId && k.status === 'ENABLED');
}

/**
 * When the token was issued, in microseconds: from its jti when that is one of ours and falls within the `iat`
 * second (a jti that says later than its iat would outlive a password change), else the end of the `iat` second.
 */
function issuedAtMicros(jti: unknown, iat: number): number {
  const endOfSecond = (iat + 1) * 1_000_000 - 1;
  if (typeof jti !== 'string') return endOfSecond;
  const bytes = Buffer.from(jti, 'base64url');
  if (bytes.length !== jtiTimeBytes + tokenJtiRandomBytes) return endOfSecond;
  const micros = bytes.readUInt32BE(0) * 2 ** 32 + bytes.readUInt32BE(4);
  return Math.floor(micros / 1_000_000) === iat ? micros : endOfSecond;
}

/** Names of the User's ENABLED Groups in the Application: what a client application grants access by. */
export function enabledGroupNames(state: State, user: User, appId: string): string[] {
  const names: string[] = [];
  for (const id of user.groups) {
    const group = state.group(id);
    if (group !== undefined && group.application === appId && group.status === 'ENABLED') names.push(group.name);
  }
  return names;
}

/**
 * Introspection's answer, field by field: the token's own claims that standingUser() checked, and the User's
 * `name`, `email`, `groups` and `org` as they are now (a token's are as they were when it was issued). Nothing
 * else the token carries is repeated: an HS256 token's claims are whatever its secret's holders wrote.
 */
export function activeIntrospection(state: State, payload: JWTPayload, user: User, app: Application): ActiveIntrospection {
  const keyId = payload[apikeyIdClaim];
  const answer: ActiveIntrospection = {
    active: true, token_type: 'Bearer',
    iss: payload.iss!, sub: user.id, aud: app.id, iat: payload.iat!, exp: payload.exp!, jti: payload.jti!,
    amr: typeof keyId === 'string' ? apikeyAmr : passwordAmr,
    ...(typeof keyId === 'string' ? { apikey_id: keyId } : {}),
    name: user.name, email: user.email, groups: enabledGroupNames(state, user, app.id), org: user.organization,
  };
  return answer;
}
