// The typed HTTP client of the service: one method per endpoint, the envelope unwrapped, error envelopes thrown as AuthError, access tokens verified locally.

import type { JWTVerifyGetKey, JWTVerifyOptions } from 'jose';
import type { ErrorCode } from '../domain/errors.js';
import type {
  AccessTokenClaims, ApiKey, ApiKeyWithSecret, ApikeyCreate, ApikeyUpdate, Application, ApplicationCreate, ApplicationUpdate,
  ApplicationWithSecret, ApplicationWritten, AuthenticateInput, AuthenticateResult, Group, GroupCreate, GroupUpdate, Organization,
  OrganizationCreate, ListOptions, OrganizationUpdate, Page, PageRequest, SigningKey, SnapshotResult, TokenIntrospection, User,
  UserCreate, UserListed, UserListedMinimal, UserMinimal, UserUpdate,
} from './types.js';

/**
 * A code of the service's catalog, or one of the client's own: the server could not be reached, did not answer as the
 * service does, or (verifyAccessToken) the access token is not one to accept.
 */
export type AuthErrorCode = ErrorCode | 'unreachable' | 'invalid_response' | 'invalid_token';

/** An error answer of the service (or a failure to get one), with the HTTP status (0 when unreachable) and the stable code. */
export class AuthError extends Error {
  readonly status: number;
  readonly code: AuthErrorCode;
  /** Extra result keys beside the error: a refused delete carries {deleted: false}. */
  readonly result: Record<string, unknown> | undefined;
  /** Seconds, from Retry-After (503 overloaded). */
  readonly retryAfterS: number | undefined;

  // Fields assigned one by one rather than as parameter properties: a consumer's erasableSyntaxOnly refuses those.
  constructor(
    status: number, code: AuthErrorCode, message: string, result?: Record<string, unknown>, retryAfterS?: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'AuthError';
    this.status = status;
    this.code = code;
    this.result = result;
    this.retryAfterS = retryAfterS;
  }
}

export interface Credentials {
  readonly username: string;
  readonly password: string;
}

export interface RawResponse {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  /** The parsed body; undefined when it is not JSON. */
  readonly json: unknown;
}

export interface SendOptions {
  /** Sent as JSON with Content-Type application/json. */
  readonly json?: unknown;
  /** Sent as is; Content-Type only if given in headers. */
  readonly raw?: string | Uint8Array;
  readonly headers?: Readonly<Record<string, string>>;
  /** Overrides the client's credentials for this request; null sends none. */
  readonly credentials?: Credentials | null;
  readonly query?: Readonly<Record<string, string | number | undefined>>;
}

export interface ClientOptions {
  /** Where the service answers, e.g. `http://localhost:8080` (a trailing slash is ignored). */
  readonly baseUrl: string;
  /** Email and password, or API Key id and secret, of a User of the base Application. */
  readonly credentials?: Credentials | null;
  /** Per request; default 30 s. */
  readonly timeoutMs?: number;
  /** Sees every response (a test keeps a transcript of them). */
  readonly onResponse?: (res: RawResponse) => void;
  /** The Application id verifyAccessToken expects as `aud` when a call names none. */
  readonly tokenAudience?: string;
  /**
   * After fetching the JWKS, how long a token with a `kid` not in it is refused without fetching again, so that a
   * flood of made-up kids costs the service at most one fetch per period; default 30 s.
   */
  readonly jwksCooldownMs?: number;
}

const defaultTimeoutMs = 30_000;
const defaultJwksCooldownMs = 30_000;
/** Clock difference between this host and the service's that verifyAccessToken forgives on exp, iat and nbf. */
const defaultClockToleranceS = 5;
/** Verification by the service's published keys; HS256 only with an Application's secret, so a public key can never pass as an HMAC secret. */
const publishedKeyAlgs: NonNullable<JWTVerifyOptions['algorithms']> = ['EdDSA', 'ES256'];
const secretAlgs: NonNullable<JWTVerifyOptions['algorithms']> = ['HS256'];
/** Claims a token of the service always has; jose checks exp only when present, so it is required here. */
const requiredClaims = ['sub', 'iat', 'exp'];
const jwksPath = '/.well-known/jwks.json';
const discoveryPath = '/.well-known/openid-configuration';

export interface VerifyAccessTokenOptions {
  /** The Application id the token must be for (`aud`); default the client's `tokenAudience`. One of them is required. */
  readonly audience?: string;
  /** The `iss` to expect; default the `issuer` of the service's /.well-known/openid-configuration, read once. */
  readonly issuer?: string;
  /** Seconds of clock difference forgiven on `exp`, `iat` and `nbf`; default 5. */
  readonly clockToleranceS?: number;
  /** The Application's jwt_secret: accepts HS256 tokens signed with it, and then only those. */
  readonly secret?: string;
}

/** What verifyAccessToken keeps between calls; shared by the clients as() makes, since none of it depends on credentials. */
interface TokenVerifierState {
  issuer: Promise<string> | undefined;
  jwks: JWTVerifyGetKey | undefined;
}

/** jose is loaded on the first verification only: the CLI and clients that never verify a token do not pay its load time. */
let joseLoading: Promise<typeof import('jose')> | undefined;
function loadJose(): Promise<typeof import('jose')> {
  joseLoading ??= import('jose');
  return joseLoading;
}

/** A listing: whole without arguments, one page with a PageRequest. */
export interface Listing<T> {
  (): Promise<T[]>;
  (page: PageRequest): Promise<Page<T>>;
}

/** A listing of Users: `{ minimal: true }`, alone or with a page, answers them as M (without applications, groups and API Keys). */
export interface UserListing<T, M> {
  (): Promise<T[]>;
  (options: ListOptions & { minimal: true }): Promise<M[]>;
  (options: ListOptions & { minimal?: false }): Promise<T[]>;
  (page: PageRequest & ListOptions & { minimal: true }): Promise<Page<M>>;
  (page: PageRequest & ListOptions & { minimal?: false }): Promise<Page<T>>;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const seg = encodeURIComponent;

export class AuthClient {
  readonly baseUrl: string;
  private readonly options: ClientOptions;
  private tokenVerifier: TokenVerifierState = { issuer: undefined, jwks: undefined };

  constructor(options: ClientOptions) {
    this.options = options;
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
  }

  /** The same client with other credentials (null: none). */
  as(credentials: Credentials | null): AuthClient {
    const other = new AuthClient({ ...this.options, credentials });
    other.tokenVerifier = this.tokenVerifier;
    return other;
  }

  /** One HTTP request, answered whatever its status: for what the typed methods do not cover. */
  async send(method: string, path: string, opts: SendOptions = {}): Promise<RawResponse> {
    const headers: Record<string, string> = {};
    const credentials = opts.credentials === undefined ? this.options.credentials ?? null : opts.credentials;
    if (credentials !== null) {
      headers['Authorization'] = `Basic ${Buffer.from(`${credentials.username}:${credentials.password}`, 'utf8').toString('base64')}`;
    }
    let body: string | Uint8Array<ArrayBuffer> | undefined;
    if (opts.raw !== undefined) {
      // A copy typed over a plain ArrayBuffer is what fetch's BodyInit accepts.
      body = typeof opts.raw === 'string' ? opts.raw : new Uint8Array(opts.raw);
    } else if (opts.json !== undefined) {
      body = JSON.stringify(opts.json);
      headers['Content-Type'] = 'application/json';
    }
    Object.assign(headers, opts.headers);
    let url = this.baseUrl + path;
    if (opts.query !== undefined) {
      const params = new URLSearchParams();
      for (const [k, v] of Object.entries(opts.query)) if (v !== undefined) params.set(k, String(v));
      const q = params.toString();
      if (q.length > 0) url += `?${q}`;
    }
    let res: Response;
    let text: string;
    try {
      res = await fetch(url, { method, headers, body: body ?? null, signal: AbortSignal.timeout(this.options.timeoutMs ?? defaultTimeoutMs) });
      text = await res.text();
    } catch (err) {
      const why = err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err);
      throw new AuthError(0, 'unreachable', `cannot reach ${this.baseUrl}: ${why}`, undefined, undefined, { cause: err });
    }
    let json: unknown;
    try { json = JSON.parse(text); } catch { json = undefined; }
    const out: RawResponse = { status: res.status, headers: res.headers, text, json };
    this.options.onResponse?.(out);
    return out;
  }

  /** One call: the envelope's `result`, or the error envelope thrown as AuthError. */
  async call<T>(method: string, path: string, opts: SendOptions = {}): Promise<T> {
    return this.unwrap<T>(method, path, await this.send(method, path, opts));
  }

  private unwrap<T>(method: string, path: string, res: RawResponse): T {
    const service = isObject(res.json) ? res.json['service'] : undefined;
    if (isObject(service) && isObject(service['error'])) {
      const e = service['error'];
      const retry = res.headers.get('retry-after');
      throw new AuthError(
        typeof e['status'] === 'number' ? e['status'] : res.status, String(e['code']) as AuthErrorCode, String(e['message']),
        isObject(service['result']) ? service['result'] : undefined, retry === null ? undefined : Number(retry),
      );
    }
    if (res.status !== 200 || !isObject(service) || !isObject(service['result'])) {
      throw new AuthError(res.status, 'invalid_response', `${method} ${path}: not an answer of the service (HTTP ${res.status}): ${res.text.slice(0, 200)}`);
    }
    return service['result'] as T;
  }

  private async one<T>(key: string, method: string, path: string, json?: unknown): Promise<T> {
    const result = await this.call<Record<string, unknown>>(method, path, { json });
    if (!(key in result)) throw new AuthError(200, 'invalid_response', `${method} ${path}: the result has no "${key}"`);
    return result[key] as T;
  }

  private async remove(path: string): Promise<true> {
    await this.call('DELETE', path);
    return true;
  }

  private listing<T>(key: string, path: () => string): Listing<T> {
    const list = async (page?: Partial<PageRequest> & ListOptions): Promise<T[] | Page<T>> => {
      const paged = page?.limit !== undefined;
      const query = { limit: page?.limit, cursor: paged ? page?.cursor : undefined, minimal: page?.minimal === true ? 1 : undefined };
      const result = await this.call<Record<string, unknown>>('GET', path(), { query });
      const items = result[key];
      if (!Array.isArray(items)) throw new AuthError(200, 'invalid_response', `GET ${path()}: the result has no "${key}" list`);
      if (!paged) return items as T[];
      const next = result['next'];
      return typeof next === 'string' ? { items: items as T[], next } : { items: items as T[] };
    };
    return list as Listing<T>;
  }

  private userListing<T, M>(key: string, path: () => string): UserListing<T, M> {
    return this.listing<T>(key, path) as unknown as UserListing<T, M>;
  }

  /** Every item of a paged listing, fetched `limit` at a time: `for await (const u of client.paginate((p) => client.users.list(p)))`. */
  async *paginate<T>(list: (page: PageRequest) => Promise<Page<T>>, limit = 100): AsyncGenerator<T> {
    let cursor: string | undefined;
    do {
      const page = await list(cursor === undefined ? { limit } : { limit, cursor });
      yield* page.items;
      cursor = page.next;
    } while (cursor !== undefined);
  }

  // ---- the service ----

  async health(): Promise<{ status: string }> {
    return this.call('GET', '/health', { credentials: null });
  }

  authenticate(input: AuthenticateInput): Promise<AuthenticateResult> {
    return this.call('POST', '/authenticate', { json: input });
  }

  /** Asks the service whether a token is still good: unlike verifyAccessToken, this sees a User disabled or changed since it was issued. */
  introspectToken(token: string): Promise<TokenIntrospection> {
    return this.call('POST', '/tokens/introspect', { json: { token } });
  }

  /**
   * Checks an access token here, without asking the service: signature by a key of the service's JWKS (EdDSA or
   * ES256; fetched once, fetched again for an unknown kid, at most once per jwksCooldownMs), or by `secret` (HS256
   * only); `iss`, `aud` and `exp`. Answers its claims, or throws AuthError 401 `invalid_token` with jose's reason as
   * `cause`; AuthError `unreachable` or `invalid_response` when the JWKS or openid-configuration cannot be read. A
   * token stays good here until it expires, even if its User is disabled meanwhile: introspectToken sees that.
   */
  async verifyAccessToken(token: string, options: VerifyAccessTokenOptions = {}): Promise<AccessTokenClaims> {
    const audience = options.audience ?? this.options.tokenAudience;
    if (audience === undefined || audience === '') {
      throw new TypeError('verifyAccessToken needs an audience: the Application id, as its audience option or the client\'s tokenAudience');
    }
    if (options.secret === '') throw new TypeError('verifyAccessToken: an empty secret');
    const clockToleranceS = options.clockToleranceS ?? defaultClockToleranceS;
    if (!Number.isFinite(clockToleranceS) || clockToleranceS < 0) throw new TypeError('verifyAccessToken: clockToleranceS must be a finite number >= 0');
    const jose = await loadJose();
    const issuer = options.issuer ?? await this.tokenIssuer();
    const common: JWTVerifyOptions = { issuer, audience, clockTolerance: clockToleranceS, requiredClaims };
    try {
      const { payload } = options.secret === undefined
        ? await jose.jwtVerify(token, this.publishedKeys(jose), { ...common, algorithms: publishedKeyAlgs })
        : await jose.jwtVerify(token, new TextEncoder().encode(options.secret), { ...common, algorithms: secretAlgs });
      return payload as unknown as AccessTokenClaims;
    } catch (err) {
      if (err instanceof jose.errors.JOSEError) throw new AuthError(401, 'invalid_token', 'the access token is not valid', undefined, undefined, { cause: err });
      throw err;
    }
  }

  /** The issuer of the service's openid-configuration, read once; a failed read is not kept, so the next call tries again. */
  private tokenIssuer(): Promise<string> {
    const state = this.tokenVerifier;
    state.issuer ??= (async () => {
      const res = await this.send('GET', discoveryPath, { credentials: null });
      const issuer = isObject(res.json) ? res.json['issuer'] : undefined;
      if (res.status !== 200 || typeof issuer !== 'string' || issuer === '') {
        throw new AuthError(res.status, 'invalid_response', `GET ${discoveryPath}: not the service's discovery document (HTTP ${res.status})`);
      }
      return issuer;
    })().catch((err: unknown) => {
      state.issuer = undefined;
      throw err;
    });
    return state.issuer;
  }

  /** jose's remote key set over this client's requests: cached, fetched again for an unknown kid once the cooldown has passed. */
  private publishedKeys(jose: typeof import('jose')): JWTVerifyGetKey {
    this.tokenVerifier.jwks ??= jose.createRemoteJWKSet(new URL(this.baseUrl + jwksPath), {
      cooldownDuration: this.options.jwksCooldownMs ?? defaultJwksCooldownMs,
      // Through send(), so that onResponse sees the fetch and a failure is the client's own AuthError, not a token's.
      [jose.customFetch]: () => this.fetchJwks(),
    });
    return this.tokenVerifier.jwks;
  }

  private async fetchJwks(): Promise<Response> {
    const res = await this.send('GET', jwksPath, { credentials: null });
    if (res.status !== 200 || !isObject(res.json) || !Array.isArray(res.json['keys'])) {
      throw new AuthError(res.status, 'invalid_response', `GET ${jwksPath}: not a JSON Web Key Set (HTTP ${res.status})`);
    }
    return new Response(res.text, { status: 200, headers: { 'Content-Type': 'application/json' } });
  }

  /** The OpenAPI 3.1 document (served without credentials). */
  async openapi(): Promise<Record<string, unknown>> {
    const res = await this.send('GET', '/openapi.json', { credentials: null });
    if (res.status !== 200 || !isObject(res.json)) throw new AuthError(res.status, 'invalid_response', 'GET /openapi.json: not a JSON document');
    return res.json;
  }

  /** Prometheus text. */
  async metrics(): Promise<string> {
    const res = await this.send('GET', '/metrics');
    if (res.status === 200 && res.json === undefined) return res.text;
    // An error envelope becomes its AuthError; anything else is not what the service answers.
    this.unwrap('GET', '/metrics', res);
    throw new AuthError(res.status, 'invalid_response', 'GET /metrics: not Prometheus text');
  }

  readonly admin = {
    snapshot: (): Promise<SnapshotResult> => this.one('snapshot', 'POST', '/admin/snapshot'),
    /** A new current signing key; the old one stays published until the last token it signed has expired. */
    rotateSigningKeys: (): Promise<SigningKey[]> => this.one('signing_keys', 'POST', '/admin/signing-keys/rotate'),
  };

  readonly applications = {
    list: this.listing<Application>('applications', () => '/applications'),
    create: (input: ApplicationCreate): Promise<ApplicationWritten> => this.one('application', 'POST', '/applications/application', input),
    get: (id: string): Promise<Application> => this.one('application', 'GET', `/applications/application/${seg(id)}`),
    update: (id: string, input: ApplicationUpdate): Promise<ApplicationWritten> => this.one('application', 'PUT', `/applications/application/${seg(id)}`, input),
    /** A new generated HS256 secret, answered this once; tokens signed with the old one no longer verify. */
    rotateJwtSecret: (id: string): Promise<ApplicationWithSecret> => this.one('application', 'POST', `/applications/application/${seg(id)}/jwt-secret`),
    delete: (id: string): Promise<true> => this.remove(`/applications/application/${seg(id)}`),
    users: (id: string): UserListing<UserListed, UserListedMinimal> => this.userListing('users', () => `/applications/application/${seg(id)}/users`),
    groups: (id: string): Listing<Group> => this.listing('groups', () => `/applications/application/${seg(id)}/groups`),
  };

  readonly groups = {
    list: this.listing<Group>('groups', () => '/groups'),
    create: (input: GroupCreate): Promise<Group> => this.one('group', 'POST', '/groups/group', input),
    get: (id: string): Promise<Group> => this.one('group', 'GET', `/groups/group/${seg(id)}`),
    update: (id: string, input: GroupUpdate): Promise<Group> => this.one('group', 'PUT', `/groups/group/${seg(id)}`, input),
    delete: (id: string): Promise<true> => this.remove(`/groups/group/${seg(id)}`),
    users: (id: string): UserListing<UserListed, UserListedMinimal> => this.userListing('users', () => `/groups/group/${seg(id)}/users`),
  };

  readonly organizations = {
    list: this.listing<Organization>('organizations', () => '/organizations'),
    create: (input: OrganizationCreate): Promise<Organization> => this.one('organization', 'POST', '/organizations/organization', input),
    get: (id: string): Promise<Organization> => this.one('organization', 'GET', `/organizations/organization/${seg(id)}`),
    update: (id: string, input: OrganizationUpdate): Promise<Organization> => this.one('organization', 'PUT', `/organizations/organization/${seg(id)}`, input),
    delete: (id: string): Promise<true> => this.remove(`/organizations/organization/${seg(id)}`),
    users: (id: string): UserListing<UserListed, UserListedMinimal> => this.userListing('users', () => `/organizations/organization/${seg(id)}/users`),
  };

  readonly users = {
    list: this.userListing<User, UserMinimal>('users', () => '/users'),
    search: (term: string): UserListing<User, UserMinimal> => this.userListing('users', () => `/users/search/${seg(term)}`),
    create: (input: UserCreate): Promise<User> => this.one('user', 'POST', '/users/user', input),
    get: (id: string): Promise<User> => this.one('user', 'GET', `/users/user/${seg(id)}`),
    update: (id: string, input: UserUpdate): Promise<User> => this.one('user', 'PUT', `/users/user/${seg(id)}`, input),
    delete: (id: string): Promise<true> => this.remove(`/users/user/${seg(id)}`),
    removeApplication: (id: string, applicationId: string): Promise<true> => this.remove(`/users/user/${seg(id)}/application/${seg(applicationId)}`),
    removeGroup: (id: string, groupId: string): Promise<true> => this.remove(`/users/user/${seg(id)}/group/${seg(groupId)}`),
  };

  readonly apikeys = {
    create: (userId: string, input: ApikeyCreate = {}): Promise<ApiKeyWithSecret> => this.one('apikey', 'POST', `/users/user/${seg(userId)}/apikey`, input),
    get: (userId: string, keyId: string): Promise<ApiKey> => this.one('apikey', 'GET', `/users/user/${seg(userId)}/apikey/${seg(keyId)}`),
    update: (userId: string, keyId: string, input: ApikeyUpdate): Promise<ApiKeyWithSecret> => this.one('apikey', 'PUT', `/users/user/${seg(userId)}/apikey/${seg(keyId)}`, input),
    /** A DISABLED key authenticates nobody; it can be deleted afterwards. */
    disable: (userId: string, keyId: string): Promise<ApiKeyWithSecret> => this.one('apikey', 'PUT', `/users/user/${seg(userId)}/apikey/${seg(keyId)}`, { status: 'DISABLED' }),
    delete: (userId: string, keyId: string): Promise<true> => this.remove(`/users/user/${seg(userId)}/apikey/${seg(keyId)}`),
  };
}
