// Routes of /applications: the shared collection routes, the Groups of an Application, and its HS256 secret.

import type { Application } from '../../domain/entities.js';
import * as decide from '../../store/decide.js';
import { newJwtSecret } from '../../tokens/token-service.js';
import { applicationCreate, applicationUpdate } from '../bodies.js';
import { listOf, one, ref } from '../openapi.js';
import { listing, pageRequest, pageResult, rendering } from '../paging.js';
import { guardNow, keyed, pathId, requireAdmin, route, type RouteDecl, type StateGuard } from '../route.js';
import { collectionRoutes } from './collections.js';

/** An Application's create or update input; `jwt_secret` is the plaintext of `secret`, kept for the answer only. */
type ApplicationBody = decide.ApplicationInput & { jwt_secret?: string };

function guardBase(id: string | undefined): StateGuard {
  return (state, caller) => {
    if (state.isBaseApplication(id)) requireAdmin(caller, 'Changing the base Application');
  };
}

export const applicationRoutes: readonly RouteDecl[] = [
  ...collectionRoutes<Application, ApplicationBody, ApplicationBody>({
    kind: 'application', plural: 'applications', base: '/applications/application', param: 'appid', title: 'Application',
    summaries: { create: 'Create an Application', delete: 'Delete a DISABLED Application without Users or Groups' },
    createBody: applicationCreate, updateBody: applicationUpdate,
    all: (s) => s.allApplications(), page: (s, after, limit, offset) => s.pageApplications(after, limit, offset), must: decide.mustApplication,
    render: (r, a) => r.application(a), create: decide.createApplication, update: decide.updateApplication, remove: decide.deleteApplication,
    users: (s, id) => s.usersOfApplication(id), usersPage: (s, id, after, limit, offset) => s.pageUsersOfApplication(id, after, limit, offset),
    guard: (state, caller, { id }) => guardBase(id)(state, caller),
    // Sealed before deciding: the secret the caller gave, else a new one, used only if HS256 ends up on without one.
    prepare: (ctx, input) => {
      const plain = input.jwt_secret ?? newJwtSecret();
      return { ...input, jwt_secret: plain, secret: { sealed: ctx.deps.tokens.sealSecret(plain), given: input.jwt_secret !== undefined } };
    },
    // The secret is shown once: in the answer of the change that set it.
    answer: (ctx, input, before, after) => (after.jwtSecret !== undefined && after.jwtSecret !== before?.jwtSecret && after.jwtSecret === input.secret?.sealed
      ? ctx.deps.renderer.applicationWithSecret(after, input.jwt_secret!)
      : undefined),
  }),
  route({
    method: 'GET', pattern: '/applications/application/:appid/groups', operationId: 'listApplicationGroups', tag: 'Applications',
    summary: 'Groups of an Application', paged: true, access: 'read', audit: 'none', result: listOf('groups', ref('Group')),
    handler: ({ params, query, deps: { state, renderer } }) => {
      const id = decide.mustApplication(state, pathId(params, 'appid')).id;
      const page = pageRequest(query);
      if (page !== undefined) return { result: pageResult('groups', state.pageGroupsOfApplication(id, page.after, page.limit, page.offset), (g) => renderer.group(g)) };
      return listing('groups', rendering(state.groupsOfApplication(id), (g) => renderer.group(g)));
    },
  }),
  route({
    method: 'POST', pattern: '/applications/application/:appid/jwt-secret', operationId: 'rotateApplicationJwtSecret', tag: 'Applications',
    summary: 'Give an Application a new HS256 secret (answered once, here)',
    description: 'Tokens signed with the old secret stop verifying. The Application\'s token settings are unchanged: set `tokens.alg` to `HS256` to sign with it.',
    access: 'manage', audit: 'application.jwt_secret', result: one('application', ref('ApplicationWithSecret')),
    handler: async (ctx) => {
      const id = pathId(ctx.params, 'appid');
      decide.mustApplication(ctx.deps.state, id);
      const guard = guardNow(ctx, guardBase(id));
      const plain = newJwtSecret();
      const sealed = ctx.deps.tokens.sealSecret(plain);
      const app = await ctx.commit((s, dc) => decide.rotateJwtSecret(s, id, sealed, dc), guard);
      return { result: keyed('application', ctx.deps.renderer.applicationWithSecret(app, plain)) };
    },
  }),
];
