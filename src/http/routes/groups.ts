// Routes of /groups: the shared collection routes; Groups of the base Application are changed by admins only.

import type { Group } from '../../domain/entities.js';
import * as decide from '../../store/decide.js';
import { groupCreate, groupUpdate } from '../bodies.js';
import { requireAdmin, type RouteDecl } from '../route.js';
import { collectionRoutes } from './collections.js';

type GroupCreate = ReturnType<typeof groupCreate.parse>;

export const groupRoutes: readonly RouteDecl[] = collectionRoutes<Group, GroupCreate, decide.GroupInput>({
  kind: 'group', plural: 'groups', base: '/groups/group', param: 'groupid', title: 'Group',
  summaries: { create: 'Create a Group in an Application', delete: 'Delete a DISABLED Group' },
  createBody: groupCreate, updateBody: groupUpdate,
  all: (s) => s.allGroups(), page: (s, after, limit, offset) => s.pageGroups(after, limit, offset), must: decide.mustGroup,
  render: (r, g) => r.group(g),
  create: (s, input, ctx) => decide.createGroup(s, { ...input, name: input.name!, application: input.application! }, ctx),
  update: decide.updateGroup, remove: decide.deleteGroup,
  users: (s, id) => s.usersOfGroup(id), usersPage: (s, id, after, limit, offset) => s.pageUsersOfGroup(id, after, limit, offset),
  guard: (state, caller, { id, input }) => {
    const application = input?.application ?? (id === undefined ? undefined : state.group(id)?.application);
    if (state.isBaseApplication(application)) requireAdmin(caller, 'Changing a Group of the base Application');
  },
});
