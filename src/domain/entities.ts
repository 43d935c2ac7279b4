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

export interface Application {
  readonly id: string;
  readonly name: string;
  readonly description: string;
  readonly customData: JsonObject | null;
  readonly status: Status;
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
  readonly organization: string;
  readonly applications: readonly string[];
  readonly groups: readonly string[];
  readonly apikeys: readonly ApiKey[];
  /** What the User may do as a caller of the base Application; absent: admin. */
  readonly roles?: readonly Role[];
  readonly createdAt: number;
  readonly modifiedAt: number;
}

/** Service-wide facts fixed at first start. */
export interface Meta {
  readonly baseApplication: string;
  readonly defaultOrganization: string;
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
