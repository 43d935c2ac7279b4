// Small makers for the entities HTTP tests need, made through the typed client (which throws AuthError unless they were created).

import type {
  ApikeyCreate, ApplicationCreate, GroupCreate, UserCreate,
} from '../../src/client/index.js';
import { adminEmail, type Api } from './server.js';
import type { ApikeyJson, ApplicationJson, GroupJson, Json, UserAuthenticatedJson, UserFullJson } from './http-shapes.js';

let counter = 0;

/** Unique within one test process: every file starts its own server, so this is enough. */
export function unique(prefix: string): string {
  counter += 1;
  return `${prefix}-${counter}`;
}

export async function createApplication(api: Api, body: Json = {}): Promise<ApplicationJson> {
  return api.client.applications.create({ name: unique('app'), description: 'made by a test', ...body } as ApplicationCreate);
}

export async function createGroup(api: Api, application: string, body: Json = {}): Promise<GroupJson> {
  return api.client.groups.create({ name: unique('group'), description: 'made by a test', application, ...body } as GroupCreate);
}

export const defaultUserPassword = 'user-pass-4Xr!9';

export async function createUser(api: Api, applications: string[], body: Json = {}): Promise<UserFullJson> {
  return api.client.users.create({
    email: `${unique('user')}@example.com`, password: defaultUserPassword, name: 'Test User', applications, ...body,
  } as UserCreate);
}

export async function createApikey(api: Api, userId: string, body: Json = {}): Promise<ApikeyJson & { secret: string }> {
  return api.client.apikeys.create(userId, { name: unique('key'), description: 'made by a test', ...body } as ApikeyCreate);
}

export async function getApplication(api: Api, id: string): Promise<ApplicationJson> {
  return api.client.applications.get(id);
}

export async function getGroup(api: Api, id: string): Promise<GroupJson> {
  return api.client.groups.get(id);
}

export async function getUser(api: Api, id: string): Promise<UserFullJson> {
  return api.client.users.get(id);
}

/** The first admin, found by search: its one Application is the base Application. */
export async function getAdmin(api: Api): Promise<UserFullJson> {
  const users = await api.client.users.search(adminEmail)();
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
): Promise<{ authenticated: boolean; user?: UserAuthenticatedJson }> {
  return api.client.authenticate({ type, application, credential: { username, password } }) as Promise<{ authenticated: boolean; user?: UserAuthenticatedJson }>;
}

/** A well-formed id that names nothing. */
export const unknownId = 'ZZZZZZZZZZZZZZZZZZZZZZ';
