// Commands to records: (state, validated input, context) -> the ops of one record, or a DomainError. Reads state, writes nothing.

import {
  apikeysPerUserMax, applicationsPerUserMax, groupsPerUserMax, tokenTtlSecondsDefault,
} from '../config/limits.js';
import type {
  ApiKey, Application, Group, JsonObject, Meta, Op, Organization, SigningAlg, SigningKey, Status, TokenSettings, User, UserStatus,
} from '../domain/entities.js';
import { emailKey, normalizeEmail } from '../domain/email.js';
import { currentKey, isPublished } from '../domain/signing-keys.js';
import { DomainError, invalidField } from '../domain/errors.js';
import { isAdminRoles, rolesOfUser, rolesWithin, type Role } from '../domain/roles.js';
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

/** An administrator: a User of the base Application with the admin role who may still sign in. */
function isActiveAdmin(state: State, user: User | undefined): boolean {
  return user !== undefined && user.status !== 'DISABLED' && state.isBaseUser(user) && isAdminRoles(rolesOfUser(true, user.roles));
}

/** Refuse the change that would leave nobody able to administer the service. */
function keepOneAdmin(state: State, before: User, after: User | undefined): void {
  if (!isActiveAdmin(state, before) || isActiveAdmin(state, after)) return;
  const base = state.meta!.baseApplication;
  const others = state.usersOfApplication(base).some((u) => u.id !== before.id && isActiveAdmin(state, u));
  if (!others) throw new DomainError('last_admin', 'This is the last enabled admin of the base Application; make another admin first.');
}

/** Roles as given, without repeats; undefined keeps what was there. */
function withRoles<T extends { readonly roles?: readonly Role[] }>(entity: T, roles: readonly Role[] | undefined): T {
  return roles === undefined ? entity : { ...entity, roles: [...new Set(roles)] };
}

/** The entity without its roles (the field left out, not set to undefined, so records and snapshots carry none). */
function withoutRoles<T extends { readonly roles?: readonly Role[] }>(entity: T): T {
  if (entity.roles === undefined) return entity;
  const { roles: _dropped, ...rest } = entity;
  return rest as T;
}

/** Roles apply to Users of the base Application only (src/domain/roles.ts): any other User, and its API Keys, has none. */
function refuseRolesOutsideBase(): DomainError {
  return invalidField('roles', 'only a User of the base Application (and its API Keys) has roles; give them with the change that adds it there');
}

/**
 * A User that joins the base Application starts clean, so that no credential someone other than an admin set
 * (a manager may create an end user's API Keys and set its password) ever works for a caller of this API: its
 * API Keys are DISABLED and get new nonces, so a secret seen before never works again even once an admin enables
 * the key (the answer to that change carries the new secret), and they lose their roles; the User's own roles are
 * only those the joining change gives. The password is the joining change's to set (updateUser refuses a join
 * without one; authctl reset-admin-password sets one).
 */
function joinedBase(user: User, roles: readonly Role[] | undefined, ctx: DecideContext): User {
  const apikeys = user.apikeys.map((k): ApiKey => ({ ...withoutRoles(k), status: 'DISABLED', nonce: ctx.newNonce(), modifiedAt: ctx.now }));
  return withRoles({ ...withoutRoles(user), apikeys }, roles);
}

/** A User that leaves the base Application is an end user again: it and its API Keys keep no roles. */
function leftBase(user: User, now: number): User {
  const apikeys = user.apikeys.map((k) => (k.roles === undefined ? k : { ...withoutRoles(k), modifiedAt: now }));
  return { ...withoutRoles(user), apikeys };
}

const joinNeedsPassword = 'A User joins the base Application only with a new password, given in the same request';

interface Described {
  readonly name: string; readonly description: string; readonly customData: JsonObject | null;
  readonly status: Status; readonly modifiedAt: number;
}

/** An update of the fields Applications, Groups and Organizations share: omitted fields keep their value, modified_at moves. */
function patched<T extends Described>(
  old: T, input: { name?: string; description?: string; custom_data?: T['customData']; status?: Status }, now: number,
): T {
  return {
    ...old,
    name: input.name ?? old.name,
    description: input.description ?? old.description,
    customData: input.custom_data === undefined ? old.customData : input.custom_data,
    status: input.status ?? old.status,
    modifiedAt: now,
  };
}

function refuseDelete(message: string): DomainError {
  return new DomainError('delete_refused', message, { result: { deleted: false } });
}

// ---- applications ----

export interface ApplicationInput {
  name?: string; description?: string; custom_data?: JsonObject | null; status?: Status;
  tokens?: Partial<TokenSettings>;
  /**
   * An HS256 secret, sealed by the route (src/tokens/sealer.ts): one the caller gave (which also turns HS256
   * tokens on), or one made for the case that HS256 is on and the Application has none yet.
   */
  secret?: { readonly sealed: string; readonly given: boolean };
}

/** An Application's token settings as shown and applied: disabled until set. */
export const tokenDefaults: TokenSettings = { enabled: false, ttl: tokenTtlSecondsDefault, alg: 'EdDSA' };

/** The token settings and sealed secret after this input: a given secret turns HS256 on unless `tokens` says otherwise. */
function withTokens(app: Application, input: ApplicationInput): Application {
  const given = input.secret?.given === true;
  if (input.tokens === undefined && !given) return app;
  const tokens: TokenSettings = {
    ...(app.tokens ?? tokenDefaults),
    ...(given ? { enabled: true, alg: 'HS256' as const } : {}),
    ...input.tokens,
  };
  const jwtSecret = given || (tokens.alg === 'HS256' && app.jwtSecret === undefined) ? input.secret?.sealed : app.jwtSecret;
  if (tokens.alg === 'HS256' && jwtSecret === undefined) throw invalidField('jwt_secret', 'is needed for HS256 tokens');
  return jwtSecret === undefined ? { ...app, tokens } : { ...app, tokens, jwtSecret };
}

/** A new HS256 secret (sealed) for the Application: tokens it signed before stop verifying. */
export function rotateJwtSecret(state: State, id: string, sealed: string, ctx: DecideContext): Decision<Application> {
  const app: Application = { ...mustApplication(state, id), jwtSecret: sealed, modifiedAt: ctx.now };
  return { ops: [{ op: 'put', kind: 'application', value: app }], result: app };
}

/**
 * Names are unique case-insensitively (State.applicationNameKey), the base Application's included. Data stored
 * before this rule may hold duplicates: each keeps its name (and may change its case), none may take another's.
 */
function checkApplicationName(state: State, name: string, selfId: string | undefined): void {
  const holders = state.applicationIdsNamed(name);
  if (holders.size === 0 || (selfId !== undefined && holders.has(selfId))) return;
  const clash = state.application(holders.values().next().value!)!;
  throw new DomainError('duplicate_name', `name: an Application named "${clash.name}" already exists.`);
}

export function createApplication(state: State, input: ApplicationInput, ctx: DecideContext): Decision<Application> {
  checkApplicationName(state, input.name ?? '', undefined);
  const app: Application = withTokens({
    id: ctx.newId(), name: input.name ?? '', description: input.description ?? '',
    customData: input.custom_data ?? null, status: 'ENABLED', createdAt: ctx.now, modifiedAt: ctx.now,
  }, input);
  return { ops: [{ op: 'put', kind: 'application', value: app }], result: app };
}

export function updateApplication(state: State, id: string, input: ApplicationInput, ctx: DecideContext): Decision<Application> {
  const old = mustApplication(state, id);
  if (state.isBaseApplication(id) && input.status === 'DISABLED') {
    throw new DomainError('base_application_protected', 'status: the base Application cannot be disabled.');
  }
  if (input.name !== undefined) checkApplicationName(state, input.name, id);
  const app: Application = withTokens(patched(old, input, ctx.now), input);
  return { ops: [{ op: 'put', kind: 'application', value: app }], result: app };
}

export function deleteApplication(state: State, id: string): Decision<true> {
  mustApplication(state, id);
  if (state.isBaseApplication(id)) {
    throw new DomainError('base_application_protected', 'The base Application cannot be deleted.', { result: { deleted: false } });
  }
  const app = state.application(id)!;
  if (app.status !== 'DISABLED') throw refuseDelete('An Application must be DISABLED before it is deleted.');
  const users = state.countUsersOfApplication(id);
  if (users > 0) throw refuseDelete(`An Application with associated Users cannot be deleted (${users} associated).`);
  // No Group exists without its Application, and each Group has its own delete rule (DISABLED first):
  // deleting the Application must not delete them behind that rule, so they are deleted one by one first.
  const groups = state.groupsOfApplication(id).length;
  if (groups > 0) throw refuseDelete(`Groups must be deleted before the Application can be deleted (${groups} left).`);
  return { ops: [{ op: 'del', kind: 'application', id }], result: true };
}

// ---- groups ----

export interface GroupInput {
  name?: string; description?: string; custom_data?: JsonObject; status?: Status; application?: string;
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
  const group: Group = patched(old, input, ctx.now);
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
  /** Only an admin may give it (checked by the caller of decide): what the User may do in the base Application. */
  roles?: Role[];
}

/** No other User's email has the same emailKey (src/domain/email.ts) as `email`. */
function checkEmailFree(state: State, email: string, selfId: string | undefined): void {
  const clash = state.userByEmail(email);
  if (clash === undefined || clash.id === selfId) return;
  // A User stored before the key rule may share its key with an older one (State.sharedEmailKeys): it may keep it, not take another's.
  const self = selfId === undefined ? undefined : state.user(selfId);
  if (self !== undefined && emailKey(self.email) === emailKey(email)) return;
  throw new DomainError('duplicate_email', 'email: a User with this email already exists.');
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

/**
 * A Group lives inside one Application, so a User may join it only while associated with that
 * Application. Checked for the Groups a request adds (`added` exist already): a User stored before
 * this rule with a Group of an Application it had left keeps it, and can still be updated otherwise.
 */
function checkGroupsInApplications(state: State, added: readonly string[], applications: readonly string[]): void {
  for (const id of added) {
    const application = state.group(id)!.application;
    if (!applications.includes(application)) {
      throw invalidField('groups', `Group ${id} belongs to Application ${application}, which the User is not associated with`);
    }
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
  checkGroupsInApplications(state, groups, applications);
  if (input.roles !== undefined && !applications.some((a) => state.isBaseApplication(a))) throw refuseRolesOutsideBase();
  const customData = input.custom_data ?? null;
  const org = resolveOrganization(state, input, customData, ctx);
  const user: User = {
    id: ctx.newId(), email: normalizeEmail(input.email), name: input.name ?? '', status: 'UNVERIFIED', customData,
    passwordHash: input.passwordHash, organization: org.id, applications, groups, apikeys: [],
    createdAt: ctx.now, modifiedAt: ctx.now,
  };
  const value = withRoles(user, input.roles);
  return { ops: [...org.ops, { op: 'put', kind: 'user', value }], result: value };
}

export function updateUser(state: State, id: string, input: UserInput, ctx: DecideContext): Decision<User> {
  const old = mustUser(state, id);
  if (input.email !== undefined) checkEmailFree(state, input.email, id);
  const applications = union(old.applications, input.applications);
  const groups = union(old.groups, input.groups);
  checkMemberships(state, { applications: input.applications ?? [], groups: input.groups ?? [] }, { applications, groups });
  checkGroupsInApplications(state, input.groups ?? [], applications);
  const wasBase = state.isBaseUser(old);
  const isBase = wasBase || applications.some((a) => state.isBaseApplication(a));
  if (input.roles !== undefined && !isBase) throw refuseRolesOutsideBase();
  if (isBase && !wasBase && input.passwordHash === undefined) {
    throw new DomainError('base_join_needs_password', `${joinNeedsPassword}: PUT /users/user/{userid} with "applications" and "password".`);
  }
  const organization = input.organization === undefined
    ? old.organization
    : resolveOrganization(state, { organization: input.organization }, null, ctx).id;
  const kept = isBase && !wasBase ? joinedBase(old, input.roles, ctx) : withRoles(old, input.roles);
  const user: User = {
    ...kept,
    email: input.email === undefined ? old.email : normalizeEmail(input.email),
    name: input.name ?? old.name,
    passwordHash: input.passwordHash ?? old.passwordHash,
    ...(input.passwordHash === undefined ? {} : { passwordChangedAt: ctx.now }),
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
  // Leaving an Application leaves its Groups too. The record holds the whole User with both lists as
  // they now are, so replaying it (twice, or over a snapshot that already has it) gives the same User.
  const value: User = {
    ...(state.isBaseApplication(applicationId) ? leftBase(user, ctx.now) : user),
    applications: user.applications.filter((a) => a !== applicationId),
    groups: user.groups.filter((g) => state.group(g)?.application !== applicationId),
    modifiedAt: ctx.now,
  };
  keepOneAdmin(state, user, value);
  return { ops: [{ op: 'put', kind: 'user', value }], result: true };
}

export function removeUserGroup(state: State, userId: string, groupId: string, ctx: DecideContext): Decision<true> {
  const user = mustUser(state, userId);
  if (!user.groups.includes(groupId)) throw new DomainError('not_found', `The User is not a member of Group ${groupId}.`);
  const value: User = { ...user, groups: user.groups.filter((g) => g !== groupId), modifiedAt: ctx.now };
  return { ops: [{ op: 'put', kind: 'user', value }], result: true };
}

/**
 * One membership named in the path (the upstream API's POST, kept for its clients): the same rules as
 * memberships added by updateUser, and one the User already has changes nothing (no record, modified_at stays).
 */
export function addUserApplication(state: State, userId: string, applicationId: string, ctx: DecideContext): Decision<true> {
  const user = mustUser(state, userId);
  mustApplication(state, applicationId);
  if (user.applications.includes(applicationId)) return { ops: [], result: true };
  if (state.isBaseApplication(applicationId)) {
    throw new DomainError('base_join_needs_password', `${joinNeedsPassword}, which this route takes none of: use PUT /users/user/{userid} with "applications" and "password".`);
  }
  return { ops: updateUser(state, userId, { applications: [applicationId] }, ctx).ops, result: true };
}

/** As addUserApplication, for a Group: its Application must be one of the User's. */
export function addUserGroup(state: State, userId: string, groupId: string, ctx: DecideContext): Decision<true> {
  const user = mustUser(state, userId);
  mustGroup(state, groupId);
  if (user.groups.includes(groupId)) return { ops: [], result: true };
  return { ops: updateUser(state, userId, { groups: [groupId] }, ctx).ops, result: true };
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

export interface ApikeyInput { name?: string; description?: string; status?: Status; roles?: Role[] }

/**
 * A key's roles may narrow its owner's, never widen them (they are intersected again at every use); only a base
 * User's key has any: an end user has no roles, so none are within them, and it is never an admin by default.
 */
function checkKeyRoles(state: State, user: User, roles: readonly Role[] | undefined): void {
  if (roles === undefined) return;
  if (!state.isBaseUser(user)) throw refuseRolesOutsideBase();
  if (!rolesWithin(roles, rolesOfUser(true, user.roles))) throw invalidField('roles', 'must be within the roles of the API Key\'s User');
}

function withKey(user: User, key: ApiKey, now: number): User {
  return { ...user, apikeys: user.apikeys.map((k) => (k.id === key.id ? key : k)), modifiedAt: now };
}

export function createApikey(state: State, userId: string, input: ApikeyInput, ctx: DecideContext): Decision<{ user: User; key: ApiKey }> {
  const user = mustUser(state, userId);
  if (user.apikeys.length >= apikeysPerUserMax) {
    throw new DomainError('limit_exceeded', `A User may have at most ${apikeysPerUserMax} API Keys.`);
  }
  checkKeyRoles(state, user, input.roles);
  let id = ctx.newApikeyId();
  while (state.userByApikey(id) !== undefined) id = ctx.newApikeyId();
  const key = withRoles<ApiKey>({
    id, name: input.name ?? '', description: input.description ?? '', status: input.status ?? 'ENABLED',
    nonce: ctx.newNonce(), createdAt: ctx.now, modifiedAt: ctx.now,
  }, input.roles);
  const value: User = { ...user, apikeys: [...user.apikeys, key], modifiedAt: ctx.now };
  return { ops: [{ op: 'put', kind: 'user', value }], result: { user: value, key } };
}

export function updateApikey(
  state: State, userId: string, keyId: string, input: ApikeyInput, ctx: DecideContext,
): Decision<{ user: User; key: ApiKey }> {
  const { user, key: old } = mustApikey(state, userId, keyId);
  checkKeyRoles(state, user, input.roles);
  const key = withRoles<ApiKey>({
    ...old,
    name: input.name ?? old.name,
    description: input.description ?? old.description,
    status: input.status ?? old.status,
    modifiedAt: ctx.now,
  }, input.roles);
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
    id: ctx.newId(), email: normalizeEmail(admin.email), name: 'Administrator', status: 'ENABLED', customData: null,
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

// ---- organizations ----

export function mustOrganization(state: State, id: string): Organization {
  const org = state.organization(id);
  if (org === undefined) throw new DomainError('not_found', `No Organization with id ${id}.`);
  return org;
}

export interface OrganizationInput {
  name?: string; description?: string; custom_data?: JsonObject | null; status?: Status;
}

/** Names are unique case-insensitively: a company_name in custom_data finds its Organization that way. */
function checkOrganizationName(state: State, name: string, selfId: string | undefined): void {
  const clash = state.organizationByName(name);
  if (clash !== undefined && clash.id !== selfId) {
    throw new DomainError('duplicate_name', `name: an Organization named "${clash.name}" already exists.`);
  }
}

export function createOrganization(state: State, input: OrganizationInput & { name: string }, ctx: DecideContext): Decision<Organization> {
  checkOrganizationName(state, input.name, undefined);
  const org: Organization = {
    id: ctx.newId(), name: input.name, description: input.description ?? '', customData: input.custom_data ?? null,
    status: 'ENABLED', createdAt: ctx.now, modifiedAt: ctx.now,
  };
  return { ops: [{ op: 'put', kind: 'organization', value: org }], result: org };
}

export function updateOrganization(state: State, id: string, input: OrganizationInput, ctx: DecideContext): Decision<Organization> {
  const old = mustOrganization(state, id);
  if (input.name !== undefined) checkOrganizationName(state, input.name, id);
  const org: Organization = patched(old, input, ctx.now);
  return { ops: [{ op: 'put', kind: 'organization', value: org }], result: org };
}

/** Like an Application: DISABLED and empty first. The default Organization catches Users created without one, so it stays. */
export function deleteOrganization(state: State, id: string): Decision<true> {
  const org = mustOrganization(state, id);
  if (state.meta?.defaultOrganization === id) throw refuseDelete('The default Organization cannot be deleted.');
  if (org.status !== 'DISABLED') throw refuseDelete('An Organization must be DISABLED before it is deleted.');
  const users = state.countUsersOfOrganization(id);
  if (users > 0) throw refuseDelete(`An Organization with Users cannot be deleted (${users} Users); move them first.`);
  return { ops: [{ op: 'del', kind: 'organization', id }], result: true };
}

// ---- operator actions (authctl, on a stopped data directory) ----

/**
 * A new password for an administrator who can no longer sign in: the User with this email, or the
 * oldest User of the base Application. It is also ENABLED and put back in the base Application if it
 * had left them, since a password alone would not let it in again; put back, it starts clean as any User
 * that joins the base Application does (joinedBase): its API Keys DISABLED, with new nonces and no roles.
 */
export function resetAdminPassword(
  state: State, email: string | undefined, passwordHash: string, ctx: DecideContext,
): Decision<{ user: User; changes: string[] }> {
  const base = state.meta?.baseApplication;
  if (base === undefined) throw new DomainError('not_found', 'This data directory has no base Application yet: start the service on it once first.');
  const user = email === undefined ? state.usersOfApplication(base)[0] : state.userByEmail(email);
  if (user === undefined) {
    throw new DomainError('not_found', email === undefined ? 'The base Application has no User; give --email.' : `No User with email ${email}.`);
  }
  const changes = ['password'];
  let applications = user.applications;
  let joined = user;
  if (!applications.includes(base)) {
    if (applications.length >= applicationsPerUserMax) {
      throw new DomainError('limit_exceeded', `applications: the User already belongs to ${applicationsPerUserMax} Applications.`);
    }
    applications = [...applications, base];
    joined = joinedBase(user, undefined, ctx);
    changes.push('added to the base Application');
    const keys = user.apikeys.length;
    if (keys > 0) changes.push(`${keys} API Key${keys === 1 ? '' : 's'} DISABLED, with new secrets`);
  }
  let status = user.status;
  if (status === 'DISABLED') {
    status = 'ENABLED';
    changes.push('status DISABLED -> ENABLED');
  }
  const value: User = { ...joined, passwordHash, passwordChangedAt: ctx.now, status, applications, modifiedAt: ctx.now };
  return { ops: [{ op: 'put', kind: 'user', value }], result: { user: value, changes } };
}

// ---- import: whole entities with their own ids and times, held to the rules of the API's own changes ----

export function importOrganization(state: State, org: Organization): Decision<Organization> {
  checkOrganizationName(state, org.name, org.id);
  return { ops: [{ op: 'put', kind: 'organization', value: org }], result: org };
}

export function importApplication(state: State, app: Application): Decision<Application> {
  if (state.isBaseApplication(app.id) && app.status === 'DISABLED') {
    throw new DomainError('base_application_protected', 'status: the base Application cannot be disabled.');
  }
  return { ops: [{ op: 'put', kind: 'application', value: app }], result: app };
}

export function importGroup(state: State, group: Group): Decision<Group> {
  if (state.application(group.application) === undefined) {
    throw new DomainError('unknown_reference', `application: no Application with id ${group.application} (it must come before its Groups).`);
  }
  const old = state.group(group.id);
  if (old !== undefined && old.application !== group.application) {
    throw new DomainError('invalid_field', `application: Group ${group.id} already exists in another Application.`);
  }
  checkGroupName(state, group.application, group.name, group.id);
  return { ops: [{ op: 'put', kind: 'group', value: group }], result: group };
}

/**
 * Addresses stored before the current email key (NFC, folded per code point) were unique by toLowerCase() of
 * the whole text only, so two such Users may share a key (State.sharedEmailKeys). A User imported as
 * stored may therefore share one with a User whose address differed under that older rule.
 */
function sharesKeyFromBeforeKeyRule(state: State, user: User): boolean {
  const clash = state.userByEmail(user.email);
  return clash !== undefined && clash.id !== user.id && clash.email.toLowerCase() !== user.email.toLowerCase();
}

/** `asStored`: the User as an export wrote it (its own id), as opposed to a new one from another system. */
export function importUser(state: State, user: User, opts: { asStored: boolean } = { asStored: false }): Decision<User> {
  if (!(opts.asStored && sharesKeyFromBeforeKeyRule(state, user))) checkEmailFree(state, user.email, user.id);
  if (state.organization(user.organization) === undefined) {
    throw new DomainError('unknown_reference', `organization: no Organization with id ${user.organization} (it must come before its Users).`);
  }
  // Not held to checkGroupsInApplications: an export of data stored before that rule (a User still in a
  // Group of an Application it had left) must import as it was exported.
  checkMemberships(state, user, user);
  if (user.apikeys.length > apikeysPerUserMax) {
    throw new DomainError('limit_exceeded', `apikeys: a User may have at most ${apikeysPerUserMax} API Keys.`);
  }
  const keyIds = new Set<string>();
  for (const key of user.apikeys) {
    const owner = state.userByApikey(key.id);
    if ((owner !== undefined && owner.id !== user.id) || keyIds.has(key.id)) {
      throw new DomainError('invalid_field', `apikeys: API Key id ${key.id} belongs to another User.`);
    }
    keyIds.add(key.id);
  }
  const old = state.user(user.id);
  if (old !== undefined) keepOneAdmin(state, old, user);
  return { ops: [{ op: 'put', kind: 'user', value: user }], result: user };
}

/**
 * The service-wide facts of an exported directory, taken only by a directory that has none yet (a
 * restore); a directory with its own base Application keeps it. Checked after the entities it names.
 */
export function importMeta(state: State, meta: Meta): Decision<'set' | 'kept'> {
  if (state.meta !== undefined) return { ops: [], result: 'kept' };
  if (state.application(meta.baseApplication) === undefined) {
    throw new DomainError('unknown_reference', `meta: the base Application ${meta.baseApplication} is not in the import.`);
  }
  if (state.organization(meta.defaultOrganization) === undefined) {
    throw new DomainError('unknown_reference', `meta: the default Organization ${meta.defaultOrganization} is not in the import.`);
  }
  return { ops: [{ op: 'put', kind: 'meta', value: meta }], result: 'set' };
}

// ---- signing keys ----

/**
 * Makes each fresh key the current one of its alg, retiring the one it replaces, and drops retired keys no
 * token can still need. `expected`: for a start-up's check, the current kid per alg it saw (undefined: none);
 * a key whose alg changed since (another node rotated first) is left out, so two starts make one key.
 */
export function rotateSigningKeys(
  state: State, fresh: readonly SigningKey[], ctx: DecideContext, expected?: ReadonlyMap<SigningAlg, string | undefined>,
): Decision<readonly SigningKey[]> {
  const meta = state.meta;
  if (meta === undefined) throw new DomainError('not_found', 'This data directory has no base Application yet.');
  const now = ctx.now;
  const adding = fresh.filter((k) => expected === undefined || expected.get(k.alg) === currentKey(meta.signingKeys, k.alg)?.kid);
  if (adding.length === 0) return { ops: [], result: meta.signingKeys ?? [] };
  const replaced = new Set(adding.map((k) => k.alg));
  const kept = (meta.signingKeys ?? [])
    .map((k) => (k.retiredAt === 0 && replaced.has(k.alg) ? { ...k, retiredAt: now } : k))
    .filter((k) => isPublished(k, now));
  const signingKeys = [...kept, ...adding.map((k) => ({ ...k, createdAt: now }))];
  return { ops: [{ op: 'put', kind: 'meta', value: { ...meta, signingKeys } }], result: signingKeys };
}
