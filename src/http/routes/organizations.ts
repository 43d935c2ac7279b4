// Routes of /organizations: list, create, read, update, delete, and the Organization's Users.

import * as decide from '../../store/decide.js';
import { organizationCreate, organizationUpdate } from '../bodies.js';
import { listing, minimalRequested, pageRequest, pageResult, rendering } from '../paging.js';
import type { RouteSpec } from '../pipeline.js';
import { deletedTrue, keyed, pathId, type RouteDeps } from './context.js';

export function organizationRoutes({ state, committer, renderer }: RouteDeps): RouteSpec[] {
  return [
    {
      method: 'GET', pattern: '/organizations',
      handler: ({ query }) => {
        const page = pageRequest(query);
        if (page !== undefined) return { result: pageResult('organizations', state.pageOrganizations(page.after, page.limit), (o) => renderer.organization(o)) };
        return listing('organizations', rendering(state.allOrganizations(), (o) => renderer.organization(o)));
      },
    },
    {
      method: 'POST', pattern: '/organizations/organization',
      handler: async ({ body }) => {
        const input = organizationCreate.parse(body, 'body');
        const org = await committer.commit((s, ctx) => decide.createOrganization(s, { ...input, name: input.name! }, ctx));
        return { result: keyed('organization', renderer.organization(org)) };
      },
    },
    {
      method: 'GET', pattern: '/organizations/organization/:orgid',
      handler: ({ params }) => ({ result: keyed('organization', renderer.organization(decide.mustOrganization(state, pathId(params, 'orgid')))) }),
    },
    {
      method: 'PUT', pattern: '/organizations/organization/:orgid',
      handler: async ({ params, body }) => {
        const id = pathId(params, 'orgid');
        decide.mustOrganization(state, id);
        const input = organizationUpdate.parse(body, 'body');
        const org = await committer.commit((s, ctx) => decide.updateOrganization(s, id, input, ctx));
        return { result: keyed('organization', renderer.organization(org)) };
      },
    },
    {
      method: 'DELETE', pattern: '/organizations/organization/:orgid',
      handler: async ({ params }) => {
        const id = pathId(params, 'orgid');
        await committer.commit((s) => decide.deleteOrganization(s, id));
        return { result: deletedTrue };
      },
    },
    {
      method: 'GET', pattern: '/organizations/organization/:orgid/users',
      handler: ({ params, query }) => {
        const id = decide.mustOrganization(state, pathId(params, 'orgid')).id;
        const page = pageRequest(query);
        const minimal = minimalRequested(query);
        if (page !== undefined) return { result: pageResult('users', state.pageUsersOfOrganization(id, page.after, page.limit), (u) => renderer.userIds(u, minimal)) };
        return listing('users', rendering(state.usersOfOrganization(id), (u) => renderer.userIds(u, minimal)));
      },
    },
  ];
}
