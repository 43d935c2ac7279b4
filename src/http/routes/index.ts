// Every route of the service, in one list.

import type { RouteSpec } from '../pipeline.js';
import { adminRoutes } from './admin.js';
import { apikeyRoutes } from './apikeys.js';
import { applicationRoutes } from './applications.js';
import { authenticateRoutes } from './authenticate.js';
import type { RouteDeps } from './context.js';
import { groupRoutes } from './groups.js';
import { metricsRoutes } from '../metrics.js';
import { openApiRoutes } from '../openapi.js';
import { organizationRoutes } from './organizations.js';
import { userRoutes } from './users.js';

export function allRoutes(deps: RouteDeps): RouteSpec[] {
  return [
    ...authenticateRoutes(deps),
    ...applicationRoutes(deps),
    ...groupRoutes(deps),
    ...userRoutes(deps),
    ...apikeyRoutes(deps),
    ...adminRoutes(deps),
    ...organizationRoutes(deps),
    ...metricsRoutes(deps.metrics),
    ...openApiRoutes(),
  ];
}
