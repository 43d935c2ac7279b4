// Commands to records: (state, validated input, context) -> the ops of one record, or a DomainError. Reads state, writes nothing.

import {
  apikeysPerUserMax, applicationsPerUserMax, groupsPerUserMax,
} from '../config/limits.js';
import type {
  ApiKey, Application, Group, JsonObject, Op, Organization, Status, User, UserStatus,
} from '../domain/entities.js';
import { DomainError } from '../domain/errors.js';
import type { State } from './state.js';

/** Everything non-deterministic a decision needs, handed in so decisions stay testable and apply stays pure. */
export interface DecideContext {
  readonly now: number;
  newId(): string;
  newApikeyId(): string;
  newNonce(): string;
}

export interface Decision<T> {
  readonly ops: Op[];
  readonly result: T;
}

export const defaultOrganizationName = 'default';
export const baseApplicationName = 'authd';

// ---- lookups that answer 404 ----

export function mustApplication(state: State, id: string): Application {
  const app = state.application(id);
  if (app === undefined) throw new DomainError('not_found', `No Application with id ${id}.`);
  return app;
}

export function mustGroup(state: State, id: string): Group {
  const group = state.group(id);
  if (group === undefined) throw new DomainError('not_found', `No Group with id ${id}.`);
  return group;
}

export function mustUser(state: State, id: string): User {
  const user = state.user(id);
  if (user === undefined) throw new DomainError('not_found', `No User with id ${id}.`);
  return user;
}

export function mustApikey(state: State, userId: string, keyId: string): { user: User; key: ApiKey } {
  const user = mustUser(state, userId);
  const key = user.apikeys.find((k) => k.id === keyId);
  if (key === undefined) throw new DomainError('not_found', `No API Key with id ${keyId} for this User.`);
  return { user, key };
}

function isBase(state: State, applicationId: string): boolean {
  return state.meta?.baseApplication === applicationId;
}

/** An administrator: a User of the base Application who may still sign in. */
function isActiveAdmin(state: State, user: User | undefined): boolean {
  const base = state.meta?.baseApplication;
  return user !== undefined && base !== undefined && user.status !== 'DISABLED' && user.applications.includes(base);
}

/** Refuse the change that would leave nobody able to administer the service. */
function keepOneAdmin(state: State, before: User, after: User | undefined): void {
  if (!isActiveAdmin(state, before) || isActiveAdmin(state, after)) return;
  const base = state.meta!.baseApplication;
  const others = state.usersOfApplication(base).some((u) => u.id !== before.id && u.status !== 'DISABLED');
  if (!others) throw new DomainError('last_admin', 'This is the last enabled User of the base Application; add another first.');
}

function refuseDelete(message: string): DomainError {
  return new DomainError('delete_refused', message, { result: { deleted: false } });
}

// ---- applications ----

export interface ApplicationInput {
  name?: string; description?: string; custom_data?: JsonObject | null; status?: Status;
}

export function createApplication(state: State, input: ApplicationInput, ctx: DecideContext): Decision<Application> {
  const app: Application = {
    id: ctx.newId(), name: input.name ?? '', description: input.description ?? '',
    customData: input.custom_data ?? null, status: 'ENABLED', createdAt: ctx.now, modifiedAt: ctx.now,
  };
  return { ops: [{ op: 'put', kind: 'application', value: app }], result: app };
}

export function updateApplication(state: State, id: string, input: ApplicationInput, ctx: DecideContext): Decision<Application> {
  const old = mustApplication(state, id);
  if (isBase(state, id) && input.status === 'DISABLED') {
    throw new DomainError('base_application_protected', 'status: the base Application cannot be disabled.');
  }
  const app: Application = {
    ...old,
    name: input.name ?? old.name,
    description: input.description ?? old.description,
    customData: input.custom_data === undefined ? old.customData : input.custom_data,
    status: input.status ?? old.status,
    modifiedAt: ctx.now,
  };
  return { ops: [{ op: 'put', kind: 'application', value: app }], result: app };
}

export function deleteApplication(state: State, id: string): Decision<true> {
  mustApplication(state, id);
  if (isBase(state, id)) {
    throw new DomainError('base_application_protected', 'The base Application cannot be deleted.', { result: { deleted: false } });
  }
  const app = state.application(id)!;
  if (app.status !== 'DISABLED') throw refuseDelete('An Application must be DISABLED before it is deleted.');
  const users = state.countUsersOfApplication(id);
  if (users > 0) throw refuseDelete(`An Application with associated Users cannot be deleted (${users} associated).`);
  // No Group exists without its Application: its Groups go in the same record.
  const ops: Op[] = state.groupsOfApplication(id).map((g) => ({ op: 'del', kind: 'group', id: g.id }));
  ops.push({ op: 'del', kind: 'application', id });
  return { ops, result: true };
}

// ---- groups ----

export interface GroupInput {
  name?: string; description?: string; custom_data?: JsonObject | null; status?: Status; application?: string;
}

function checkGroupName(state: State, applicationId: string, name: string, selfId: string | undefined): void {
  const clash = state.groupByName(applicationId, name);
  if (clash !== undefined && clash.id !== selfId) {
    throw new DomainError('duplicate_name', `name: a Group named "${name}" already exists in this Application.`);
  }
}

export function createGroup(state: State, input: GroupInput & { name: string; application: string }, ctx: DecideContext): Decision<Group> {
  if (state.application(input.application) === undefined) {
    throw new DomainError('unknown_reference', `application: no Application with id ${input.application}.`);
  }
  checkGroupName(state, input.application, input.name, undefined);
  const group: Group = {
    id: ctx.newId(), name: input.name, description: input.description ?? '', customData: input.custom_data ?? {},
    status: 'ENABLED', application: input.application, createdAt: ctx.now, modifiedAt: ctx.now,
  };
  return { ops: [{ op: 'put', kind: 'group', value: group }], result: group };
}

export function updateGroup(state: State, id: string, input: GroupInput, ctx: DecideContext): Decision<Group> {
  const old = mustGroup(state, id);
  if (input.name !== undefined) checkGroupName(state, old.application, input.name, id);
  const group: Group = {
    ...old,
    name: input.name ?? old.name,
    description: input.description ?? old.description,
    customData: input.custom_data ?? old.customData,
    status: input.status ?? old.status,
    modifiedAt: ctx.now,
  };
  return { ops: [{ op: 'put', kind: 'group', value: group }], result: group };
}

export function deleteGroup(state: State, id: string): Decision<true> {
  const group = mustGroup(state, id);
  if (group.status !== 'DISABLED') throw refuseDelete('A Group must be DISABLED before it is deleted.');
  return { ops: [{ op: 'del', kind: 'group', id }], result: true };
}

// ---- users ----

export interface UserInput {
  email?: string; name?: string; passwordHash?: string; status?: UserStatus; custom_data?: JsonObject | null;
  applications?: string[]; groups?: string[]; organization?: string;
}

function checkEmailFree(state: State, email: string, selfId: string | undefined): void {
  const clash = state.userByEmail(email);
  if (clash !== undefined && clash.id !== selfId) {
    throw new DomainError('duplicate_email', 'email: a User with this email already exists.');
  }
}

/** `added` must exist; `total` (old plus added) must stay within the per-User limits. */
function checkMemberships(
  state: State, added: { applications: readonly string[]; groups: readonly string[] },
  total: { applications: readonly string[]; groups: readonly string[] },
): void {
  for (const a of added.applications) {
    if (state.application(a) === undefined) throw new DomainError('unknown_reference', `applications: no Application with id ${a}.`);
  }
  for (const g of added.groups) {
    if (state.group(g) === undefined) throw new DomainError('unknown_reference', `groups: no Group with id ${g}.`);
  }
  const { applications, groups } = total;
  if (applications.length > applicationsPerUserMax) {
    throw new DomainError('limit_exceeded', `applications: a User may belong to at most ${applicationsPerUserMax} Applications.`);
  }
  if (groups.length > groupsPerUserMax) {
    throw new DomainError('limit_exceeded', `groups: a User may belong to at most ${groupsPerUserMax} Groups.`);
  }
}

function union(old: readonly string[], added: readonly string[] | undefined): readonly string[] {
  if (added === undefined || added.length === 0) return old;
  return [...new Set([...old, ...added])];
}

/** The Organization named by id, else the one named after custom_data.company_name (created if missing), else the default. */
function resolveOrganization(state: State, input: UserInput, customData: JsonObject | null, ctx: DecideContext): { id: string; ops: Op[] } {
  if (input.organization !== undefined) {
    if (state.organization(input.organization) === undefined) {
      throw new DomainError('unknown_reference', `organization: no Organization with id ${input.organization}.`);
    }
    return { id: input.organization, ops: [] };
  }
  const company = customData?.['company_name'];
  if (typeof company === 'string' && company.trim().length > 0) {
    const name = company.trim();
    const existing = state.organizationByName(name);
    if (existing !== undefined) return { id: existing.id, ops: [] };
    const org: Organization = {
      id: ctx.newId(), name, description: '', customData: null, status: 'ENABLED', createdAt: ctx.now, modifiedAt: ctx.now,
    };
    return { id: org.id, ops: [{ op: 'put', kind: 'organization', value: org }] };
  }
  const fallback = state.meta?.defaultOrganization;
  if (fallback === undefined) throw new Error('invariant: no default Organization');
  return { id: fallback, ops: [] };
}

export function createUser(
  state: State, input: UserInput & { email: string; passwordHash: string }, ctx: DecideContext,
): Decision<User> {
  checkEmailFree(state, input.email, undefined);
  const applications = [...new Set(input.applications ?? [])];
  const groups = [...new Set(input.groups ?? [])];
  checkMemberships(state, { applications, groups }, { applications, groups });
  const customData = input.custom_data ?? null;
  const org = resolveOrganization(state, input, customData, ctx);
  const user: User = {
    id: ctx.newId(), email: input.email, name: input.name ?? '', status: 'UNVERIFIED', customData,
    passwordHash: input.passwordHash, organization: org.id, applications, groups, apikeys: [],
    createdAt: ctx.now, modifiedAt: ctx.now,
  };
  return { ops: [...org.ops, { op: 'put', kind: 'user', value: user }], result: user };
}

export function updateUser(state: State, id: string, input: UserInput, ctx: DecideContext): Decision<User> {
  const old = mustUser(state, id);
  if (input.email !== undefined) checkEmailFree(state, input.email, id);
  const applications = union(old.applications, input.applications);
  const groups = union(old.groups, input.groups);
  checkMemberships(state, { applications: input.applications ?? [], groups: input.groups ?? [] }, { applications, groups });
  const organization = input.organization === undefined
    ? old.organization
    : resolveOrganization(state, { organization: input.organization }, null, ctx).id;
  const user: User = {
    ...old,
    email: input.email ?? old.email,
    name: input.name ?? old.name,
    passwordHash: input.passwordHash ?? old.passwordHash,
    status: input.status ?? old.status,
    customData: input.custom_data === undefined ? old.customData : input.custom_data,
    organization, applications, groups,
    modifiedAt: ctx.now,
  };
  keepOneAdmin(state, old, user);
  return { ops: [{ op: 'put', kind: 'user', value: user }], result: user };
}

export function deleteUser(state: State, id: string): Decision<true> {
  const user = mustUser(state, id);
  if (user.status !== 'DISABLED') throw refuseDelete('A User must be DISABLED before it is deleted.');
  return { ops: [{ op: 'del', kind: 'user', id }], result: true };
}

export function removeUserApplication(state: State, userId: string, applicationId: string, ctx: DecideContext): Decision<true> {
  const user = mustUser(state, userId);
  if (!user.applications.includes(applicationId)) {
    throw new DomainError('not_found', `The User is not associated with Application ${applicationId}.`);
  }
  const value: User = { ...user, applications: user.applications.filter((a) => a !== applicationId), modifiedAt: ctx.now };
  keepOneAdmin(state, user, value);
  return { ops: [{ op: 'put', kind: 'user', value }], result: true };
}

export function removeUserGroup(state: State, userId: string, groupId: string, ctx: DecideContext): Decision<true> {
  const user = mustUser(state, userId);
  if (!user.groups.includes(groupId)) throw new DomainError('not_found', `The User is not a member of Group ${groupId}.`);
  const value: User = { ...user, groups: user.groups.filter((g) => g !== groupId), modifiedAt: ctx.now };
  return { ops: [{ op: 'put', kind: 'user', value }], result: true };
}

/** Replace an imported bcrypt hash (or one with old parameters) after a successful login; nothing if the hash changed meanwhile. */
export function rehashPassword(state: State, userId: string, oldHash: string, newHash: string): Decision<User> | undefined {
  const user = state.user(userId);
  if (user === undefined || user.passwordHash !== oldHash) return undefined;
  // modified_at stays: the User did not change, only how its password is stored.
  const value: User = { ...user, passwordHash: newHash };
  return { ops: [{ op: 'put', kind: 'user', value }], result: value };
}

// ---- API keys ----

export interface ApikeyInput { name?: string; description?: string; status?: Status }

function withKey(user: User, key: ApiKey, now: number): User {
  return { ...user, apikeys: user.apikeys.map((k) => (k.id === key.id ? key : k)), modifiedAt: now };
}

export function createApikey(state: State, userId: string, input: ApikeyInput, ctx: DecideContext): Decision<{ user: User; key: ApiKey }> {
  const user = mustUser(state, userId);
  if (user.apikeys.length >= apikeysPerUserMax) {
    throw new DomainError('limit_exceeded', `A User may have at most ${apikeysPerUserMax} API Keys.`);
  }
  let id = ctx.newApikeyId();
  while (state.userByApikey(id) !== undefined) id = ctx.newApikeyId();
  const key: ApiKey = {
    id, name: input.name ?? '', description: input.description ?? '', status: input.status ?? 'ENABLED',
    nonce: ctx.newNonce(), createdAt: ctx.now, modifiedAt: ctx.now,
  };
  const value: User = { ...user, apikeys: [...user.apikeys, key], modifiedAt: ctx.now };
  return { ops: [{ op: 'put', kind: 'user', value }], result: { user: value, key } };
}

export function updateApikey(
  state: State, userId: string, keyId: string, input: ApikeyInput, ctx: DecideContext,
): Decision<{ user: User; key: ApiKey }> {
  const { user, key: old } = mustApikey(state, userId, keyId);
  const key: ApiKey = {
    ...old,
    name: input.name ?? old.name,
    description: input.description ?? old.description,
    status: input.status ?? old.status,
    modifiedAt: ctx.now,
  };
  const value = withKey(user, key, ctx.now);
  return { ops: [{ op: 'put', kind: 'user', value }], result: { user: value, key } };
}

export function deleteApikey(state: State, userId: string, keyId: string, ctx: DecideContext): Decision<true> {
  const { user, key } = mustApikey(state, userId, keyId);
  if (key.status !== 'DISABLED') throw refuseDelete('An API Key must be DISABLED before it is deleted.');
  const value: User = { ...user, apikeys: user.apikeys.filter((k) => k.id !== keyId), modifiedAt: ctx.now };
  return { ops: [{ op: 'put', kind: 'user', value }], result: true };
}

// ---- first start ----

/** The base Application, the default Organization and the first admin User, in one record. */
export function bootstrap(state: State, admin: { email: string; passwordHash: string }, ctx: DecideContext): Decision<User> {
  if (state.meta !== undefined) throw new Error('invariant: already bootstrapped');
  const org: Organization = {
    id: ctx.newId(), name: defaultOrganizationName, description: 'Users created without an Organization or company name.',
    customData: null, status: 'ENABLED', createdAt: ctx.now, modifiedAt: ctx.now,
  };
  const app: Application = {
    id: ctx.newId(), name: baseApplicationName, description: 'The base Application: its Users administer this service.',
    customData: null, status: 'ENABLED', createdAt: ctx.now, modifiedAt: ctx.now,
  };
  const user: User = {
    id: ctx.newId(), email: admin.email, name: 'Administrator', status: 'ENABLED', customData: null,
    passwordHash: admin.passwordHash, organization: org.id, applications: [app.id], groups: [], apikeys: [],
    createdAt: ctx.now, modifiedAt: ctx.now,
  };
  return {
    ops: [
      { op: 'put', kind: 'meta', value: { baseApplication: app.id, defaultOrganization: org.id } },
      { op: 'put', kind: 'organization', value: org },
      { op: 'put', kind: 'application', value: app },
      { op: 'put', kind: 'user', value: user },
    ],
    result: user,
  };
}
