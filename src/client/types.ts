// What the client sends and gets back: the API's JSON shapes, field names as on the wire.

export type CustomData = Record<string, unknown>;
export type Status = 'ENABLED' | 'DISABLED';
export type UserStatus = 'UNVERIFIED' | 'ENABLED' | 'DISABLED';

export interface Application {
  id: string; name: string; description: string; custom_data: CustomData | null; status: Status;
  tokens: TokenSettings; href: string; created_at: string; modified_at: string;
}

/** How access tokens are signed: Ed25519 or P-256 under the service's published keys, or HS256 under the Application's jwt_secret. */
export type TokenAlg = 'EdDSA' | 'ES256' | 'HS256';

/** Whether a successful POST /authenticate on the Application also answers an access token, for how many seconds, signed how. */
export interface TokenSettings { enabled: boolean; ttl: number; alg: TokenAlg }

/** A create or update that set or generated the HS256 secret answers it, that once; no GET ever shows it. */
export interface ApplicationWritten extends Application { jwt_secret?: string }

/** The answer of a jwt_secret rotation: the new secret, shown this once. */
export interface ApplicationWithSecret extends Application { jwt_secret: string }

export interface Group {
  id: string; name: string; description: string; custom_data: CustomData; status: Status; application: string;
  href: string; created_at: string; modified_at: string;
}

export interface Organization {
  id: string; name: string; description: string; custom_data: CustomData | null; status: Status;
  href: string; created_at: string; modified_at: string;
}

/** What a caller may do: on a User of the base Application, and to narrow an API Key of one (see README, Roles). */
export type Role = 'admin' | 'manager' | 'auditor' | 'authenticator';

export interface OrganizationBrief { id: string; name: string; custom_data: CustomData | null }

/** As read back: never with its secret. */
export interface ApiKey { id: string; name: string; description: string; status: Status; roles?: Role[]; href: string }
/** As created or updated: with its secret. */
export interface ApiKeyWithSecret extends ApiKey { secret: string }

interface UserCommon {
  id: string; username: string; email: string; name: string; status: UserStatus; custom_data: CustomData | null;
  apikeys: ApiKey[]; href: string; created_at: string; modified_at: string;
  /** Only on Users of the base Application. */
  roles?: Role[];
}

/** Create, get, list all, search and authenticate: memberships as full objects. */
export interface User extends UserCommon {
  organization: OrganizationBrief; applications: Application[]; groups: Group[];
}

/** Per-Application, per-Group and per-Organization listings: memberships as ids. */
export interface UserListed extends UserCommon {
  organization: string; applications: string[]; groups: string[];
}

type UserBase = Omit<UserCommon, 'apikeys'>;

/** `minimal` of GET /users and searches: no applications, groups or API Keys. */
export interface UserMinimal extends UserBase { organization: OrganizationBrief }

/** `minimal` of the per-Application, per-Group and per-Organization listings. */
export interface UserListedMinimal extends UserBase { organization: string }

/**
 * The User of a successful POST /authenticate: its own custom_data, its memberships, Organization and API Keys by id
 * and name only (never their custom_data or description; read GET /groups/group/{id} for a Group's).
 */
export interface UserAuthenticated extends UserBase {
  organization: { id: string; name: string } | null;
  applications: { id: string; name: string; status: Status }[];
  groups: { id: string; name: string; status: Status; application: string }[];
  apikeys: { id: string; name: string; status: Status }[];
}

/** `tokens` sets any of its fields; `jwt_secret` (32..512 characters) is the HS256 secret, when given rather than generated. */
export interface ApplicationCreate {
  name: string; description?: string; custom_data?: CustomData | null; tokens?: Partial<TokenSettings>; jwt_secret?: string;
}
export interface ApplicationUpdate {
  name?: string; description?: string; custom_data?: CustomData | null; status?: Status; tokens?: Partial<TokenSettings>; jwt_secret?: string;
}

export interface GroupCreate { name: string; application: string; description?: string; custom_data?: CustomData }
export interface GroupUpdate { name?: string; description?: string; custom_data?: CustomData; status?: Status }

export interface OrganizationCreate { name: string; description?: string; custom_data?: CustomData | null }
export interface OrganizationUpdate { name?: string; description?: string; custom_data?: CustomData | null; status?: Status }

/** Give `password`, or `password_hash` (argon2id PHC or bcrypt) brought from another system. */
export interface UserCreate {
  email: string; password?: string; password_hash?: string; name?: string; custom_data?: CustomData | null;
  applications: string[]; groups?: string[]; organization?: string;
  /** Admin only; for a User of the base Application (default admin). */
  roles?: Role[];
}

/** `applications` and `groups` add memberships (joining the base Application needs `password` too); `organization` moves the User; `roles` (admin only, base Users only) replaces them. */
export interface UserUpdate {
  email?: string; password?: string; name?: string; status?: UserStatus; custom_data?: CustomData | null;
  organization?: string; applications?: string[]; groups?: string[]; roles?: Role[];
}

/** `roles` narrows the owner's for callers using the key (within the owner's roles; a base User's key only). */
export interface ApikeyCreate { name?: string; description?: string; status?: Status; roles?: Role[] }
export type ApikeyUpdate = ApikeyCreate;

export interface AuthenticateInput {
  type: 'username' | 'apikey';
  application: string;
  credential: { username: string; password: string };
  ip_address?: string;
}

/** The three token fields come with a success on an Application whose tokens are enabled. */
export interface AuthenticateResult {
  authenticated: boolean; user?: UserAuthenticated;
  /** A compact JWS whose claims are AccessTokenClaims; check it with AuthClient.verifyAccessToken or POST /tokens/introspect. */
  access_token?: string; token_type?: 'Bearer';
  /** Seconds: the Application's tokens.ttl. */
  expires_in?: number;
}

/** What an access token says. Nothing in it is secret. */
export interface AccessTokenClaims {
  /** The service's public URL, as its openid-configuration names it. */
  iss: string;
  /** The User's id. */
  sub: string;
  /** The Application's id. */
  aud: string;
  /** Seconds since the epoch. */
  iat: number; exp: number;
  jti: string;
  /** How the token was obtained (RFC 8176): `["pwd"]` a password, `["apikey"]` an API Key. */
  amr: string[];
  /** The API Key the token was obtained with; only when `amr` is `["apikey"]`. */
  apikey_id?: string;
  name: string; email: string;
  /** Names of the User's ENABLED Groups in that Application (introspection: as they are now). */
  groups: string[];
  /** The User's Organization's id. */
  org: string;
}

/** POST /tokens/introspect (RFC 7662): inactive says nothing of why. */
export type TokenIntrospection = { active: false } | ({ active: true; token_type: 'Bearer' } & AccessTokenClaims);

/** A key the service signs EdDSA or ES256 tokens with: the current one, and retired ones still published until their last token has expired. */
export interface SigningKey {
  kid: string; alg: 'EdDSA' | 'ES256'; status: 'current' | 'retired'; created_at: string;
  /** Until when a retired key stays in the JWKS; "" for the current key. */
  published_until: string;
}

export interface SnapshotResult {
  taken: boolean; reason?: string;
  /** The snapshot's file name within the server's data directory, not a path. */
  file?: string;
  base_seq?: number; entities?: number; bytes?: number;
  duration_ms?: number; event_loop_delay_max_ms?: number; event_loop_delay_p99_ms?: number;
}

/**
 * Ask for a page: `limit` 1..1000, `cursor` from the previous page's `next`. A page may hold fewer than `limit`
 * items and still have a `next`: the service cuts a page at its byte budget (4 MiB of items).
 */
export interface PageRequest { limit: number; cursor?: string }

/** User listings: `minimal: true` (`?minimal=1`) answers Users without applications, groups and API Keys. */
export interface ListOptions { minimal?: boolean }

/** One page; `next` is absent on the last one. */
export interface Page<T> { items: T[]; next?: string }
