// What a caller may do: its capabilities at the caller check, and again against the state each change it makes is decided on; the route context whose commit() is that check.

import type { ApiKey, User } from '../domain/entities.js';
import { DomainError, forbidden } from '../domain/errors.js';
import { callerCapabilities, hasCapability, roleFor, rolesOfUser } from '../domain/roles.js';
import type { DecideContext, Decision } from '../store/decide.js';
import type { State } from '../store/state.js';
import type { HttpRequest } from './adapter.js';
import type { Caller, RouteContext, RouteDecl, RouteDeps, StateGuard } from './route.js';

/** A key of the User, by id. A loop, not find(): no closure per request. */
function apikeyOf(user: User, keyId: string): ApiKey | undefined {
  for (const key of user.apikeys) if (key.id === keyId) return key;
  return undefined;
}

/** What the caller may do now: its User's roles as they are (a caller is a base User), narrowed by its key's. */
export function capabilitiesOfCaller(caller: Caller): number {
  return callerCapabilities(rolesOfUser(true, caller.user.roles), caller.keyId === undefined ? undefined : apikeyOf(caller.user, caller.keyId)?.roles);
}

/**
 * The caller's capabilities in `state`, or undefined when it would no longer pass the caller check there: its User
 * deleted, DISABLED or out of the base Application, the password it called with changed, or the API Key it called
 * with deleted, DISABLED or given a new nonce (a new secret). `checked`: its capabilities at the caller check.
 */
export function capabilitiesIn(state: State, caller: Caller, checked: number): number | undefined {
  const now = state.user(caller.user.id);
  // Entities are replaced, never changed in place: the very object it was checked as means nothing changed.
  if (now === caller.user) return checked;
  if (now === undefined || now.status === 'DISABLED' || !state.isBaseUser(now)) return undefined;
  const roles = rolesOfUser(true, now.roles);
  if (caller.keyId === undefined) {
    // A re-hash (the same password stored anew after a login) keeps passwordChangedAt; a new password moves it.
    return now.passwordChangedAt === caller.user.passwordChangedAt ? callerCapabilities(roles, undefined) : undefined;
  }
  const used = apikeyOf(caller.user, caller.keyId);
  const key = apikeyOf(now, caller.keyId);
  if (used === undefined || key === undefined || key.status !== 'ENABLED' || key.nonce !== used.nonce) return undefined;
  return callerCapabilities(roles, key.roles);
}

/** The context a handler is called with (RouteContext): what the pipeline found, and the one door to a change. */
export class RequestContext<B> implements RouteContext<B> {
  /** Whether the handler asked for a change: a 404 after that was decided (and confirmed) by the committer. */
  committed = false;

  constructor(
    private readonly decl: RouteDecl,
    readonly params: Readonly<Record<string, string>>,
    readonly query: string,
    readonly body: B,
    readonly caller: Caller | undefined,
    readonly caps: number,
    readonly req: HttpRequest,
    /** Seen by handlers as HandlerDeps (RouteContext): without the committer, which only commit() uses. */
    readonly deps: RouteDeps,
  ) {}

  commit<T>(decide: (state: State, ctx: DecideContext) => Decision<T>, guard?: StateGuard): Promise<T> {
    const { caller, decl } = this;
    const { committer } = this.deps;
    this.committed = true;
    if (caller === undefined || decl.access === 'public') return committer.commit(decide);
    const access = decl.access;
    // Runs where the change is decided, synchronously (and again on a cluster node that decides again after a
    // conflict): whatever the request awaited since its checks (a hash, the commit queue), nothing has moved in between.
    return committer.commit((state, ctx) => {
      const caps = capabilitiesIn(state, caller, this.caps);
      if (caps === undefined) throw new DomainError('unauthorized', 'The caller\'s credentials stopped passing while its request waited; nothing was changed.');
      if (!hasCapability(caps, access)) throw forbidden(roleFor[access], `${this.req.method} ${decl.pattern}`);
      guard?.(state, { caps });
      return decide(state, ctx);
    });
  }
}
