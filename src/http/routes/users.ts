// Routes of /users: list, search, create, read, update, delete, and removal of one membership.

import { validatePasswordHash } from '../../auth/hash-pool.js';
import { searchResultsInlineMax, searchTermCharsMax } from '../../config/limits.js';
import { foldText } from '../../domain/email.js';
import { DomainError, invalidField } from '../../domain/errors.js';
import { firstMatches, laterMatches, searchPage } from '../../service/search-slices.js';
import { whenReady } from '../../service/when-ready.js';
import * as decide from '../../store/decide.js';
import type { SearchCursor } from '../../store/search.js';
import type { User } from '../../domain/entities.js';
import { hasLoneSurrogate } from '../../domain/schema.js';
import { userCreate, userUpdate } from '../bodies.js';
import { listing, minimalRequested, pageRequest, pageResult, rendering } from '../paging.js';
import { streamPause, type RouteResult, type RouteSpec } from '../pipeline.js';
import { deletedTrue, keyed, pathId, type RouteDeps } from './context.js';

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

export function userRoutes({ state, committer, renderer, pool }: RouteDeps): RouteSpec[] {
  const render = (minimal: boolean) => (user: User): string => (minimal ? renderer.userMinimal(user) : renderer.userFull(user));

  /** Users found by a search: one deleted since (slices run between other requests) is skipped. */
  function* rendered(ids: readonly string[], renderUser: (user: User) => string): Generator<string> {
    for (const id of ids) {
      const user = state.user(id);
      if (user !== undefined) yield renderUser(user);
    }
  }

  /** The matches found so far, then a slice of matching per item at most, a pause after each slice. */
  function* streamedMatches(found: readonly string[], cursor: SearchCursor, renderUser: (user: User) => string): Generator<string> {
    yield* rendered(found, renderUser);
    for (const more of laterMatches(cursor)) {
      yield* rendered(more, renderUser);
      yield streamPause;
    }
  }

  return [
    {
      method: 'GET', pattern: '/users',
      handler: ({ query }) => {
        const page = pageRequest(query);
        const renderUser = render(minimalRequested(query));
        if (page !== undefined) return { result: pageResult('users', state.pageUsers(page.after, page.limit), renderUser) };
        // A million users would be a gigabyte as one string: rendered and sent as the client drains it.
        return listing('users', rendering(state.allUsers(), renderUser));
      },
    },
    {
      method: 'GET', pattern: '/users/search/:search',
      // Bad input is refused before the first slice; a search done in its first slice answers without a promise.
      handler: ({ params, query }) => {
        const page = pageRequest(query);
        const renderUser = render(minimalRequested(query));
        const term = searchTerm(params['search'] ?? '');
        if (page !== undefined) {
          return whenReady(searchPage(state.beginPageSearch(term, page.after, page.limit)), (found) => ({ result: pageResult('users', found, renderUser) }));
        }
        const cursor = state.search.cursor(term);
        // A short term can match most users: past the first matches, the rest is matched as the client drains them.
        return whenReady(firstMatches(cursor, searchResultsInlineMax + 1), (ids): RouteResult => listing('users', streamedMatches(ids, cursor, renderUser)));
      },
    },
    {
      method: 'POST', pattern: '/users/user',
      handler: async ({ body }) => {
        const input = userCreate.parse(body, 'body');
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
        const user = await committer.commit((s, ctx) => decide.createUser(s, { ...input, email, passwordHash }, ctx));
        return { result: keyed('user', renderer.userFull(user)) };
      },
    },
    {
      method: 'GET', pattern: '/users/user/:userid',
      handler: ({ params }) => ({ result: keyed('user', renderer.userFullBytes(decide.mustUser(state, pathId(params, 'userid')))) }),
    },
    {
      method: 'PUT', pattern: '/users/user/:userid',
      handler: async ({ params, body }) => {
        const id = pathId(params, 'userid');
        decide.mustUser(state, id);
        const input = userUpdate.parse(body, 'body');
        const passwordHash = input.password === undefined ? undefined : await pool.hashPassword(input.password);
        const user = await committer.commit((s, ctx) => decide.updateUser(s, id, { ...input, passwordHash }, ctx));
        return { result: keyed('user', renderer.userFull(user)) };
      },
    },
    {
      method: 'DELETE', pattern: '/users/user/:userid',
      handler: async ({ params }) => {
        const id = pathId(params, 'userid');
        await committer.commit((s) => decide.deleteUser(s, id));
        return { result: deletedTrue };
      },
    },
    {
      method: 'DELETE', pattern: '/users/user/:userid/application/:appid',
      handler: async ({ params }) => {
        const userId = pathId(params, 'userid');
        const appId = pathId(params, 'appid');
        await committer.commit((s, ctx) => decide.removeUserApplication(s, userId, appId, ctx));
        return { result: deletedTrue };
      },
    },
    {
      method: 'DELETE', pattern: '/users/user/:userid/group/:groupid',
      handler: async ({ params }) => {
        const userId = pathId(params, 'userid');
        const groupId = pathId(params, 'groupid');
        await committer.commit((s, ctx) => decide.removeUserGroup(s, userId, groupId, ctx));
        return { result: deletedTrue };
      },
    },
  ];
}
