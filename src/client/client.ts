// The typed HTTP client of the service: one method per endpoint, the envelope unwrapped, error envelopes thrown as AuthError.

import type { ErrorCode } from '../domain/errors.js';
import type {
  ApiKey, ApiKeyWithSecret, ApikeyCreate, ApikeyUpdate, Application, ApplicationCreate, ApplicationUpdate,
  AuthenticateInput, AuthenticateResult, Group, GroupCreate, GroupUpdate, Organization, OrganizationCreate,
  ListOptions, OrganizationUpdate, Page, PageRequest, SnapshotResult, User, UserCreate, UserListed, UserListedMinimal, UserMinimal, UserUpdate,
} from './types.js';

/** A code of the service's catalog, or one of the client's own: the server could not be reached, or did not answer as the service does. */
export type AuthErrorCode = ErrorCode | 'unreachable' | 'invalid_response';

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
}

const defaultTimeoutMs = 30_000;

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

  constructor(options: ClientOptions) {
    this.options = options;
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
  }

  /** The same client with other credentials (null: none). */
  as(credentials: Credentials | null): AuthClient {
    return new AuthClient({ ...this.options, credentials });
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
  };

  readonly applications = {
    list: this.listing<Application>('applications', () => '/applications'),
    create: (input: ApplicationCreate): Promise<Application> => this.one('application', 'POST', '/applications/application', input),
    get: (id: string): Promise<Application> => this.one('application', 'GET', `/applications/application/${seg(id)}`),
    update: (id: string, input: ApplicationUpdate): Promise<Application> => this.one('application', 'PUT', `/applications/application/${seg(id)}`, input),
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
