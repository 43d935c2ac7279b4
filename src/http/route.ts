// The one declaration of a route: method, path, operationId, schemas, capability, audit action and handler. The router, validation, permission check, audit line and OpenAPI document all derive from it.

import type { ApiKeySecrets } from '../auth/apikey-secrets.js';
import type { HashPool, OverloadedError } from '../auth/hash-pool.js';
import type { User } from '../domain/entities.js';
import { DomainError, forbidden } from '../domain/errors.js';
import { hasCapability, type Capability } from '../domain/roles.js';
import type { Schema } from '../domain/schema.js';
import type { SnapshotWritten } from '../persist/snapshot.js';
import type { Authenticator } from '../service/authenticator.js';
import type { Commits } from '../service/committer.js';
import type { DecideContext, Decision } from '../store/decide.js';
import { isWellFormedId } from '../domain/ids.js';
import type { State } from '../store/state.js';
import type { TokenService } from '../tokens/token-service.js';
import type { BodyPiece, BodyText, HttpRequest } from './adapter.js';
import type { Metrics } from './metrics.js';
import type { Renderer } from './render.js';
import type { Method } from './router.js';

type JsonSchema = Record<string, unknown>;

/** What handlers work with; given once to the pipeline, so the route table itself is a constant. */
/** GET /health/ready's answer. */
export type Readiness = 'ready' | 'catching_up' | 'degraded';

export interface RouteDeps {
  readonly state: State;
  readonly committer: Commits;
  readonly authenticator: Authenticator;
  readonly renderer: Renderer;
  readonly pool: HashPool;
  readonly secrets: ApiKeySecrets;
  readonly tokens: TokenService;
  readonly snapshots: { snapshot(): Promise<SnapshotWritten | undefined> };
  /** Whether this node serves with all it should know: always 'ready' embedded; in cluster mode see src/cluster/cluster-node.ts. */
  readiness(): Readiness | Promise<Readiness>;
  readonly metrics: Metrics;
}

/** A caller whose credentials passed: its User, and the API Key it used (whose roles narrow the User's). */
export interface Caller {
  readonly user: User;
  readonly keyId?: string | undefined;
}

/** What handlers see of RouteDeps: all but the committer, since a route changes state only through RouteContext.commit. */
export type HandlerDeps = Omit<RouteDeps, 'committer'>;

/**
 * A route's permission rule that reads state (is the target a base User, does the change add the base Application):
 * called by the handler against the state before any await, to refuse early, and given to RouteContext.commit,
 * which calls it again with the state the change is decided on and the caller's capabilities as they are then.
 */
export type StateGuard = (state: State, caller: { readonly caps: number }) => void;

export interface RouteContext<B> {
  readonly params: Readonly<Record<string, string>>;
  readonly query: string;
  /** The body as the route's schema parsed it; undefined for a route without one. */
  readonly body: B;
  readonly caller: Caller | undefined;
  /** The caller's capabilities (src/domain/roles.ts) at its check; 0 for a public route. */
  readonly caps: number;
  readonly req: HttpRequest;
  readonly deps: HandlerDeps;
  /**
   * Makes a change on the caller's behalf (src/http/permission.ts). Inside the synchronous decide step, against the
   * state the change is decided on (and again whenever a cluster node decides it again after a conflict), the
   * caller's capabilities are derived anew, since its User may have been demoted, disabled, given a new password
   * or removed from the base Application, or its API Key disabled, while the request awaited a hash or the commit
   * queue; then the route's access is checked again, then `guard`, then `decide`. A Commits too, for a service
   * that takes one (token rotation).
   */
  commit<T>(decide: (state: State, ctx: DecideContext) => Decision<T>, guard?: StateGuard): Promise<T>;
}

/**
 * A handler's answer: the JSON text of `result` (rendered by src/http/render.ts), or for listings too
 * large to hold as one string, `list`: result is then {"<key>": [items...]}, streamed as it is rendered.
 */
export type RouteResult = {
  readonly status?: number;
  /** Send `result` as it is, with this Content-Type, instead of inside the envelope (GET /metrics, GET /openapi.json). */
  readonly contentType?: string;
  readonly headers?: readonly (readonly [string, string])[];
  /** Ids the audit line names beyond the path's: what a create made, e.g. { user: id }. */
  readonly targets?: Readonly<Record<string, string>>;
} & ({ readonly result: BodyText; readonly list?: undefined } | { readonly list: { readonly key: string; readonly items: Iterable<string> } });

/** A handler's answer, or the error it would have thrown: returned on hot refusal paths (`overloaded`, see src/auth/hash-pool.ts). */
export type RouteHandler<B> = (ctx: RouteContext<B>) => RouteResult | OverloadedError | Promise<RouteResult | OverloadedError>;

export interface RouteDecl<B = unknown> {
  readonly method: Method;
  /** e.g. `/users/user/:userid/apikey/:apikeyid` */
  readonly pattern: string;
  readonly operationId: string;
  readonly tag: string;
  readonly summary: string;
  readonly description?: string;
  /** Who may call it: anyone (`public`), or callers with this capability (src/domain/roles.ts). */
  readonly access: Capability | 'public';
  /**
   * The audit action of a change (`user.create`), written once per call whatever its outcome; `self` for a
   * route that writes its own lines (POST /authenticate); `none` for reads, audited only when refused a role.
   */
  readonly audit: string;
  /** Validates the JSON body before the handler runs; without it any body is only checked to be JSON. */
  readonly body?: Schema<B>;
  /** Schema of `service.result`; for `raw` routes, of the whole body. */
  readonly result: JsonSchema;
  /** Takes `limit` and `cursor`. */
  readonly paged?: boolean;
  /** Takes `minimal` (users without memberships and API Keys). */
  readonly minimal?: boolean;
  /** Answered outside the envelope with this media type. */
  readonly raw?: string;
  readonly handler: RouteHandler<B>;
  /**
   * Answers a request it recognises by its Authorization header and its JSON body's exact bytes, before the
   * caller check and the parse (POST /authenticate from a caller, with credentials, that passed lately),
   * else undefined and the request takes the usual way. Only for a route that audits itself.
   */
  readonly recognise?: (req: HttpRequest & { readonly body: Buffer }, deps: RouteDeps) => RouteResult | Promise<RouteResult> | undefined;
}

export const auditsItself = 'self';
export const notAudited = 'none';

/** Declares a route; the body type flows from its schema into its handler. */
export function route<B = undefined>(decl: RouteDecl<B>): RouteDecl {
  return decl as unknown as RouteDecl;
}

/** Refuses a change that only an admin may make (a base-Application User, roles), whatever the route asks of callers. */
export function requireAdmin(caller: { readonly caps: number }, what: string): void {
  if (!hasCapability(caller.caps, 'admin')) throw forbidden('admin', what);
}

/** Runs a route's StateGuard against the state as it is now, to refuse before any await, and returns it for ctx.commit to run again. */
export function guardNow(ctx: { readonly caps: number; readonly deps: { readonly state: State } }, guard: StateGuard): StateGuard {
  guard(ctx.deps.state, ctx);
  return guard;
}

/** A path id, checked before any lookup. */
export function pathId(params: Readonly<Record<string, string>>, name: string): string {
  const value = params[name] ?? '';
  if (!isWellFormedId(value)) throw new DomainError('invalid_id', `${name}: not a well-formed identifier.`);
  return value;
}

/** `{"<key>":<json>}` in pieces, so a large cached json is not copied into a new string (BodyText, src/http/adapter.ts). */
export function keyed(key: string, json: BodyPiece): readonly BodyPiece[] {
  return [`{"${key}":`, json, '}'];
}

export const deletedTrue = '{"deleted":true}';
