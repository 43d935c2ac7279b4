// Routes of /applications: list, create, read, update, delete, and the Application's Users and Groups.

import * as decide from '../../store/decide.js';
import { applicationCreate, applicationUpdate } from '../bodies.js';
import { listing, minimalRequested, pageRequest, pageResult, rendering } from '../paging.js';
import type { RouteSpec } from '../pipeline.js';
import { deletedTrue, keyed, pathId, type RouteDeps } from './context.js';

export function applicationRoutes({ state, committer, renderer }: RouteDeps): RouteSpec[] {
  return [
    {
      method: 'GET', pattern: '/applications',
      handler: ({ query }) => {
        const page = pageRequest(query);
        if (page !== undefined) return { result: pageResult('applications', state.pageApplications(page.after, page.limit), (a) => renderer.application(a)) };
        return listing('applications', rendering(state.allApplications(), (a) => renderer.application(a)));
      },
    },
    {
      method: 'POST', pattern: '/applications/application',
      handler: async ({ body }) => {
        const input = applicationCreate.parse(body, 'body');
        const app = await committer.commit((s, ctx) => decide.createApplication(s, input, ctx));
        return { result: keyed('application', renderer.application(app)) };
      },
    },
    {
      method: 'GET', pattern: '/applications/application/:appid',
      handler: ({ params }) => ({ result: keyed('application', renderer.application(decide.mustApplication(state, pathId(params, 'appid')))) }),
    },
    {
      method: 'PUT', pattern: '/applications/application/:appid',
      handler: async ({ params, body }) => {
        const id = pathId(params, 'appid');
        decide.mustApplication(state, id);
        const input = applicationUpdate.parse(body, 'body');
        const app = await committer.commit((s, ctx) => decide.updateApplication(s, id, input, ctx));
        return { result: keyed('application', renderer.application(app)) };
      },
    },
    {
      method: 'DELETE', pattern: '/applications/application/:appid',
      handler: async ({ params }) => {
        const id = pathId(params, 'appid');
        await committer.commit((s) => decide.deleteApplication(s, id));
        return { result: deletedTrue };
      },
    },
    {
      method: 'GET', pattern: '/applications/application/:appid/users',
      handler: ({ params, query }) => {
        const id = decide.mustApplication(state, pathId(params, 'appid')).id;
        const page = pageRequest(query);
        const minimal = minimalRequested(query);
        if (page !== undefined) return { result: pageResult('users', state.pageUsersOfApplication(id, page.after, page.limit), (u) => renderer.userIds(u, minimal)) };
        return listing('users', rendering(state.usersOfApplication(id), (u) => renderer.userIds(u, minimal)));
      },
    },
    {
      method: 'GET', pattern: '/applications/application/:appid/groups',
      handler: ({ params, query }) => {
        const id = decide.mustApplication(state, pathId(params, 'appid')).id;
        const page = pageRequest(query);
        if (page !== undefined) return { result: pageResult('groups', state.pageGroupsOfApplication(id, page.after, page.limit), (g) => renderer.group(g)) };
        return listing('groups', rendering(state.groupsOfApplication(id), (g) => renderer.group(g)));
      },
    },
  ];
}
