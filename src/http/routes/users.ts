// Routes of /users: list, search, create, read, update, delete, and adding or removing one membership. Base-Application Users and roles are an admin's.

import { validatePasswordHash } from '../../auth/hash-pool.js';
import { searchResultsInlineMax, searchTermCharsMax } from '../../config/limits.js';
import { foldText } from '../../domain/email.js';
import type { User } from '../../domain/entities.js';
import { DomainError, invalidField } from '../../domain/errors.js';
import { hasLoneSurrogate } from '../../domain/schema.js';
import { firstMatches, laterMatches, searchPage } from '../../service/search-slices.js';
import { whenReady } from '../../service/when-ready.js';
import * as decide from '../../store/decide.js';
import type { SearchCursor } from '../../store/search.js';
import type { State } from '../../store/state.js';
import { userCreate, userUpdate } from '../bodies.js';
import { deleted, listOf, obj, one, ref } from '../openapi.js';
import { listing, minimalRequested, pageRequest, pageResult, rendering } from '../paging.js';
import { streamPause } from '../pipeline.js';
import type { Renderer } from '../render.js';
import { deletedTrue, guardNow, keyed, pathId, requireAdmin, route, type RouteDecl, type RouteResult, type StateGuard } from '../route.js';

function searchTerm(raw: string): string {
  let term: string;
  try {
    term = decodeURIComponent(raw);
  } catch {
    throw invalidField('search', 'is not a well-formed percent-encoded term');
  }
  if (term.length === 0) throw invalidField('search', 'must not be empty');
  if (term.length > searchTermCharsMax) throw invalidField('search', `must be at most ${searchTermCharsMax} characters`);
  if (hasLoneSurrogate(term)) throw invalidField('search', 'must be valid UTF-8 text');
  return foldText(term);
}

type RenderUser = (user: User) => string;

/**
 * The full representation, or with `minimal=1` one without memberships and API Keys. Never from the per-User
 * cache: random terms over many Users would cycle it, and every rendering it kept and then dropped would be
 * promoted to the old generation first, whose collections made the slowest searches (see docs/performance.md).
 */
function userRenderer(renderer: Renderer, minimal: boolean): RenderUser {
  return minimal ? (u) => renderer.userMinimal(u) : (u) => renderer.userFull(u);
}

/** The same for a page (pageResult), which takes a full User in parts. */
function userPageRenderer(renderer: Renderer, minimal: boolean): (user: User) => string | readonly string[] {
  return minimal ? (u) => renderer.userMinimal(u) : (u) => renderer.userFullParts(u);
}

/** Users found by a search: one deleted since (slices run between other requests) is skipped. */
function* rendered(state: State, ids: readonly string[], render: RenderUser): Generator<string> {
  for (const id of ids) {
    const user = state.user(id);
    if (user !== undefined) yield render(user);
  }
}

/** The matches found so far, then a slice of matching per item at most, a pause after each slice. */
function* streamedMatches(state: State, found: readonly string[], cursor: SearchCursor, render: RenderUser): Generator<string> {
  yield* rendered(state, found, render);
  for (const more of laterMatches(cursor)) {
    yield* rendered(state, more, render);
    yield streamPause;
  }
}

/**
 * A manager changes end users; a User of the base Application (a caller of this API), adding one to it, and any
 * roles are an admin's. State-dependent: a handler runs it before its await and hands it to ctx.commit, which runs
 * it again where the change is decided (a User may have joined the base Application meanwhile).
 */
export function userGuard(userId: string | undefined, input?: { readonly applications?: readonly string[]; readonly roles?: unknown }): StateGuard {
  return (state, caller) => {
    if (input?.roles !== undefined) requireAdmin(caller, 'Setting roles');
    const user = userId === undefined ? undefined : state.user(userId);
    if (user !== undefined && state.isBaseUser(user)) requireAdmin(caller, 'Changing a User of the base Application');
    if (input?.applications?.some((id) => state.isBaseApplication(id)) === true) requireAdmin(caller, 'Adding a User to the base Application');
  };
}

const tag = 'Users';

/** The answers of the upstream API's membership POSTs, which its clients check. */
const applicationAdded = obj({ application: { type: 'boolean', const: true } });
const groupAdded = obj({ group: { type: 'boolean', const: true } });
const compatibility = 'Compatibility with clients of the upstream API (econtext-auth); `PUT /users/user/{userid}` with `applications` or `groups` does the same.';

export const userRoutes: readonly RouteDecl[] = [
  route({
    method: 'GET', pattern: '/users', operationId: 'listUsers', tag, summary: 'List every User (full representation)', paged: true, minimal: true,
    description: 'Resource intensive without `limit`: prefer paging, search or the per-Application listing.',
    access: 'read', audit: 'none', result: listOf('users', { oneOf: [ref('User'), ref('UserMinimal')] }),
    handler: ({ query, deps: { state, renderer } }) => {
      const page = pageRequest(query);
      const minimal = minimalRequested(query);
      if (page !== undefined) return { result: pageResult('users', state.pageUsers(page.after, page.limit, page.offset), userPageRenderer(renderer, minimal)) };
      // A million users would be a gigabyte as one string: rendered and sent as the client drains it.
      return listing('users', rendering(state.allUsers(), userRenderer(renderer, minimal)));
    },
  }),
  route({
    method: 'GET', pattern: '/users/search/:search', operationId: 'searchUsers', tag, paged: true, minimal: true,
    summary: 'Users whose email, name, id, API Key ids or custom_data.company_name contain the term, case-insensitively',
    access: 'read', audit: 'none', result: listOf('users', { oneOf: [ref('User'), ref('UserMinimal')] }),
    // Bad input is refused before the first slice; a search done in its first slice answers without a promise.
    handler: ({ params, query, deps: { state, renderer } }) => {
      const page = pageRequest(query);
      const minimal = minimalRequested(query);
      const term = searchTerm(params['search'] ?? '');
      if (page !== undefined) {
        const render = userPageRenderer(renderer, minimal);
        return whenReady(searchPage(state.beginPageSearch(term, page.after, page.limit, page.offset)), (found) => ({ result: pageResult('users', found, render) }));
      }
      const render = userRenderer(renderer, minimal);
      const cursor = state.search.cursor(term);
      // A short term can match most users: past the first matches, the rest is matched as the client drains them.
      return whenReady(firstMatches(cursor, searchResultsInlineMax + 1), (ids): RouteResult => listing('users', streamedMatches(state, ids, cursor, render)));
    },
  }),
  route({
    method: 'POST', pattern: '/users/user', operationId: 'createUser', tag, summary: 'Create a User (give password or password_hash)',
    access: 'manage', audit: 'user.create', body: userCreate, result: one('user', ref('User')),
    handler: async (ctx) => {
      const { body: input, deps: { state, pool, renderer } } = ctx;
      const guard = guardNow(ctx, userGuard(undefined, input));
      const email = input.email!;
      if (input.password !== undefined && input.password_hash !== undefined) {
        throw invalidField('password_hash', 'give either password or password_hash, not both');
      }
      if (input.password === undefined && input.password_hash === undefined) throw invalidField('password', 'is required');
      if (input.password_hash !== undefined && !validatePasswordHash(input.password_hash)) {
        throw invalidField('password_hash', 'must be an argon2id PHC string or a bcrypt hash ($2a$, $2b$, $2y$)');
      }
      if (!(input.applications !== undefined && input.applications.length > 0)) {
        throw invalidField('applications', 'a User must be associated with at least one Application');
      }
      // Refuse a taken email before spending a hash on it; decide() checks again at commit time.
      if (state.userByEmail(email) !== undefined) throw new DomainError('duplicate_email', 'email: a User with this email already exists.');
      const passwordHash = input.password_hash ?? (await pool.hashPassword(input.password!));
      const user = await ctx.commit((s, dc) => decide.createUser(s, { ...input, email, passwordHash }, dc), guard);
      return { result: keyed('user', renderer.userFull(user)), targets: { user: user.id } };
    },
  }),
  route({
    method: 'GET', pattern: '/users/user/:userid', operationId: 'getUser', tag, summary: 'Read a User',
    access: 'read', audit: 'none', result: one('user', ref('User')),
    handler: ({ params, deps: { state, renderer } }) => ({ result: keyed('user', renderer.userFullKept(decide.mustUser(state, pathId(params, 'userid')))) }),
  }),
  route({
    method: 'PUT', pattern: '/users/user/:userid', operationId: 'updateUser', tag, summary: 'Update a User',
    description: '`applications` and `groups` add memberships; `organization` moves the User; `roles` (admin only, base Users only) replaces its roles. ' +
      'Joining the base Application (admin only) needs `password` in the same request, and disables the User\'s API Keys with new secrets and no roles.',
    access: 'manage', audit: 'user.update', body: userUpdate, result: one('user', ref('User')),
    handler: async (ctx) => {
      const { body: input, deps: { state, pool, renderer } } = ctx;
      const id = pathId(ctx.params, 'userid');
      decide.mustUser(state, id);
      const guard = guardNow(ctx, userGuard(id, input));
      const passwordHash = input.password === undefined ? undefined : await pool.hashPassword(input.password);
      const user = await ctx.commit((s, dc) => decide.updateUser(s, id, { ...input, passwordHash }, dc), guard);
      return { result: keyed('user', renderer.userFull(user)) };
    },
  }),
  route({
    method: 'DELETE', pattern: '/users/user/:userid', operationId: 'deleteUser', tag, summary: 'Delete a DISABLED User',
    access: 'manage', audit: 'user.delete', result: deleted,
    handler: async (ctx) => {
      const id = pathId(ctx.params, 'userid');
      const guard = guardNow(ctx, userGuard(id));
      await ctx.commit((s) => decide.deleteUser(s, id), guard);
      return { result: deletedTrue };
    },
  }),
  route({
    method: 'DELETE', pattern: '/users/user/:userid/application/:appid', operationId: 'removeUserApplication', tag,
    summary: 'The User leaves an Application and its Groups', access: 'manage', audit: 'user.leave_application', result: deleted,
    handler: async (ctx) => {
      const userId = pathId(ctx.params, 'userid');
      const appId = pathId(ctx.params, 'appid');
      const guard = guardNow(ctx, userGuard(userId));
      await ctx.commit((s, dc) => decide.removeUserApplication(s, userId, appId, dc), guard);
      return { result: deletedTrue };
    },
  }),
  route({
    method: 'DELETE', pattern: '/users/user/:userid/group/:groupid', operationId: 'removeUserGroup', tag,
    summary: 'The User leaves a Group', access: 'manage', audit: 'user.leave_group', result: deleted,
    handler: async (ctx) => {
      const userId = pathId(ctx.params, 'userid');
      const groupId = pathId(ctx.params, 'groupid');
      const guard = guardNow(ctx, userGuard(userId));
      await ctx.commit((s, dc) => decide.removeUserGroup(s, userId, groupId, dc), guard);
      return { result: deletedTrue };
    },
  }),
  route({
    method: 'POST', pattern: '/users/user/:userid/application/:appid', operationId: 'addUserApplication', tag,
    summary: 'The User joins an Application (one it is in already: nothing changes)',
    description: `${compatibility} Not for joining the base Application, which needs a new password: that is \`PUT /users/user/{userid}\` with \`applications\` and \`password\`.`,
    access: 'manage', audit: 'user.join_application', result: applicationAdded,
    handler: async (ctx) => {
      const userId = pathId(ctx.params, 'userid');
      const appId = pathId(ctx.params, 'appid');
      const guard = guardNow(ctx, userGuard(userId, { applications: [appId] }));
      await ctx.commit((s, dc) => decide.addUserApplication(s, userId, appId, dc), guard);
      return { result: '{"application":true}' };
    },
  }),
  route({
    method: 'POST', pattern: '/users/user/:userid/group/:groupid', operationId: 'addUserGroup', tag,
    summary: 'The User joins a Group of one of its Applications (one it is in already: nothing changes)', description: compatibility,
    access: 'manage', audit: 'user.join_group', result: groupAdded,
    handler: async (ctx) => {
      const userId = pathId(ctx.params, 'userid');
      const groupId = pathId(ctx.params, 'groupid');
      const guard = guardNow(ctx, userGuard(userId));
      await ctx.commit((s, dc) => decide.addUserGroup(s, userId, groupId, dc), guard);
      return { result: '{"group":true}' };
    },
  }),
];
