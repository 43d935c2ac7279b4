// Every route of the service, in one table: the pipeline serves it, the OpenAPI document describes it.

import { openApiJson } from '../openapi.js';
import { route, type RouteDecl } from '../route.js';
import { apikeyRoutes } from './apikeys.js';
import { applicationRoutes } from './applications.js';
import { authenticateRoutes } from './authenticate.js';
import { groupRoutes } from './groups.js';
import { organizationRoutes } from './organizations.js';
import { serviceRoutes } from './service.js';
import { tokenRoutes } from './tokens.js';
import { userRoutes } from './users.js';

/** Rendered on first request: the document describes the whole table, itself included. */
let openApiText: string | undefined;

const openApiRoute = route({
  method: 'GET', pattern: '/openapi.json', operationId: 'openapi', tag: 'Service', summary: 'This document',
  access: 'public', audit: 'none', raw: 'application/json', result: { type: 'object' },
  handler: () => ({ result: (openApiText ??= openApiJson(routeTable)), contentType: 'application/json' }),
});

export const routeTable: readonly RouteDecl[] = [
  ...serviceRoutes,
  openApiRoute,
  ...authenticateRoutes,
  ...applicationRoutes,
  ...groupRoutes,
  ...organizationRoutes,
  ...userRoutes,
  ...apikeyRoutes,
  ...tokenRoutes,
];
