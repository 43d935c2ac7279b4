// The OpenAPI 3.1 document: request bodies from the very schemas that validate them (src/http/bodies.ts), the rest from the route table here.
//
// The route table names every route the router serves; test/openapi-document.test.ts fails when the
// two disagree, or when the served document or docs/openapi.json differ from what this file generates.
// Regenerate the checked-in copy with `authctl openapi --write`.

import { idCharsMax, pageCursorCharsMax, pageItemsMax, searchTermCharsMax } from '../config/limits.js';
import { errorCatalog } from '../domain/errors.js';
import * as bodies from './bodies.js';
import type { RouteSpec } from './pipeline.js';
import type { Schema } from '../domain/schema.js';

type JsonSchema = Record<string, unknown>;

/** Version of the HTTP API described; bump it with any change to the document. */
export const apiVersion = '1.1.0';

export interface RouteDoc {
  readonly method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** As registered with the router: `/users/user/:userid`. */
  readonly pattern: string;
  readonly operationId: string;
  readonly tag: string;
  readonly summary: string;
  readonly description?: string;
  readonly body?: Schema<unknown>;
  /** Schema of `service.result`; for `raw` routes, of the whole body. */
  readonly result: JsonSchema;
  readonly paged?: boolean;
  readonly public?: boolean;
  /** Answered outside the envelope with this media type. */
  readonly raw?: string;
}

const ref = (name: string): JsonSchema => ({ $ref: `#/components/schemas/${name}` });
const obj = (properties: Record<string, JsonSchema>, required = Object.keys(properties)): JsonSchema => ({
  type: 'object', properties, required, additionalProperties: false,
});
const str: JsonSchema = { type: 'string' };
const status: JsonSchema = { type: 'string', enum: ['ENABLED', 'DISABLED'] };
const timestamp: JsonSchema = { type: 'string', description: 'UTC, `YYYY-MM-DD HH:MM:SS.ffffff+00:00` (may be empty for the base Application).' };
const customData = (nullable: boolean): JsonSchema => ({ type: nullable ? ['object', 'null'] : 'object', additionalProperties: true });
const idList: JsonSchema = { type: 'array', items: str };
const listOf = (key: string, item: JsonSchema): JsonSchema => obj({ [key]: { type: 'array', items: item } });
const one = (key: string, item: JsonSchema): JsonSchema => obj({ [key]: item });
const deleted: JsonSchema = obj({ deleted: { type: 'boolean', const: true } });

/** The public representations of src/http/render.ts. */
const entitySchemas: Record<string, JsonSchema> = {
  Application: obj({
    id: str, name: str, description: str, custom_data: customData(true), status, href: { type: 'string', format: 'uri' },
    created_at: timestamp, modified_at: timestamp,
  }),
  Group: obj({
    id: str, name: str, description: str, custom_data: customData(false), status, application: str,
    href: { type: 'string', format: 'uri' }, created_at: timestamp, modified_at: timestamp,
  }),
  Organization: obj({
    id: str, name: str, description: str, custom_data: customData(true), status, href: { type: 'string', format: 'uri' },
    created_at: timestamp, modified_at: timestamp,
  }),
  OrganizationBrief: obj({ id: str, name: str, custom_data: customData(true) }),
  ApiKey: obj({ id: str, name: str, description: str, status, href: { type: 'string', format: 'uri' } }),
  ApiKeyWithSecret: obj({
    id: str, name: str, description: str, status, secret: { type: 'string', description: 'Shown by create and update only.' },
    href: { type: 'string', format: 'uri' },
  }),
  User: obj({
    id: str, username: str, email: str, name: str, status: { type: 'string', enum: ['UNVERIFIED', 'ENABLED', 'DISABLED'] },
    custom_data: customData(true), organization: ref('OrganizationBrief'),
    applications: { type: 'array', items: ref('Application') }, groups: { type: 'array', items: ref('Group') },
    apikeys: { type: 'array', items: ref('ApiKey') }, href: { type: 'string', format: 'uri' }, created_at: timestamp, modified_at: timestamp,
  }),
  UserListed: obj({
    id: str, username: str, email: str, name: str, status: { type: 'string', enum: ['UNVERIFIED', 'ENABLED', 'DISABLED'] },
    custom_data: customData(true), organization: { type: 'string', description: 'Organization id.' },
    applications: idList, groups: idList, apikeys: { type: 'array', items: ref('ApiKey') },
    href: { type: 'string', format: 'uri' }, created_at: timestamp, modified_at: timestamp,
  }),
  UserMinimal: {
    ...obj({
      id: str, username: str, email: str, name: str, status: { type: 'string', enum: ['UNVERIFIED', 'ENABLED', 'DISABLED'] },
      custom_data: customData(true), organization: ref('OrganizationBrief'),
      href: { type: 'string', format: 'uri' }, created_at: timestamp, modified_at: timestamp,
    }),
    description: '`minimal=1` of GET /users and searches: without applications, groups and API Keys.',
  },
  UserListedMinimal: {
    ...obj({
      id: str, username: str, email: str, name: str, status: { type: 'string', enum: ['UNVERIFIED', 'ENABLED', 'DISABLED'] },
      custom_data: customData(true), organization: { type: 'string', description: 'Organization id.' },
      href: { type: 'string', format: 'uri' }, created_at: timestamp, modified_at: timestamp,
    }),
    description: '`minimal=1` of the per-Application, per-Group and per-Organization user listings.',
  },
  UserAuthenticated: {
    ...obj({
      id: str, username: str, email: str, name: str, status: { type: 'string', enum: ['UNVERIFIED', 'ENABLED', 'DISABLED'] },
      custom_data: customData(true), organization: { ...obj({ id: str, name: str }), type: ['object', 'null'] },
      applications: { type: 'array', items: obj({ id: str, name: str, status }) },
      groups: { type: 'array', items: obj({ id: str, name: str, status, application: str }) },
      apikeys: { type: 'array', items: obj({ id: str, name: str, status }) },
      href: { type: 'string', format: 'uri' }, created_at: timestamp, modified_at: timestamp,
    }),
    description: 'The User of a successful POST /authenticate: its own custom_data; its memberships, Organization and API Keys ' +
      'by id and name only (no custom_data or description: GET /groups/group/{id} has a Group\'s).',
  },
  Error: obj({ status: { type: 'integer' }, code: { type: 'string', enum: Object.keys(errorCatalog) }, message: str }),
  ErrorEnvelope: obj({
    service: obj({
      error: ref('Error'),
      result: { ...obj({ deleted: { type: 'boolean', const: false } }), description: 'Only on a refused delete.' },
      elapsed: { type: 'number' },
    }, ['error', 'elapsed']),
  }),
};

const snapshotResult = obj({
  snapshot: obj({
    taken: { type: 'boolean' }, reason: str,
    file: { type: 'string', description: 'The snapshot\'s file name within the data directory (DATA_DIR), not its path.' },
    base_seq: { type: 'integer' }, entities: { type: 'integer' },
    bytes: { type: 'integer' }, duration_ms: { type: 'number' }, event_loop_delay_max_ms: { type: 'number' },
    event_loop_delay_p99_ms: { type: 'number' },
  }, ['taken']),
});

/** Every route the service serves. */
export const routeDocs: readonly RouteDoc[] = [
  { method: 'GET', pattern: '/health', operationId: 'health', tag: 'Service', summary: 'Liveness check', public: true, result: obj({ status: { type: 'string', const: 'ok' } }) },
  {
    method: 'GET', pattern: '/openapi.json', operationId: 'openapi', tag: 'Service', summary: 'This document', public: true,
    raw: 'application/json', result: { type: 'object' },
  },
  {
    method: 'GET', pattern: '/metrics', operationId: 'metrics', tag: 'Service', summary: 'Prometheus metrics (text format 0.0.4)',
    raw: 'text/plain', result: { type: 'string' },
  },
  {
    method: 'POST', pattern: '/authenticate', operationId: 'authenticate', tag: 'Authenticate',
    summary: 'Check a User\'s password or API Key against an Application',
    description: 'Every failure answers `authenticated: false` alike; on success the User comes along, its memberships by id and name.',
    body: bodies.authenticate, result: obj({ authenticated: { type: 'boolean' }, user: ref('UserAuthenticated') }, ['authenticated']),
  },
  { method: 'POST', pattern: '/admin/snapshot', operationId: 'takeSnapshot', tag: 'Admin', summary: 'Write a snapshot now', result: snapshotResult },

  { method: 'GET', pattern: '/applications', operationId: 'listApplications', tag: 'Applications', summary: 'List Applications', paged: true, result: listOf('applications', ref('Application')) },
  { method: 'POST', pattern: '/applications/application', operationId: 'createApplication', tag: 'Applications', summary: 'Create an Application', body: bodies.applicationCreate, result: one('application', ref('Application')) },
  { method: 'GET', pattern: '/applications/application/:appid', operationId: 'getApplication', tag: 'Applications', summary: 'Read an Application', result: one('application', ref('Application')) },
  { method: 'PUT', pattern: '/applications/application/:appid', operationId: 'updateApplication', tag: 'Applications', summary: 'Update an Application', body: bodies.applicationUpdate, result: one('application', ref('Application')) },
  { method: 'DELETE', pattern: '/applications/application/:appid', operationId: 'deleteApplication', tag: 'Applications', summary: 'Delete a DISABLED Application without Users or Groups', result: deleted },
  { method: 'GET', pattern: '/applications/application/:appid/users', operationId: 'listApplicationUsers', tag: 'Applications', summary: 'Users of an Application (memberships as ids)', paged: true, result: listOf('users', ref('UserListed')) },
  { method: 'GET', pattern: '/applications/application/:appid/groups', operationId: 'listApplicationGroups', tag: 'Applications', summary: 'Groups of an Application', paged: true, result: listOf('groups', ref('Group')) },

  { method: 'GET', pattern: '/groups', operationId: 'listGroups', tag: 'Groups', summary: 'List Groups', paged: true, result: listOf('groups', ref('Group')) },
  { method: 'POST', pattern: '/groups/group', operationId: 'createGroup', tag: 'Groups', summary: 'Create a Group in an Application', body: bodies.groupCreate, result: one('group', ref('Group')) },
  { method: 'GET', pattern: '/groups/group/:groupid', operationId: 'getGroup', tag: 'Groups', summary: 'Read a Group', result: one('group', ref('Group')) },
  { method: 'PUT', pattern: '/groups/group/:groupid', operationId: 'updateGroup', tag: 'Groups', summary: 'Update a Group', body: bodies.groupUpdate, result: one('group', ref('Group')) },
  { method: 'DELETE', pattern: '/groups/group/:groupid', operationId: 'deleteGroup', tag: 'Groups', summary: 'Delete a DISABLED Group', result: deleted },
  { method: 'GET', pattern: '/groups/group/:groupid/users', operationId: 'listGroupUsers', tag: 'Groups', summary: 'Users of a Group (memberships as ids)', paged: true, result: listOf('users', ref('UserListed')) },

  { method: 'GET', pattern: '/organizations', operationId: 'listOrganizations', tag: 'Organizations', summary: 'List Organizations', paged: true, result: listOf('organizations', ref('Organization')) },
  { method: 'POST', pattern: '/organizations/organization', operationId: 'createOrganization', tag: 'Organizations', summary: 'Create an Organization (name unique, case-insensitively)', body: bodies.organizationCreate, result: one('organization', ref('Organization')) },
  { method: 'GET', pattern: '/organizations/organization/:orgid', operationId: 'getOrganization', tag: 'Organizations', summary: 'Read an Organization', result: one('organization', ref('Organization')) },
  { method: 'PUT', pattern: '/organizations/organization/:orgid', operationId: 'updateOrganization', tag: 'Organizations', summary: 'Update an Organization', body: bodies.organizationUpdate, result: one('organization', ref('Organization')) },
  { method: 'DELETE', pattern: '/organizations/organization/:orgid', operationId: 'deleteOrganization', tag: 'Organizations', summary: 'Delete a DISABLED Organization without Users (never the default one)', result: deleted },
  { method: 'GET', pattern: '/organizations/organization/:orgid/users', operationId: 'listOrganizationUsers', tag: 'Organizations', summary: 'Users of an Organization (memberships as ids)', paged: true, result: listOf('users', ref('UserListed')) },

  {
    method: 'GET', pattern: '/users', operationId: 'listUsers', tag: 'Users', summary: 'List every User (full representation)', paged: true,
    description: 'Resource intensive without `limit`: prefer paging, search or the per-Application listing.', result: listOf('users', ref('User')),
  },
  {
    method: 'GET', pattern: '/users/search/:search', operationId: 'searchUsers', tag: 'Users', paged: true,
    summary: 'Users whose email, name, id, API Key ids or custom_data.company_name contain the term, case-insensitively', result: listOf('users', ref('User')),
  },
  { method: 'POST', pattern: '/users/user', operationId: 'createUser', tag: 'Users', summary: 'Create a User (give password or password_hash)', body: bodies.userCreate, result: one('user', ref('User')) },
  { method: 'GET', pattern: '/users/user/:userid', operationId: 'getUser', tag: 'Users', summary: 'Read a User', result: one('user', ref('User')) },
  {
    method: 'PUT', pattern: '/users/user/:userid', operationId: 'updateUser', tag: 'Users', summary: 'Update a User',
    description: '`applications` and `groups` add memberships; `organization` moves the User.', body: bodies.userUpdate, result: one('user', ref('User')),
  },
  { method: 'DELETE', pattern: '/users/user/:userid', operationId: 'deleteUser', tag: 'Users', summary: 'Delete a DISABLED User', result: deleted },
  { method: 'DELETE', pattern: '/users/user/:userid/application/:appid', operationId: 'removeUserApplication', tag: 'Users', summary: 'The User leaves an Application and its Groups', result: deleted },
  { method: 'DELETE', pattern: '/users/user/:userid/group/:groupid', operationId: 'removeUserGroup', tag: 'Users', summary: 'The User leaves a Group', result: deleted },

  { method: 'POST', pattern: '/users/user/:userid/apikey', operationId: 'createApikey', tag: 'API Keys', summary: 'Create an API Key (answer carries its secret)', body: bodies.apikeyCreate, result: one('apikey', ref('ApiKeyWithSecret')) },
  { method: 'GET', pattern: '/users/user/:userid/apikey/:apikeyid', operationId: 'getApikey', tag: 'API Keys', summary: 'Read an API Key (without its secret)', result: one('apikey', ref('ApiKey')) },
  { method: 'PUT', pattern: '/users/user/:userid/apikey/:apikeyid', operationId: 'updateApikey', tag: 'API Keys', summary: 'Update an API Key (answer carries its secret)', body: bodies.apikeyUpdate, result: one('apikey', ref('ApiKeyWithSecret')) },
  {
    method: 'POST', pattern: '/users/user/:userid/apikey/:apikeyid', operationId: 'updateApikeyByPost', tag: 'API Keys',
    summary: 'Update an API Key, as PUT (the spec\'s sample request uses POST)', body: bodies.apikeyUpdate, result: one('apikey', ref('ApiKeyWithSecret')),
  },
  { method: 'DELETE', pattern: '/users/user/:userid/apikey/:apikeyid', operationId: 'deleteApikey', tag: 'API Keys', summary: 'Delete a DISABLED API Key', result: deleted },
];

function pathOf(pattern: string): string {
  return pattern.replace(/:([A-Za-z]+)/g, '{$1}');
}

function parameters(doc: RouteDoc): JsonSchema[] {
  const out: JsonSchema[] = [];
  for (const m of doc.pattern.matchAll(/:([A-Za-z]+)/g)) {
    const name = m[1]!;
    const schema = name === 'search'
      ? { type: 'string', minLength: 1, maxLength: searchTermCharsMax, description: 'The search term, percent-encoded.' }
      : { type: 'string', pattern: '^[0-9A-Za-z]+$', maxLength: idCharsMax };
    out.push({ name, in: 'path', required: true, schema });
  }
  if (doc.paged === true) {
    out.push(
      { name: 'limit', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: pageItemsMax }, description: 'Page size. Without it the whole list is answered.' },
      { name: 'cursor', in: 'query', required: false, schema: { type: 'string', maxLength: pageCursorCharsMax }, description: 'The `next` of the previous page (with the same `limit`).' },
    );
  }
  return out;
}

/** Error answers, described once in components.responses and referred to by status. */
const errorResponseDescriptions: Record<string, string> = {
  BadRequest: 'Invalid body, path id or query (invalid_field, invalid_json, invalid_id, invalid_query, unknown_reference).',
  Unauthorized: 'No or wrong credentials, or a caller outside the base Application (with WWW-Authenticate).',
  NotFound: 'No entity with that id.',
  Conflict: 'The change breaks a rule: duplicate email or name, delete refused (with result {"deleted": false}), protected entity, limit.',
  PayloadTooLarge: 'The body is over BODY_BYTES_MAX.',
  Unavailable: 'Overloaded (with Retry-After), storage unavailable, or starting.',
  Error: 'Any error of the catalog.',
};

function errorResponses(doc: RouteDoc): Record<string, JsonSchema> {
  const use = (name: string): JsonSchema => ({ $ref: `#/components/responses/${name}` });
  const out: Record<string, JsonSchema> = {};
  if (doc.paged === true || doc.pattern.includes(':') || doc.body !== undefined) out['400'] = use('BadRequest');
  if (doc.public !== true) out['401'] = use('Unauthorized');
  if (doc.pattern.includes(':')) out['404'] = use('NotFound');
  if (doc.method !== 'GET') out['409'] = use('Conflict');
  if (doc.body !== undefined) out['413'] = use('PayloadTooLarge');
  out['503'] = use('Unavailable');
  out['default'] = use('Error');
  return out;
}

function successResponse(doc: RouteDoc): JsonSchema {
  if (doc.raw !== undefined) return { description: doc.summary, content: { [doc.raw]: { schema: doc.result } } };
  let result = doc.result;
  if (doc.paged === true) {
    const r = result as { properties: Record<string, JsonSchema>; required: string[] };
    result = {
      ...result,
      properties: { ...r.properties, next: { type: 'string', description: 'Cursor of the next page; absent on the last one (only with `limit`).' } },
    };
  }
  const envelope = obj({ service: obj({ result, elapsed: { type: 'number', description: 'Seconds of processing time.' } }) });
  return { description: 'OK', content: { 'application/json': { schema: envelope } } };
}

function operation(doc: RouteDoc): JsonSchema {
  const op: JsonSchema = { operationId: doc.operationId, tags: [doc.tag], summary: doc.summary };
  if (doc.description !== undefined) op['description'] = doc.description;
  if (doc.public === true) op['security'] = [];
  const params = parameters(doc);
  if (params.length > 0) op['parameters'] = params;
  if (doc.body !== undefined) {
    op['requestBody'] = { required: true, content: { 'application/json': { schema: doc.body.describe() } } };
  }
  op['responses'] = { '200': successResponse(doc), ...errorResponses(doc) };
  return op;
}

export function openApiDocument(): JsonSchema {
  const paths: Record<string, Record<string, JsonSchema>> = {};
  for (const doc of routeDocs) {
    const item = (paths[pathOf(doc.pattern)] ??= {});
    item[doc.method.toLowerCase()] = operation(doc);
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'authd',
      version: apiVersion,
      description: 'Authentication and account management. Every JSON answer is the envelope `{"service":{"result":...,"elapsed":...}}`; ' +
        'errors carry `service.error` (status, code, message). Lists answer whole without `limit`, in pages with it.',
    },
    security: [{ basic: [] }],
    paths,
    components: {
      securitySchemes: { basic: { type: 'http', scheme: 'basic', description: 'Email and password, or API Key id and secret, of a User of the base Application.' } },
      schemas: entitySchemas,
      responses: Object.fromEntries(Object.entries(errorResponseDescriptions).map(([name, description]) => [
        name, { description, content: { 'application/json': { schema: ref('ErrorEnvelope') } } },
      ])),
    },
  };
}

/** The document as served and as checked in: stable key order, two-space indent, final newline. */
export function openApiJson(): string {
  return `${JSON.stringify(openApiDocument(), null, 2)}\n`;
}

/** GET /openapi.json, without credentials; rendered once at start-up. */
export function openApiRoutes(): RouteSpec[] {
  const json = openApiJson();
  return [
    {
      method: 'GET', pattern: '/openapi.json', public: true,
      handler: () => ({ result: json, contentType: 'application/json' }),
    },
  ];
}
