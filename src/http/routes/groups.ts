// Routes of /groups: list, create, read, update, delete, and the Group's Users.

import * as decide from '../../store/decide.js';
import { groupCreate, groupUpdate } from '../bodies.js';
import { listing, minimalRequested, pageRequest, pageResult, rendering } from '../paging.js';
import type { RouteSpec } from '../pipeline.js';
import { deletedTrue, keyed, pathId, type RouteDeps } from './context.js';

export function groupRoutes({ state, committer, renderer }: RouteDeps): RouteSpec[] {
  return [
    {
      method: 'GET', pattern: '/groups',
      handler: ({ query }) => {
        const page = pageRequest(query);
        if (page !== undefined) return { result: pageResult('groups', state.pageGroups(page.after, page.limit), (g) => renderer.group(g)) };
        return listing('groups', rendering(state.allGroups(), (g) => renderer.group(g)));
      },
    },
    {
      method: 'POST', pattern: '/groups/group',
      handler: async ({ body }) => {
        const input = groupCreate.parse(body, 'body');
        const group = await committer.commit((s, ctx) => decide.createGroup(s, { ...input, name: input.name!, application: input.application! }, ctx));
        return { result: keyed('group', renderer.group(group)) };
      },
    },
    {
      method: 'GET', pattern: '/groups/group/:groupid',
      handler: ({ params }) => ({ result: keyed('group', renderer.group(decide.mustGroup(state, pathId(params, 'groupid')))) }),
    },
    {
      method: 'PUT', pattern: '/groups/group/:groupid',
      handler: async ({ params, body }) => {
        const id = pathId(params, 'groupid');
        decide.mustGroup(state, id);
        const input = groupUpdate.parse(body, 'body');
        const group = await committer.commit((s, ctx) => decide.updateGroup(s, id, input, ctx));
        return { result: keyed('group', renderer.group(group)) };
      },
    },
    {
      method: 'DELETE', pattern: '/groups/group/:groupid',
      handler: async ({ params }) => {
        const id = pathId(params, 'groupid');
        await committer.commit((s) => decide.deleteGroup(s, id));
        return { result: deletedTrue };
      },
    },
    {
      method: 'GET', pattern: '/groups/group/:groupid/users',
      handler: ({ params, query }) => {
        const id = decide.mustGroup(state, pathId(params, 'groupid')).id;
        const page = pageRequest(query);
        const minimal = minimalRequested(query);
        if (page !== undefined) return { result: pageResult('users', state.pageUsersOfGroup(id, page.after, page.limit), (u) => renderer.userIds(u, minimal)) };
        return listing('users', rendering(state.usersOfGroup(id), (u) => renderer.userIds(u, minimal)));
      },
    },
  ];
}
