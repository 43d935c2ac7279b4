// Access tokens: signing one on a successful POST /authenticate, introspecting one, and the JWKS and discovery documents.

import { randomBytes, randomFillSync } from 'node:crypto';
import type { JWTPayload } from 'jose';
import { jwtSecretBytesNew, tokenCharsMax, tokenJtiPoolBytes, tokenJtiRandomBytes } from '../config/limits.js';
import { currentKey, isPublished, publishedUntil } from '../domain/signing-keys.js';
import { signingAlgs, tokenAlgs, type Application, type JsonObject, type SigningAlg, type SigningKey, type TokenAlg, type User } from '../domain/entities.js';
import type { Commits } from '../service/committer.js';
import { rotateSigningKeys } from '../store/decide.js';
import type { State } from '../store/state.js';
import { jose } from './jose.js';
import type { Sealer } from './sealer.js';
import { newSigningKey } from './signing-keys.js';
import {
  activeIntrospection, apikeyAmr, claimsSupported, enabledGroupNames, issuedAlg, issuesTokens, jtiTimeBytes, passwordAmr,
  standingUser, type Introspection,
} from './token-claims.js';

export type { Introspection } from './token-claims.js';

/** What a successful authentication adds to its answer. */
export interface Issued {
  readonly token: string;
  readonly expiresIn: number;
  readonly alg: TokenAlg;
}

const inactive: Introspection = { active: false };
/** The claims every token of ours has: one without them is not ours. */
const requiredClaims = ['sub', 'aud', 'exp', 'iat', 'jti', 'amr'];

/** A new HS256 secret, as given to the caller once: 32 random bytes, base64url. */
export function newJwtSecret(): string {
  return randomBytes(jwtSecretBytesNew).toString('base64url');
}

export class TokenService {
  /** Keys as jose uses them, made once per key: by kid (signing keys) or by sealed value (HS256 secrets). */
  private readonly privateKeys = new Map<string, Promise<CryptoKey>>();
  private readonly publicKeys = new Map<string, Promise<CryptoKey>>();
  private readonly hmacKeys = new Map<string, Promise<CryptoKey>>();
  private jwksText: { readonly keys: readonly SigningKey[] | undefined; readonly until: number; readonly text: string } | undefined;

  /** clock: microseconds, the committer's, so a token's issue time orders exactly against a password change's. */
  constructor(
    private readonly state: State, private readonly sealer: Sealer, readonly issuer: string, private readonly clock: { now(): number },
  ) {}

  /**
   * The token a success against app answers, or undefined when the Application's tokens are off. `apikeyId`: the
   * API Key the User authenticated with; undefined for a password. The token says which (`amr`, `apikey_id`), and
   * introspection holds it to that credential.
   */
  issue(user: User, app: Application, apikeyId: string | undefined): Promise<Issued> | undefined {
    const settings = app.tokens;
    if (settings === undefined || !settings.enabled) return undefined;
    // After the password it was issued for, whatever another node's clock said when that was set.
    const micros = Math.max(this.clock.now(), (user.passwordChangedAt ?? 0) + 1);
    const iat = Math.floor(micros / 1e6);
    const claims: JWTPayload = {
      iss: this.issuer, sub: user.id, aud: app.id, iat, exp: iat + settings.ttl, jti: newJti(micros),
      // One shape for both kinds: JSON leaves out an undefined apikey_id.
      amr: apikeyId === undefined ? passwordAmr : apikeyAmr, apikey_id: apikeyId,
      name: user.name, email: user.email, groups: enabledGroupNames(this.state, user, app.id), org: user.organization,
    };
    return this.sign(claims, settings.alg, app).then((token) => ({ token, expiresIn: settings.ttl, alg: settings.alg }));
  }

  private async sign(claims: JWTPayload, alg: TokenAlg, app: Application): Promise<string> {
    const { SignJWT } = await jose();
    const jwt = new SignJWT(claims);
    if (alg === 'HS256') return jwt.setProtectedHeader({ alg, typ: 'JWT' }).sign(await this.hmacKey(app));
    const key = currentKey(this.state.meta?.signingKeys, alg);
    if (key === undefined) throw new Error(`no current ${alg} signing key`);
    return jwt.setProtectedHeader({ alg, kid: key.kid, typ: 'JWT' }).sign(await this.privateKey(key));
  }

  /**
   * RFC 7662's answer for a token: active only if its header is as issued, its signature, issuer, audience and
   * expiry check out under a key still published (or, for HS256, its Application's current secret while that
   * Application issues HS256), and what it stood for still stands (token-claims.ts, standingUser): the Application
   * ENABLED and issuing tokens, the lifetime within its ttl, the User not DISABLED and still in it, the password or
   * API Key it was obtained with unchanged. Every other case is `{active: false}`, without saying which.
   */
  async introspect(token: string, now = Date.now()): Promise<Introspection> {
    if (typeof token !== 'string' || token.length > tokenCharsMax) return inactive;
    const { decodeJwt, decodeProtectedHeader, jwtVerify } = await jose();
    let key: CryptoKey | undefined;
    let alg: TokenAlg | undefined;
    let app: Application | undefined;
    try {
      const header = decodeProtectedHeader(token);
      alg = issuedAlg(header);
      const { aud } = decodeJwt(token);
      app = typeof aud === 'string' ? this.state.application(aud) : undefined;
      if (alg === undefined || !issuesTokens(app)) return inactive;
      if (alg === 'HS256') key = app.tokens.alg === 'HS256' && app.jwtSecret !== undefined ? await this.hmacKey(app) : undefined;
      else key = await this.verifyingKey(alg, header.kid, now);
    } catch {
      return inactive;
    }
    if (key === undefined) return inactive;
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, key, {
        algorithms: [alg], issuer: this.issuer, audience: app.id, currentDate: new Date(now), requiredClaims,
      }));
    } catch {
      return inactive;
    }
    // Asked of the State as it is after the verification's await, not as it was before.
    const standing = standingUser(this.state, payload, alg, now);
    if (standing === undefined || (alg === 'HS256' && standing.app.jwtSecret !== app.jwtSecret)) return inactive;
    return activeIntrospection(this.state, payload, standing.user, standing.app);
  }

  /** The public key a token names, while it is published; undefined for an unknown kid. */
  private verifyingKey(alg: SigningAlg, kid: string | undefined, now: number): Promise<CryptoKey> | undefined {
    const key = this.state.meta?.signingKeys?.find((k) => k.kid === kid && k.alg === alg);
    if (key === undefined || !isPublished(key, now * 1000)) return undefined;
    let imported = this.publicKeys.get(key.kid);
    if (imported === undefined) {
      imported = jose().then(({ importJWK }) => importJWK({ ...key.publicJwk, alg }, alg) as Promise<CryptoKey>);
      this.publicKeys.set(key.kid, imported);
    }
    return imported;
  }

  /** The Application's secret as a WebCrypto key, made once: jose would otherwise import raw bytes on every signature. */
  private hmacKey(app: Application): Promise<CryptoKey> {
    const sealed = app.jwtSecret;
    if (sealed === undefined) throw new Error(`Application ${app.id} has no HS256 secret`);
    let key = this.hmacKeys.get(sealed);
    if (key === undefined) {
      let plain: string;
      try {
        plain = this.sealer.open(sealed, 'jwt-secret');
      } catch (err) {
        throw new Error(`the HS256 secret of Application ${app.id} does not open under this server key: give it a new one (POST .../jwt-secret)`, { cause: err });
      }
      key = crypto.subtle.importKey('raw', new TextEncoder().encode(plain), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign', 'verify']);
      // One entry per Application: a rotated secret's entry goes with the next miss.
      if (this.hmacKeys.size >= this.state.counts().applications + 16) this.hmacKeys.clear();
      this.hmacKeys.set(sealed, key);
    }
    return key;
  }

  private privateKey(key: SigningKey): Promise<CryptoKey> {
    let imported = this.privateKeys.get(key.kid);
    if (imported === undefined) {
      const pem = this.sealer.open(key.sealedPrivate, 'signing-key');
      imported = jose().then(({ importPKCS8 }) => importPKCS8(pem, key.alg));
      this.privateKeys.set(key.kid, imported);
    }
    return imported;
  }

  /**
   * Makes new current keys, for every alg or (start-up) only for those without a current key this server key
   * opens: a first start, an upgrade, or a server key replaced by authctl rotate-key. Answers the keys after.
   */
  async rotate(committer: Commits, only: 'all' | 'missing'): Promise<{ readonly keys: readonly SigningKey[]; readonly made: readonly SigningAlg[] }> {
    const seen = new Map(signingAlgs.map((alg) => [alg, currentKey(this.state.meta?.signingKeys, alg)] as const));
    const algs = only === 'all' ? signingAlgs : signingAlgs.filter((alg) => { const k = seen.get(alg); return k === undefined || !this.sealer.opens(k.sealedPrivate, 'signing-key'); });
    if (algs.length === 0) return { keys: this.state.meta?.signingKeys ?? [], made: [] };
    const fresh = await Promise.all(algs.map((alg) => newSigningKey(alg, this.sealer)));
    const expected = only === 'all' ? undefined : new Map(signingAlgs.map((alg) => [alg, seen.get(alg)?.kid] as const));
    const keys = await committer.commit((state, ctx) => rotateSigningKeys(state, fresh, ctx, expected));
    return { keys, made: fresh.filter((k) => keys.some((kept) => kept.kid === k.kid)).map((k) => k.alg) };
  }

  /** Applications whose HS256 secret this server key does not open (sealed under a key since replaced): each needs a new one. */
  unopenedSecrets(): string[] {
    const ids: string[] = [];
    for (const app of this.state.allApplications()) {
      if (app.jwtSecret !== undefined && !this.sealer.opens(app.jwtSecret, 'jwt-secret')) ids.push(app.id);
    }
    return ids;
  }

  /** An HS256 secret as an Application stores it. */
  sealSecret(plain: string): string {
    return this.sealer.seal(plain, 'jwt-secret');
  }

  /** GET /.well-known/jwks.json: the keys published now, made again when they change or one stops being published. */
  jwks(now = Date.now()): string {
    const keys = this.state.meta?.signingKeys;
    const micros = now * 1000;
    const cached = this.jwksText;
    if (cached !== undefined && cached.keys === keys && micros < cached.until) return cached.text;
    const published = (keys ?? []).filter((k) => isPublished(k, micros));
    const until = Math.min(...published.map(publishedUntil));
    const text = JSON.stringify({ keys: published.map((k) => ({ ...k.publicJwk, kid: k.kid, alg: k.alg, use: 'sig' })) });
    this.jwksText = { keys, until, text };
    return text;
  }

  /** GET /.well-known/openid-configuration: where verifiers find the issuer and its keys. */
  discovery(): JsonObject {
    return {
      issuer: this.issuer,
      jwks_uri: `${this.issuer}/.well-known/jwks.json`,
      introspection_endpoint: `${this.issuer}/tokens/introspect`,
      introspection_endpoint_auth_methods_supported: ['client_secret_basic'],
      subject_types_supported: ['public'],
      id_token_signing_alg_values_supported: [...tokenAlgs],
      token_endpoint_auth_signing_alg_values_supported: [...signingAlgs],
      claims_supported: [...claimsSupported],
    };
  }
}

/** Random bytes for jtis, drawn a pool at a time: one call per token was a noticeable part of issuing one. Each byte is used once. */
const jtiPool = Buffer.alloc(tokenJtiPoolBytes);
let jtiPoolAt = tokenJtiPoolBytes;

/** 8 bytes of the issue time in microseconds, then random bytes: unique, and exact for introspection's password check. */
function newJti(micros: number): string {
  if (jtiPoolAt + tokenJtiRandomBytes > tokenJtiPoolBytes) {
    randomFillSync(jtiPool);
    jtiPoolAt = 0;
  }
  const bytes = Buffer.allocUnsafe(jtiTimeBytes + tokenJtiRandomBytes);
  bytes.writeUInt32BE(Math.floor(micros / 2 ** 32), 0);
  bytes.writeUInt32BE(micros % 2 ** 32, 4);
  jtiPool.copy(bytes, jtiTimeBytes, jtiPoolAt, jtiPoolAt + tokenJtiRandomBytes);
  jtiPoolAt += tokenJtiRandomBytes;
  return bytes.toString('base64url');
}
