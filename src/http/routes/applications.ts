// Routes of /applications: the shared collection routes, and the Groups of an Application.

import type { Application } from '../../domain/entities.js';
import * as decide from '../../store/decide.js';
import { applicationCreate, applicationUpdate } from '../bodies.js';
import { listOf, ref } from '../openapi.js';
import { listing, pageRequest, pageResult, rendering } from '../paging.js';
import { pathId, requireAdmin, route, type RouteContext, type RouteDecl } from '../route.js';
import { collectionRoutes } from './collections.js';

export const applicationRoutes: readonly RouteDecl[] = [
  ...collectionRoutes<Application, decide.ApplicationInput, decide.ApplicationInput>({
    kind: 'application', plural: 'applications', base: '/applications/application', param: 'appid', title: 'Application',
    summaries: { create: 'Create an Application', delete: 'Delete a DISABLED Application without Users or Groups' },
    createBody: applicationCreate, updateBody: applicationUpdate,
    all: (s) => s.allApplications(), page: (s, after, limit) => s.pageApplications(after, limit), pageFrom: (s, offset, limit) => s.pageApplicationsFrom(offset, limit),
    must: decide.mustApplication,
    render: (r, a) => r.application(a), create: decide.createApplication, update: decide.updateApplication, remove: decide.deleteApplication,
    users: (s, id) => s.usersOfApplication(id), usersPage: (s, id, after, limit) => s.pageUsersOfApplication(id, after, limit),
    usersPageFrom: (s, id, offset, limit) => s.pageUsersOfApplicationFrom(id, offset, limit),
    guard: (ctx: RouteContext<unknown>, { id }) => {
      if (ctx.deps.state.isBaseApplication(id)) requireAdmin(ctx, 'Changing the base Application');
    },
  }),
  route({
    method: 'GET', pattern: '/applications/application/:appid/groups', operationId: 'listApplicationGroups', tag: 'Applications',
    summary: 'Groups of an Application', paged: true, access: 'read', audit: 'none', result: listOf('groups', ref('Group')),
    handler: ({ params, query, deps: { state, renderer } }) => {
      const id = decide.mustApplication(state, pathId(params, 'appid')).id;
      const page = pageRequest(query);
      if (page !== undefined) {
        const found = page.offset > 0 ? state.pageGroupsOfApplicationFrom(id, page.offset, page.limit) : state.pageGroupsOfApplication(id, page.after, page.limit);
        return { result: pageResult('groups', found, (g) => renderer.group(g)) };
      }
      return listing('groups', rendering(state.groupsOfApplication(id), (g) => renderer.group(g)));
    },
  }),
];
