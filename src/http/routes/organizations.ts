// Routes of /organizations: the shared collection routes.

import type { Organization } from '../../domain/entities.js';
import * as decide from '../../store/decide.js';
import { organizationCreate, organizationUpdate } from '../bodies.js';
import type { RouteDecl } from '../route.js';
import { collectionRoutes } from './collections.js';

type OrganizationCreate = ReturnType<typeof organizationCreate.parse>;

export const organizationRoutes: readonly RouteDecl[] = collectionRoutes<Organization, OrganizationCreate, decide.OrganizationInput>({
  kind: 'organization', plural: 'organizations', base: '/organizations/organization', param: 'orgid', title: 'Organization',
  summaries: { create: 'Create an Organization (name unique, case-insensitively)', delete: 'Delete a DISABLED Organization without Users (never the default one)' },
  createBody: organizationCreate, updateBody: organizationUpdate,
  all: (s) => s.allOrganizations(), page: (s, after, limit, offset) => s.pageOrganizations(after, limit, offset), must: decide.mustOrganization,
  render: (r, o) => r.organization(o),
  create: (s, input, ctx) => decide.createOrganization(s, { ...input, name: input.name! }, ctx),
  update: decide.updateOrganization, remove: decide.deleteOrganization,
  users: (s, id) => s.usersOfOrganization(id), usersPage: (s, id, after, limit, offset) => s.pageUsersOfOrganization(id, after, limit, offset),
});
