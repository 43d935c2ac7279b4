// The response contract, as assertions: the envelope, the error body, and every entity's exact field set and formats.

import assert from 'node:assert/strict';
import type { HttpResult } from './server.js';

/** `YYYY-MM-DD HH:MM:SS.ffffff+00:00`, UTC with microseconds (spec, "Resources and their fields"). */
export const timestampPattern = /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01]) ([01]\d|2[0-3]):[0-5]\d:[0-5]\d\.\d{6}\+00:00$/;
export const apikeyIdPattern = /^[0-9A-Z]{25}$/;
/** At least 32 random bytes, base64url without padding: 43 characters for 32 bytes. */
export const apikeySecretPattern = /^[A-Za-z0-9_-]{43,}$/;

export type Json = Record<string, unknown>;

export interface ApplicationJson {
  id: string; name: string; description: string; custom_data: Json | null; status: string;
  href: string; created_at: string; modified_at: string;
}
export interface GroupJson {
  id: string; name: string; description: string; custom_data: Json; status: string; application: string;
  href: string; created_at: string; modified_at: string;
}
export interface ApikeyJson {
  id: string; name: string; description: string; status: string; href: string; secret?: string;
}
export interface OrganizationBriefJson { id: string; name: string; custom_data: Json | null }
export interface UserFullJson {
  id: string; username: string; email: string; name: string; status: string; custom_data: Json | null;
  organization: OrganizationBriefJson; applications: ApplicationJson[]; groups: GroupJson[]; apikeys: ApikeyJson[];
  href: string; created_at: string; modified_at: string;
}
export interface UserIdsJson {
  id: string; username: string; email: string; name: string; status: string; custom_data: Json | null;
  organization: unknown; applications: string[]; groups: string[]; apikeys: ApikeyJson[];
  href: string; created_at: string; modified_at: string;
}

/** What POST /authenticate answers of a User: no custom_data or description of its memberships, keys and Organization. */
export interface UserAuthenticatedJson {
  id: string; username: string; email: string; name: string; status: string; custom_data: Json | null;
  organization: { id: string; name: string } | null;
  applications: { id: string; name: string; status: string }[];
  groups: { id: string; name: string; status: string; application: string }[];
  apikeys: { id: string; name: string; status: string }[];
  href: string; created_at: string; modified_at: string;
}

/** The full representation (GET of a User) cut down to what POST /authenticate answers. */
export function authenticatedView(user: UserFullJson): UserAuthenticatedJson {
  return {
    id: user.id, username: user.username, email: user.email, name: user.name, status: user.status, custom_data: user.custom_data,
    organization: { id: user.organization.id, name: user.organization.name },
    applications: user.applications.map((a) => ({ id: a.id, name: a.name, status: a.status })),
    groups: user.groups.map((g) => ({ id: g.id, name: g.name, status: g.status, application: g.application })),
    apikeys: user.apikeys.map((k) => ({ id: k.id, name: k.name, status: k.status })),
    href: user.href, created_at: user.created_at, modified_at: user.modified_at,
  };
}

export const applicationKeys = ['id', 'name', 'description', 'custom_data', 'status', 'tokens', 'href', 'created_at', 'modified_at'];
export const groupKeys = ['id', 'name', 'description', 'custom_data', 'status', 'application', 'href', 'created_at', 'modified_at'];
export const userKeys = [
  'id', 'username', 'email', 'name', 'status', 'custom_data', 'organization', 'applications', 'groups', 'apikeys',
  'href', 'created_at', 'modified_at',
];
export const apikeyKeys = ['id', 'name', 'description', 'status', 'href'];

const roleNames = ['admin', 'manager', 'auditor', 'authenticator'];

/** `roles`, where shown (base Users, API Keys made with roles), is a non-empty list of known roles without repeats. */
function withRoles(value: unknown, keys: readonly string[], what: string): readonly string[] {
  if (!isObject(value) || !('roles' in value)) return keys;
  const roles = value['roles'];
  assert.ok(Array.isArray(roles) && roles.length > 0 && roles.every((r) => roleNames.includes(r as string)), `${what}.roles: ${JSON.stringify(roles)}`);
  assert.equal(new Set(roles).size, roles.length, `${what}.roles has no repeats`);
  return [...keys, 'roles'];
}

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function assertKeys(value: unknown, keys: readonly string[], what: string): asserts value is Json {
  assert.ok(isObject(value), `${what} must be an object, got ${JSON.stringify(value)}`);
  assert.deepEqual(Object.keys(value).sort(), [...keys].sort(), `${what}: field set`);
}

// ---- envelope ----

function assertEnvelope(res: HttpResult, keys: readonly string[]): Json {
  assert.ok(res.json !== undefined, `response is not JSON: ${res.text.slice(0, 300)}`);
  assertKeys(res.json, ['service'], 'envelope');
  const service = res.json['service'];
  assertKeys(service, keys, 'service');
  assert.equal(typeof service['elapsed'], 'number', 'service.elapsed is a number');
  assert.ok((service['elapsed'] as number) >= 0, 'service.elapsed is not negative');
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
  return service;
}

/** A 200 with `{"service":{"result":{...},"elapsed":n}}`; returns `result`. */
export function ok<T = Json>(res: HttpResult): T {
  assert.equal(res.status, 200, `expected 200, got ${res.status}: ${res.text.slice(0, 500)}`);
  const service = assertEnvelope(res, ['result', 'elapsed']);
  assert.ok(isObject(service['result']), 'service.result is an object');
  return service['result'] as T;
}

/** The result's one key, e.g. okKey(res, 'application'). */
export function okKey<T = Json>(res: HttpResult, key: string): T {
  const result = ok(res);
  assertKeys(result, [key], 'result');
  return result[key] as T;
}

export interface ErrorJson { status: number; code: string; message: string }

/**
 * An error answer `{"service":{"error":{"status","code","message"},"elapsed"}}` with this HTTP status (and code, when
 * given). A refused delete also carries `result: {"deleted": false}`; pass `withResult` to expect it.
 */
export function fails(res: HttpResult, status: number, code?: string, opts: { withResult?: Json } = {}): ErrorJson {
  assert.equal(res.status, status, `expected ${status}${code === undefined ? '' : ` ${code}`}, got ${res.status}: ${res.text.slice(0, 500)}`);
  const service = assertEnvelope(res, opts.withResult === undefined ? ['error', 'elapsed'] : ['result', 'error', 'elapsed']);
  if (opts.withResult !== undefined) assert.deepEqual(service['result'], opts.withResult, 'service.result of the refusal');
  const error = service['error'];
  assertKeys(error, ['status', 'code', 'message'], 'service.error');
  assert.equal(error['status'], status, 'error.status equals the HTTP status');
  assert.equal(typeof error['code'], 'string');
  assert.match(error['code'] as string, /^[a-z_]+$/, 'error.code is a stable snake_case code');
  assert.equal(typeof error['message'], 'string');
  assert.ok((error['message'] as string).length > 0, 'error.message is not empty');
  if (code !== undefined) assert.equal(error['code'], code, `error.code (message: ${String(error['message'])})`);
  return error as unknown as ErrorJson;
}

/** A 400 whose message names the offending field. */
export function failsOnField(res: HttpResult, field: string, code = 'invalid_field'): ErrorJson {
  const error = fails(res, 400, code);
  assert.ok(error.message.includes(field), `error message names "${field}": ${error.message}`);
  return error;
}

/** 409 with `result: {"deleted": false}` and an error, as every refused delete answers. */
export function refusedDelete(res: HttpResult, code?: string): ErrorJson {
  return fails(res, 409, code, { withResult: { deleted: false } });
}

// ---- entities ----

export function assertTimestamp(value: unknown, what: string): void {
  assert.equal(typeof value, 'string', `${what} is a string`);
  assert.match(value as string, timestampPattern, `${what} has the form YYYY-MM-DD HH:MM:SS.ffffff+00:00`);
  assert.ok(!Number.isNaN(Date.parse((value as string).replace(' ', 'T'))), `${what} is a real date`);
}

/** Same format, so string order is time order. */
export function assertLater(later: string, earlier: string, what: string): void {
  assert.ok(later > earlier, `${what}: ${later} must be later than ${earlier}`);
}

function assertHref(value: unknown, expected: string, what: string): void {
  assert.equal(value, expected, `${what}.href is absolute, from the public URL`);
}

export function assertApplication(app: unknown, publicUrl: string, opts: { allowEmptyCreatedAt?: boolean } = {}): asserts app is ApplicationJson {
  assertKeys(app, applicationKeys, 'application');
  assert.equal(typeof app['id'], 'string');
  assert.match(app['id'] as string, /^[0-9A-Za-z]+$/);
  assert.equal(typeof app['name'], 'string');
  assert.equal(typeof app['description'], 'string');
  assert.ok(app['custom_data'] === null || isObject(app['custom_data']), 'application.custom_data is an object or null');
  assert.ok(app['status'] === 'ENABLED' || app['status'] === 'DISABLED', `application.status: ${String(app['status'])}`);
  assertHref(app['href'], `${publicUrl}/applications/application/${app['id'] as string}`, 'application');
  if (opts.allowEmptyCreatedAt === true && app['created_at'] === '') {
    assert.ok(app['modified_at'] === '' || timestampPattern.test(app['modified_at'] as string));
    return;
  }
  assertTimestamp(app['created_at'], 'application.created_at');
  assertTimestamp(app['modified_at'], 'application.modified_at');
}

export function assertGroup(group: unknown, publicUrl: string): asserts group is GroupJson {
  assertKeys(group, groupKeys, 'group');
  assert.match(group['id'] as string, /^[0-9A-Za-z]+$/);
  assert.equal(typeof group['name'], 'string');
  assert.equal(typeof group['description'], 'string');
  assert.ok(isObject(group['custom_data']), 'group.custom_data is an object');
  assert.ok(group['status'] === 'ENABLED' || group['status'] === 'DISABLED', `group.status: ${String(group['status'])}`);
  assert.equal(typeof group['application'], 'string', 'group.application is the Application id');
  assertHref(group['href'], `${publicUrl}/groups/group/${group['id'] as string}`, 'group');
  assertTimestamp(group['created_at'], 'group.created_at');
  assertTimestamp(group['modified_at'], 'group.modified_at');
}

export function assertApikey(key: unknown, publicUrl: string, userId: string, opts: { withSecret: boolean }): asserts key is ApikeyJson {
  assertKeys(key, withRoles(key, opts.withSecret ? [...apikeyKeys, 'secret'] : apikeyKeys, 'apikey'), `apikey (${opts.withSecret ? 'with' : 'without'} secret)`);
  assert.match(key['id'] as string, apikeyIdPattern, 'apikey.id is 25 characters of [0-9A-Z]');
  assert.equal(typeof key['name'], 'string');
  assert.equal(typeof key['description'], 'string');
  assert.ok(key['status'] === 'ENABLED' || key['status'] === 'DISABLED', `apikey.status: ${String(key['status'])}`);
  if (opts.withSecret) assert.match(key['secret'] as string, apikeySecretPattern, 'apikey.secret is base64url of >= 32 bytes');
  assertHref(key['href'], `${publicUrl}/users/user/${userId}/apikey/${key['id'] as string}`, 'apikey');
}

function assertUserCommon(user: Json, publicUrl: string): void {
  assert.match(user['id'] as string, /^[0-9A-Za-z]+$/);
  assert.equal(typeof user['email'], 'string');
  assert.equal(user['username'], user['email'], 'user.username equals the email');
  assert.equal(typeof user['name'], 'string');
  assert.ok(['UNVERIFIED', 'ENABLED', 'DISABLED'].includes(user['status'] as string), `user.status: ${String(user['status'])}`);
  assert.ok(user['custom_data'] === null || isObject(user['custom_data']), 'user.custom_data is an object or null');
  assert.ok(Array.isArray(user['apikeys']), 'user.apikeys is an array');
  for (const key of user['apikeys'] as unknown[]) assertApikey(key, publicUrl, user['id'] as string, { withSecret: false });
  assertHref(user['href'], `${publicUrl}/users/user/${user['id'] as string}`, 'user');
  assertTimestamp(user['created_at'], 'user.created_at');
  assertTimestamp(user['modified_at'], 'user.modified_at');
  for (const k of ['password', 'password_hash', 'passwordHash', 'secret']) assert.ok(!(k in user), `user carries no ${k}`);
}

/** Create, get, list all, search, authenticate: memberships as full objects, the Organization in brief. */
export function assertUserFull(user: unknown, publicUrl: string): asserts user is UserFullJson {
  assertKeys(user, withRoles(user, userKeys, 'user'), 'user (full representation)');
  assertUserCommon(user, publicUrl);
  assertKeys(user['organization'], ['id', 'name', 'custom_data'], 'user.organization');
  const org = user['organization'] as Json;
  assert.equal(typeof org['id'], 'string');
  assert.equal(typeof org['name'], 'string');
  assert.ok(org['custom_data'] === null || isObject(org['custom_data']));
  assert.ok(Array.isArray(user['applications']), 'user.applications is an array');
  for (const app of user['applications'] as unknown[]) assertApplication(app, publicUrl, { allowEmptyCreatedAt: true });
  assert.ok(Array.isArray(user['groups']), 'user.groups is an array');
  for (const group of user['groups'] as unknown[]) assertGroup(group, publicUrl);
}

/** Per-Application and per-Group listings: memberships as arrays of ids. */
export function assertUserIds(user: unknown, publicUrl: string): asserts user is UserIdsJson {
  assertKeys(user, withRoles(user, userKeys, 'user'), 'user (listing with ids)');
  assertUserCommon(user, publicUrl);
  for (const k of ['applications', 'groups']) {
    assert.ok(Array.isArray(user[k]), `user.${k} is an array`);
    for (const id of user[k] as unknown[]) assert.equal(typeof id, 'string', `user.${k} holds ids`);
  }
}

/** The Organization id of a user in either representation. */
export function organizationIdOf(user: UserFullJson | UserIdsJson): string {
  const org = user.organization;
  return typeof org === 'string' ? org : (org as OrganizationBriefJson).id;
}

/** The response text with `elapsed` taken out, to compare answers that must be identical. */
export function withoutElapsed(res: HttpResult): string {
  return res.text.replace(/"elapsed":\s*[-0-9.eE+]+/, '"elapsed":0');
}
