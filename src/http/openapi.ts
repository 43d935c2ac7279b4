// The OpenAPI 3.1 document, derived from the route declarations (src/http/route.ts): paths, bodies, results and roles.
//
// test/openapi-document.test.ts fails when the served document or docs/openapi.json differ from what this
// file generates. Regenerate the checked-in copy with `npm run openapi`.

import {
  idCharsMax, pageCursorCharsMax, pageItemsMax, pageOffsetMax, searchTermCharsMax, tokenTtlSecondsDefault, tokenTtlSecondsMax, tokenTtlSecondsMin,
} from '../config/limits.js';
import { signingAlgs, tokenAlgs } from '../domain/entities.js';
import { errorCatalog } from '../domain/errors.js';
import { roleNames, rolesGranting } from '../domain/roles.js';
import type { RouteDecl } from './route.js';

export type JsonSchema = Record<string, unknown>;

/** Version of the HTTP API described; bump it with any change to the document. */
export const apiVersion = '1.4.0';

export const ref = (name: string): JsonSchema => ({ $ref: `#/components/schemas/${name}` });
export const obj = (properties: Record<string, JsonSchema>, required = Object.keys(properties)): JsonSchema => ({
  type: 'object', properties, required, additionalProperties: false,
});
export const str: JsonSchema = { type: 'string' };
const status: JsonSchema = { type: 'string', enum: ['ENABLED', 'DISABLED'] };
const timestamp: JsonSchema = { type: 'string', description: 'UTC, `YYYY-MM-DD HH:MM:SS.ffffff+00:00` (may be empty for the base Application).' };
const customData = (nullable: boolean): JsonSchema => ({ type: nullable ? ['object', 'null'] : 'object', additionalProperties: true });
const idList: JsonSchema = { type: 'array', items: str };
export const listOf = (key: string, item: JsonSchema): JsonSchema => obj({ [key]: { type: 'array', items: item } });
export const one = (key: string, item: JsonSchema): JsonSchema => obj({ [key]: item });
export const deleted: JsonSchema = obj({ deleted: { type: 'boolean', const: true } });

const roles: JsonSchema = {
  type: 'array', items: { type: 'string', enum: [...roleNames] }, uniqueItems: true,
  description: 'What a caller may do (admin, manager, auditor, authenticator); on an API Key, narrows its User\'s.',
};
const userRoles: JsonSchema = { ...roles, description: 'Only on Users of the base Application: what the User may do as a caller (admin unless narrowed).' };
const organizationId: JsonSchema = { type: 'string', description: 'Organization id.' };

/** A User representation: the fields every one has around what differs (its Organization and memberships); all but `roles` always there. */
function userSchema(middle: Record<string, JsonSchema>): JsonSchema {
  const head = {
    id: str, username: str, email: str, name: str, status: { type: 'string', enum: ['UNVERIFIED', 'ENABLED', 'DISABLED'] },
    custom_data: customData(true),
  };
  const tail = { href: { type: 'string', format: 'uri' }, created_at: timestamp, modified_at: timestamp };
  const properties = { ...head, ...middle, roles: userRoles, ...tail };
  return obj(properties, Object.keys(properties).filter((k) => k !== 'roles'));
}

const applicationProperties = {
  id: str, name: str, description: str, custom_data: customData(true), status, tokens: ref('TokenSettings'), href: { type: 'string', format: 'uri' },
  created_at: timestamp, modified_at: timestamp,
};

/** The public representations of src/http/render.ts. */
const entitySchemas: Record<string, JsonSchema> = {
  Application: obj(applicationProperties),
  ApplicationWithSecret: obj({ ...applicationProperties, jwt_secret: { type: 'string', description: 'The HS256 secret: only in the answer of the change that set it.' } }),
  TokenSettings: obj({
    enabled: { type: 'boolean', description: 'Whether a successful POST /authenticate also answers an access token. Default false.' },
    ttl: { type: 'integer', minimum: tokenTtlSecondsMin, maximum: tokenTtlSecondsMax, description: `Seconds a token lives. Default ${tokenTtlSecondsDefault}.` },
    alg: { type: 'string', enum: [...tokenAlgs], description: 'EdDSA and ES256: the service\'s keys (GET /.well-known/jwks.json); HS256: the Application\'s jwt_secret. Default EdDSA.' },
  }),
  Jwks: obj({ keys: { type: 'array', items: { type: 'object', description: 'A public JWK with kid, alg and use.' } } }),
  Introspection: {
    ...obj({ active: { type: 'boolean' }, token_type: { type: 'string', const: 'Bearer' } }, ['active']),
    description: 'RFC 7662: `{"active": false}` alone, or `active: true` with the token\'s claims (iss, sub, aud, iat, exp, jti, amr, apikey_id) ' +
      'and the User\'s name, email, groups and org as they are now.',
    additionalProperties: true,
  },
  SigningKey: obj({
    kid: str, alg: { type: 'string', enum: [...signingAlgs] }, status: { type: 'string', enum: ['current', 'retired'] },
    created_at: timestamp, published_until: { type: 'string', description: 'When a retired key leaves the JWKS; empty for a current key.' },
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
  ApiKey: obj({ id: str, name: str, description: str, status, roles, href: { type: 'string', format: 'uri' } }, ['id', 'name', 'description', 'status', 'href']),
  ApiKeyWithSecret: obj({
    id: str, name: str, description: str, status, roles, secret: { type: 'string', description: 'Shown by create and update only.' },
    href: { type: 'string', format: 'uri' },
  }, ['id', 'name', 'description', 'status', 'secret', 'href']),
  User: userSchema({
    organization: ref('OrganizationBrief'), applications: { type: 'array', items: ref('Application') },
    groups: { type: 'array', items: ref('Group') }, apikeys: { type: 'array', items: ref('ApiKey') },
  }),
  UserListed: userSchema({ organization: organizationId, applications: idList, groups: idList, apikeys: { type: 'array', items: ref('ApiKey') } }),
  UserMinimal: {
    ...userSchema({ organization: ref('OrganizationBrief') }),
    description: '`minimal=1` of GET /users and searches: without applications, groups and API Keys.',
  },
  UserListedMinimal: {
    ...userSchema({ organization: organizationId }),
    description: '`minimal=1` of the per-Application, per-Group and per-Organization user listings.',
  },
  UserAuthenticated: {
    ...userSchema({
      organization: { ...obj({ id: str, name: str }), type: ['object', 'null'] },
      applications: { type: 'array', items: obj({ id: str, name: str, status }) },
      groups: { type: 'array', items: obj({ id: str, name: str, status, application: str }) },
      apikeys: { type: 'array', items: obj({ id: str, name: str, status }) },
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

function pathOf(pattern: string): string {
  return pattern.replace(/:([A-Za-z]+)/g, '{$1}');
}

function parameters(doc: RouteDecl): JsonSchema[] {
  const out: JsonSchema[] = [];
  for (const m of doc.pattern.matchAll(/:([A-Za-z]+)/g)) {
    const name = m[1]!;
    const schema = name === 'search'
      ? { type: 'string', minLength: 1, maxLength: searchTermCharsMax, description: 'The search term, percent-encoded.' }
      : { type: 'string', pattern: '^[0-9A-Za-z]+$', maxLength: idCharsMax };
    out.push({ name, in: 'path', required: true, schema });
  }
  if (doc.minimal === true) {
    out.push({
      name: 'minimal', in: 'query', required: false, schema: { type: 'string', enum: ['1', 'true', '0', 'false'] },
      description: '`1` or `true`: Users without applications, groups and API Keys.',
    });
  }
  if (doc.paged === true) {
    out.push(
      { name: 'limit', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: pageItemsMax }, description: 'Page size. Without it the whole list is answered. A page is cut short where its items would pass pageBytesMax (4 MiB), `next` then continuing after the last item sent.' },
      { name: 'cursor', in: 'query', required: false, schema: { type: 'string', maxLength: pageCursorCharsMax }, description: 'The `next` of the previous page (with the same `limit`). The recommended way to page.' },
      {
        name: 'offset', in: 'query', required: false, schema: { type: 'integer', minimum: 0, maximum: pageOffsetMax },
        description: 'Compatibility with clients written against econtext-auth: the page starts this many entities into the listing\'s order (0-based), with the same `next` as any page. Needs `limit`; not with `cursor`. Past the end the page is empty. Bounded, as a deep offset costs a walk from the start of the order; a cursor does not. Advance it by the items received, as a page may be cut short at its byte budget.',
      },
    );
  }
  return out;
}

/** Error answers, described once in components.responses and referred to by status. */
const errorResponseDescriptions: Record<string, string> = {
  BadRequest: 'Invalid body, path id or query (invalid_field, invalid_json, invalid_id, invalid_query, unknown_reference).',
  Unauthorized: 'No or wrong credentials, or a caller outside the base Application (with WWW-Authenticate).',
  Forbidden: 'The caller\'s roles (narrowed by its API Key\'s) do not grant this operation, or the change needs admin (forbidden).',
  NotFound: 'No entity with that id.',
  Conflict: 'The change breaks a rule: duplicate email or name, delete refused (with result {"deleted": false}), protected entity, limit.',
  PayloadTooLarge: 'The body is over BODY_BYTES_MAX.',
  Unavailable: 'Overloaded (with Retry-After), storage unavailable, or starting.',
  Error: 'Any error of the catalog.',
};

function errorResponses(doc: RouteDecl): Record<string, JsonSchema> {
  const use = (name: string): JsonSchema => ({ $ref: `#/components/responses/${name}` });
  const out: Record<string, JsonSchema> = {};
  if (doc.paged === true || doc.minimal === true || doc.pattern.includes(':') || doc.body !== undefined) out['400'] = use('BadRequest');
  if (doc.access !== 'public') {
    out['401'] = use('Unauthorized');
    out['403'] = use('Forbidden');
  }
  if (doc.pattern.includes(':')) out['404'] = use('NotFound');
  if (doc.method !== 'GET') out['409'] = use('Conflict');
  if (doc.body !== undefined) out['413'] = use('PayloadTooLarge');
  out['503'] = use('Unavailable');
  out['default'] = use('Error');
  return out;
}

function successResponse(doc: RouteDecl): JsonSchema {
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

function operation(doc: RouteDecl): JsonSchema {
  const op: JsonSchema = { operationId: doc.operationId, tags: [doc.tag], summary: doc.summary };
  const roles = doc.access === 'public' ? [] : rolesGranting(doc.access);
  const who = doc.access === 'public' ? 'Anyone, without credentials.' : `Roles: ${roles.join(', ')}.`;
  op['description'] = doc.description === undefined ? who : `${doc.description}\n\n${who}`;
  op['x-roles'] = roles;
  if (doc.access === 'public') op['security'] = [];
  const params = parameters(doc);
  if (params.length > 0) op['parameters'] = params;
  if (doc.body !== undefined) {
    op['requestBody'] = { required: true, content: { 'application/json': { schema: doc.body.describe() } } };
  }
  op['responses'] = { '200': successResponse(doc), ...errorResponses(doc) };
  return op;
}

export function openApiDocument(routes: readonly RouteDecl[]): JsonSchema {
  const paths: Record<string, Record<string, JsonSchema>> = {};
  for (const doc of routes) {
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
export function openApiJson(routes: readonly RouteDecl[]): string {
  return `${JSON.stringify(openApiDocument(routes), null, 2)}\n`;
}
