// Which strings and lists of an entity go through a snapshot's dictionary, and the empty lists a load shares: what keeps a million decoded Users from holding a million copies of the same values.
//
// The decoder makes a new string for every string it reads, so a million Users would hold a million
// copies of their Organization's id, of each Application and Group id, of their status and of common
// custom_data values. A snapshot writes each such string once, in its dictionary, and refers to it
// everywhere else (src/persist/snapshot.ts); the load then hands every entity the one copy, with no
// lookup per value. Entities' own ids go in too, so the references to them share the same copy.
// At a million Users that is hundreds of MB less heap after the load.
// A User's membership lists go in whole: Users in the same Applications (or Groups) then hold one frozen
// array between them instead of an array and its backing store each.

import type { ApiKey, Application, EntityKind, Group, JsonObject, Organization, User } from '../domain/entities.js';

/**
 * What the snapshot writer passes for a string: the dictionary's reference to it, or the string in a form
 * a load makes into a string of its own. `repeated` false: a string only this entity holds (a User's id,
 * email, name, password hash), which never takes a dictionary entry (src/persist/snapshot.ts says why).
 */
export type ShareString = (s: string, repeated?: boolean) => unknown;
/** And for a list of strings (a User's memberships): a reference to the one copy every User with that list gets, or the list written out. */
export type ShareList = (list: readonly string[]) => unknown;

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

const emptyList: readonly never[] = Object.freeze([]);

/** Top-level string values only: custom_data is usually a flat bag of labels (plan, locale, company). */
function sharedCustomData(data: JsonObject | null, share: ShareString): JsonObject | null {
  if (data === null) return null;
  const out: Record<string, unknown> = { ...data };
  for (const key in out) {
    const value = out[key];
    if (typeof value === 'string') out[key] = share(value);
  }
  return out as JsonObject;
}

/** Each string field of an API Key in its place (the key order, and so the record structure, stays the key's own). */
function sharedApiKey(key: ApiKey, share: ShareString): unknown {
  const out: Record<string, unknown> = { ...key };
  for (const field of ['id', 'name', 'description', 'status', 'nonce'] as const) {
    const value = key[field];
    // Its id and nonce are the key's alone; a name, a description and the status often repeat.
    if (typeof value === 'string') out[field] = share(value, field !== 'id' && field !== 'nonce');
  }
  return out;
}

/**
 * The form in which a snapshot writes an entity: a copy whose shareable strings went through `share`
 * (the key order stays that of the entity, so its msgpack record structure does not change).
 */
export function withSharedStrings(kind: EntityKind, value: unknown, share: ShareString, shareList: ShareList): unknown {
  switch (kind) {
    case 'meta': return value;
    case 'user': {
      const user = value as User;
      return {
        ...user,
        id: share(user.id, false),
        email: share(user.email, false),
        name: share(user.name, false),
        passwordHash: share(user.passwordHash, false),
        status: share(user.status),
        organization: share(user.organization),
        applications: shareList(user.applications),
        groups: shareList(user.groups),
        apikeys: user.apikeys.length === 0 ? user.apikeys : user.apikeys.map((key) => sharedApiKey(key, share)),
        customData: sharedCustomData(user.customData, share),
      };
    }
    case 'group': {
      const group = value as Group;
      return { ...group, id: share(group.id), status: share(group.status), customData: sharedCustomData(group.customData, share), application: share(group.application) };
    }
    case 'application':
    case 'organization': {
      const entity = value as Application | Organization;
      return { ...entity, id: share(entity.id), status: share(entity.status), customData: sharedCustomData(entity.customData, share) };
    }
  }
}

/** A User just decoded from a snapshot, changed in place: its empty lists become the one shared empty list. */
export function shareEmptyLists(decoded: User): void {
  const user = decoded as Mutable<User>;
  if (user.applications.length === 0) user.applications = emptyList;
  if (user.groups.length === 0) user.groups = emptyList;
  if (user.apikeys.length === 0) user.apikeys = emptyList;
}
