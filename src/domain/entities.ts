// Entity and log-record types as stored in memory, in the log and in snapshots; imports only the Role type.

import type { Role } from './roles.js';
//
// Entities are immutable values: every change makes a new object, which is what lets a snapshot
// be written a chunk at a time while serving, and lets rendered JSON be cached per object.
// Times are integer microseconds since the Unix epoch (0 means "no time", rendered as "").

export type JsonValue = null | boolean | number | string | JsonValue[] | JsonObject;
export interface JsonObject { [key: string]: JsonValue }

export type Status = 'ENABLED' | 'DISABLED';
export type UserStatus = 'UNVERIFIED' | 'ENABLED' | 'DISABLED';

/** How an access token may be signed (src/tokens/). */
export const tokenAlgs = ['EdDSA', 'ES256', 'HS256'] as const;
export type TokenAlg = (typeof tokenAlgs)[number];
/** The algorithms signed with the service's own keys (published in the JWKS); HS256 uses an Application's secret. */
export const signingAlgs = ['EdDSA', 'ES256'] as const satisfies readonly TokenAlg[];
export type SigningAlg = (typeof signingAlgs)[number];

/** Whether POST /authenticate also answers an access token, how long it lives and how it is signed. */
export interface TokenSettings {
  readonly enabled: boolean;
  /** Seconds. */
  readonly ttl: number;
  readonly alg: TokenAlg;
}

export interface Application {
  readonly id: string;
  readonly name: string;
  readonly description: string;
  readonly customData: JsonObject | null;
  readonly status: Status;
  /** Absent: tokens disabled (the default, and every Application stored before tokens existed). */
  readonly tokens?: TokenSettings;
  /** The HS256 secret, sealed under the server key (src/tokens/sealer.ts); never rendered. */
  readonly jwtSecret?: string;
  readonly createdAt: number;
  readonly modifiedAt: number;
}

export interface Group {
  readonly id: string;
  readonly name: string;
  readonly description: string;
  readonly customData: JsonObject;
  readonly status: Status;
  readonly application: string;
  readonly createdAt: number;
  readonly modifiedAt: number;
}

export interface Organization {
  readonly id: string;
  readonly name: string;
  readonly description: string;
  readonly customData: JsonObject | null;
  readonly status: Status;
  readonly createdAt: number;
  readonly modifiedAt: number;
}

export interface ApiKey {
  readonly id: string;
  readonly name: string;
  readonly description: string;
  readonly status: Status;
  /** Random, public-safe input from which the secret is derived under the server key (src/auth/apikey-secrets.ts). */
  readonly nonce: string;
  /** Narrows what a caller with this key may do (src/domain/roles.ts); absent: what its owner may. */
  readonly roles?: readonly Role[];
  readonly createdAt: number;
  readonly modifiedAt: number;
}

export interface User {
  readonly id: string;
  readonly email: string;
  readonly name: string;
  readonly status: UserStatus;
  readonly customData: JsonObject | null;
  /** PHC string: argon2id, or bcrypt brought in by import (re-hashed on the next successful login). */
  readonly passwordHash: string;
  /** When the password was last changed (not re-hashed): tokens issued before it are no longer active. Absent: never. */
  readonly passwordChangedAt?: number;
  readonly organization: string;
  readonly applications: readonly string[];
  readonly groups: readonly string[];
  readonly apikeys: readonly ApiKey[];
  /** What the User may do as a caller of the base Application; absent: admin. */
  readonly roles?: readonly Role[];
  readonly createdAt: number;
  readonly modifiedAt: number;
}

/** A key the service signs access tokens with; the private half sealed under the server key. */
export interface SigningKey {
  /** The JWK thumbprint (RFC 7638) of the public key. */
  readonly kid: string;
  readonly alg: SigningAlg;
  /** The public key as a JWK (kty, crv, x[, y]). */
  readonly publicJwk: JsonObject;
  /** PKCS#8 PEM of the private key, sealed (src/tokens/sealer.ts). */
  readonly sealedPrivate: string;
  readonly createdAt: number;
  /** When a newer key replaced it (0: the current key of its alg); it stays published for signingKeyPublishedAfterRetireMs after. */
  readonly retiredAt: number;
}

/** Service-wide facts: fixed at first start, but for the signing keys, which rotation replaces. */
export interface Meta {
  readonly baseApplication: string;
  readonly defaultOrganization: string;
  /** Absent until the first start that knows tokens. */
  readonly signingKeys?: readonly SigningKey[];
}

export interface EntityByKind {
  application: Application;
  group: Group;
  organization: Organization;
  user: User;
  meta: Meta;
}
export type EntityKind = keyof EntityByKind;
export const entityKinds: readonly EntityKind[] = ['meta', 'organization', 'application', 'group', 'user'];

/** Effects, not intents: a put carries the whole entity, a delete its id. Applying one twice equals once. */
export type Op =
  | { readonly op: 'put'; readonly kind: 'application'; readonly value: Application }
  | { readonly op: 'put'; readonly kind: 'group'; readonly value: Group }
  | { readonly op: 'put'; readonly kind: 'organization'; readonly value: Organization }
  | { readonly op: 'put'; readonly kind: 'user'; readonly value: User }
  | { readonly op: 'put'; readonly kind: 'meta'; readonly value: Meta }
  | { readonly op: 'del'; readonly kind: EntityKind; readonly id: string };

/** One mutation = one record; its ops apply together or not at all. */
export interface LogRecord {
  readonly seq: number;
  /** Microseconds since the epoch when the record was decided. */
  readonly at: number;
  readonly ops: readonly Op[];
}
