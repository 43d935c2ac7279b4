// Small makers for the entities HTTP tests need, each checked to have been created (200) before it is used.

import { adminEmail, type Api } from './server.js';
import {
  ok, okKey, type ApikeyJson, type ApplicationJson, type GroupJson, type Json, type UserFullJson,
} from './http-shapes.js';

let counter = 0;

/** Unique within one test process: every file starts its own server, so this is enough. */
export function unique(prefix: string): string {
  counter += 1;
  return `${prefix}-${counter}`;
}

export async function createApplication(api: Api, body: Json = {}): Promise<ApplicationJson> {
  return okKey<ApplicationJson>(await api.post('/applications/application', { name: unique('app'), description: 'made by a test', ...body }), 'application');
}

export async function createGroup(api: Api, application: string, body: Json = {}): Promise<GroupJson> {
  return okKey<GroupJson>(await api.post('/groups/group', { name: unique('group'), description: 'made by a test', application, ...body }), 'group');
}

export const defaultUserPassword = 'user-pass-4Xr!9';

export async function createUser(api: Api, applications: string[], body: Json = {}): Promise<UserFullJson> {
  const res = await api.post('/users/user', {
    email: `${unique('user')}@example.com`, password: defaultUserPassword, name: 'Test User', applications, ...body,
  });
  return okKey<UserFullJson>(res, 'user');
}

export async function createApikey(api: Api, userId: string, body: Json = {}): Promise<ApikeyJson & { secret: string }> {
  return okKey<ApikeyJson & { secret: string }>(
    await api.post(`/users/user/${userId}/apikey`, { name: unique('key'), description: 'made by a test', ...body }), 'apikey',
  );
}

export async function getApplication(api: Api, id: string): Promise<ApplicationJson> {
  return okKey<ApplicationJson>(await api.get(`/applications/application/${id}`), 'application');
}

export async function getGroup(api: Api, id: string): Promise<GroupJson> {
  return okKey<GroupJson>(await api.get(`/groups/group/${id}`), 'group');
}

export async function getUser(api: Api, id: string): Promise<UserFullJson> {
  return okKey<UserFullJson>(await api.get(`/users/user/${id}`), 'user');
}

/** The first admin, found by search: its one Application is the base Application. */
export async function getAdmin(api: Api): Promise<UserFullJson> {
  const users = okKey<UserFullJson[]>(await api.get(`/users/search/${encodeURIComponent(adminEmail)}`), 'users');
  const admin = users.find((u) => u.email === adminEmail);
  if (admin === undefined) throw new Error('the first admin is not found by searching its email');
  return admin;
}

export async function baseApplicationId(api: Api): Promise<string> {
  const admin = await getAdmin(api);
  if (admin.applications.length !== 1) throw new Error(`the first admin should be in exactly the base Application, is in ${admin.applications.length}`);
  return admin.applications[0]!.id;
}

/** POST /authenticate; returns the whole result. */
export async function authenticate(
  api: Api, application: string, type: 'username' | 'apikey', username: string, password: string,
): Promise<{ authenticated: boolean; user?: UserFullJson }> {
  return ok(await api.post('/authenticate', { type, application, credential: { username, password } }));
}

/** A well-formed id that names nothing. */
export const unknownId = 'ZZZZZZZZZZZZZZZZZZZZZZ';
