// The request pipeline between the adapter and the route handlers: routing, caller and role checks, body validation, envelope, audit, error mapping.

import { OverloadedError } from '../auth/hash-pool.js';
import { parseBasicAuth } from '../auth/basic.js';
import { bodyJsonDepthMax, clusterStaleCheckWaitMs, unavailableRetryAfterS } from '../config/limits.js';
import { DomainError, errorCatalog, forbidden, type ErrorCode } from '../domain/errors.js';
import { hasCapability, roleFor } from '../domain/roles.js';
import type { AuditEntry } from '../service/audit.js';
import { type BodyPiece, type BodyText, type HttpRequest, type Reply } from './adapter.js';
import { bodyNestsTooDeep } from './json-depth.js';
import { capabilitiesOfCaller, RequestContext } from './permission.js';
import { auditsItself, notAudited, type Caller, type RouteDecl, type RouteDeps, type RouteResult } from './route.js';
import { routeKey, Router } from './router.js';

/** Characters gathered from rendered items before a chunk is handed to the socket. */
const streamChunkChars = 64 * 1024;

/**
 * An item of a `list` that is no item: its producer has just done a slice of work (a search matched
 * lazily) and asks for the rest of the event-loop turn to go to others. What was gathered goes out as a
 * short chunk, then an empty one, which the adapter takes as the end of its turn; so one chunk never
 * waits on more than one slice, however few matches the slices find.
 */
export const streamPause = '';

function* listChunks(items: Iterable<string>, req: HttpRequest): Generator<string> {
  let chunk = '';
  let first = true;
  for (const item of items) {
    if (item === streamPause) {
      if (chunk !== '') yield chunk;
      chunk = '';
      yield streamPause;
      continue;
    }
    chunk += first ? item : `,${item}`;
    first = false;
    if (chunk.length >= streamChunkChars) {
      yield chunk;
      chunk = '';
    }
  }
  yield `${chunk}]},"elapsed":${elapsedSeconds(req)}}}`;
}

export interface PipelineDeps {
  readonly realm: string;
  /**
   * Resolves the Basic credentials to a permitted caller, or undefined; address is the TCP peer, for the brute-force limiter;
   * authorization the header they came in, by which a caller that passes is known next time (knownCaller).
   * A promise only when the answer has to wait (an argon2 verification, a tarpit); `overloaded` when the hash queue is full.
   */
  caller(username: string, password: string, address: string, authorization: string): Caller | undefined | OverloadedError | Promise<Caller | undefined | OverloadedError>;
  /** The caller whose check passed lately with this very Authorization header from this peer, if still valid; else undefined and caller() decides. */
  knownCaller?(authorization: string, address: string): Caller | undefined;
  /** Told one entry per call of an audited route (RouteDecl.audit), per call refused for a role, and per refused credential format. */
  audit?(entry: AuditEntry): void;
  /** What handlers work with. */
  readonly routeDeps: RouteDeps;
  /** Failures that are not DomainErrors: a storage failure, a bug. Must not throw. */
  onUnexpected(err: unknown, req: HttpRequest): ErrorCode;
  /**
   * Cluster mode: resolves once this node has applied everything the log held when it was called (rejects with a 503
   * when it cannot within waitMs), for a read that asked for strong consistency (X-Consistency: strong, or
   * consistent=1 in the query), and before a 404 is given. Undefined: every read is strong.
   */
  strongRead?(waitMs?: number): Promise<void>;
}

/**
 * Cluster mode: a 404 decided on this node's state before any change was asked for, which may be behind the others',
 * stands only once the node has caught up with the stream's leader and the handler says it again; when it cannot
 * catch up, the 404 says it may be stale. Any other error is passed on as it is.
 */
function confirmNotFound(
  err: unknown, strongRead: (waitMs?: number) => Promise<void>, again: () => RouteResult | OverloadedError | Promise<RouteResult | OverloadedError>,
): Promise<RouteResult | OverloadedError> {
  if (!(err instanceof DomainError && err.code === 'not_found')) return Promise.reject(err);
  return strongRead(clusterStaleCheckWaitMs).then(again, () => Promise.reject(new DomainError('not_found',
    `${err.message} This node could not catch up with the cluster to confirm it: it may be behind.`, { headers: [['X-Consistency', 'stale']] })));
}

/** A read that must see every change acknowledged anywhere before it arrived. */
function wantsStrongRead(req: HttpRequest): boolean {
  return req.consistency === 'strong' || /(?:^|&)consistent=(?:1|true)(?:&|$)/.test(req.query);
}

function elapsedSeconds(req: HttpRequest): string {
  return ((performance.now() - req.startedAt) / 1000).toFixed(6);
}

/** The envelope around a result, as pieces: the result's own pieces are not copied into a new string (see BodyText). */
export function envelope(req: HttpRequest, result: BodyText): readonly BodyPiece[] {
  return ['{"service":{"result":', result, `,"elapsed":${elapsedSeconds(req)}}}`];
}

type HeaderList = readonly (readonly [string, string])[];

/**
 * Every answer of the service, errors included, forbids caches to keep it: it carries user data, an API Key's
 * secret or an account's state, and none is worth serving stale (GET /health and GET /openapi.json neither); the JWKS is the exception.
 * One array shared by every reply, so the common reply allocates no header list.
 */
export const noStoreHeaders: HeaderList = [['Cache-Control', 'no-store']];

/** A handler's own headers after the shared ones; the shared array itself when it has none. Only a public document (the JWKS) sets its own Cache-Control. */
function withNoStore(headers: HeaderList | undefined): HeaderList {
  if (headers === undefined || headers.length === 0) return noStoreHeaders;
  return headers.some(([name]) => name === 'Cache-Control') ? headers : [...noStoreHeaders, ...headers];
}

export function errorReply(req: HttpRequest, code: ErrorCode, message?: string, extra?: { result?: Record<string, unknown>; retryAfterS?: number; headers?: [string, string][] }): Reply {
  const status = errorCatalog[code].status;
  const error = JSON.stringify({ status, code, message: message ?? errorCatalog[code].message });
  const result = extra?.result === undefined ? '' : `"result":${JSON.stringify(extra.result)},`;
  let headers = withNoStore(extra?.headers);
  // Every 503 says when to come back: a client that honours it spreads its retries instead of hammering.
  const retryAfterS = extra?.retryAfterS ?? (status === 503 ? unavailableRetryAfterS : undefined);
  if (retryAfterS !== undefined) headers = [...headers, ['Retry-After', String(retryAfterS)]];
  return { status, body: `{"service":{${result}"error":${error},"elapsed":${elapsedSeconds(req)}}}`, headers };
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** JSON media types: application/json, with parameters, or any +json suffix. A missing Content-Type is taken as JSON. */
function isJsonContentType(value: string): boolean {
  if (value === '' || value === 'application/json') return true;
  const media = value.split(';', 1)[0]!.trim().toLowerCase();
  return media === 'application/json' || (media.startsWith('application/') && media.endsWith('+json'));
}

function hasJsonBody(req: HttpRequest): req is HttpRequest & { readonly body: Buffer } {
  return req.body !== undefined && req.body.length > 0 && isJsonContentType(req.contentType);
}

function parseBody(req: HttpRequest): unknown {
  if (req.body === undefined || req.body.length === 0) return {};
  if (!isJsonContentType(req.contentType)) throw new DomainError('unsupported_media_type');
  let text: string;
  try {
    text = utf8.decode(req.body);
  } catch {
    throw new DomainError('invalid_json', 'The request body is not valid UTF-8.');
  }
  // Refused before JSON.parse, which would spend long on deep nesting (and schema checks recurse as deep after it).
  if (bodyNestsTooDeep(req.body)) {
    throw new DomainError('invalid_json', `The request body nests arrays and objects more than ${bodyJsonDepthMax} levels deep.`);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new DomainError('invalid_json');
  }
}

/** The kind of entity a path parameter names, as the audit line calls it. */
const targetKinds: Readonly<Record<string, string>> = { appid: 'application', groupid: 'group', orgid: 'organization', userid: 'user', apikeyid: 'apikey' };

/** A route as served: its declaration, with what the pipeline derives from it once. */
interface Served {
  readonly decl: RouteDecl;
  /** `METHOD pattern`, made once so a reply names its route without allocating. */
  readonly key: string;
  /** Every call writes an audit line (a change). */
  readonly audited: boolean;
  /** The action of this route's audit lines: its declared one, else its operationId (a read refused for a role). */
  readonly action: string;
}

export function createPipeline(routes: readonly RouteDecl[], deps: PipelineDeps): (req: HttpRequest) => Promise<Reply> | Reply {
  const router = new Router<Served>();
  for (const decl of routes) {
    const action = decl.audit === notAudited || decl.audit === auditsItself ? decl.operationId : decl.audit;
    const audited = decl.audit !== notAudited && decl.audit !== auditsItself;
    router.add({ method: decl.method, pattern: decl.pattern, handler: { decl, key: routeKey(decl), audited, action } });
  }
  const challenge: [string, string][] = [['WWW-Authenticate', `Basic realm="${deps.realm}", charset="UTF-8"`]];

  const fail = (req: HttpRequest, err: unknown): Reply => {
    if (err instanceof DomainError) {
      return errorReply(req, err.code, err.message, {
        result: err.result, retryAfterS: err.retryAfterS, headers: err.code === 'unauthorized' ? challenge : err.headers?.map(([k, v]) => [k, v]),
      });
    }
    if (err instanceof OverloadedError) return errorReply(req, 'overloaded', undefined, { retryAfterS: err.retryAfterS });
    return errorReply(req, deps.onUnexpected(err, req));
  };

  /** The audit line of a call: the path's ids by kind, plus what the handler names (a create's new id). */
  const auditCall = (req: HttpRequest, route: Served, params: Record<string, string>, caller: Caller, outcome: string, reason?: string, more?: Readonly<Record<string, string>>): void => {
    const targets: Record<string, string> = {};
    for (const name in params) {
      const kind = targetKinds[name];
      if (kind !== undefined) targets[kind] = params[name]!;
    }
    if (more !== undefined) Object.assign(targets, more);
    deps.audit?.({ action: route.action, caller: caller.user.id, targets, outcome, reason, address: req.remoteAddress });
  };

  /** The reply to a request whose handler failed (or whose caller was refused), audited when the route is, or when a role was lacking. */
  const failed = (req: HttpRequest, route: Served, params: Record<string, string>, caller: Caller | undefined, err: unknown): Reply => {
    const reply = fail(req, err);
    const refused = err instanceof DomainError && err.code === 'forbidden';
    if ((route.audited || refused) && caller !== undefined) {
      const outcome = err instanceof DomainError ? err.code : reply.status === 503 ? 'unavailable' : 'error';
      auditCall(req, route, params, caller, outcome, err instanceof DomainError ? err.auditReason : undefined);
    }
    return { ...reply, route: route.key };
  };

  const respond = (req: HttpRequest, route: Served, params: Record<string, string>, caller: Caller | undefined, out: RouteResult | OverloadedError): Reply => {
    if (out instanceof OverloadedError) return failed(req, route, params, caller, out);
    if (route.audited && caller !== undefined) auditCall(req, route, params, caller, 'success', undefined, out.targets);
    if (out.list !== undefined) {
      return {
        status: out.status ?? 200, headers: withNoStore(out.headers),
        body: `{"service":{"result":{${JSON.stringify(out.list.key)}:[`, stream: listChunks(out.list.items, req), route: route.key,
      };
    }
    if (out.contentType !== undefined) return { status: out.status ?? 200, body: out.result, headers: withNoStore(out.headers), contentType: out.contentType, route: route.key };
    return { status: out.status ?? 200, body: envelope(req, out.result), headers: withNoStore(out.headers), route: route.key };
  };

  /** Once the caller is known: its roles, the body, then the handler; its reply at once when the handler answers at once. */
  const handle = (req: HttpRequest, route: Served, params: Record<string, string>, caller: Caller | undefined | OverloadedError): Reply | Promise<Reply> => {
    if (caller instanceof OverloadedError) return failed(req, route, params, undefined, caller);
    const { decl } = route;
    // The client left while its caller was checked (uWS closes a connection when a request is pipelined
    // behind one still being answered): a change it would never hear of is not made, and nothing is sent.
    if (req.aborted && decl.method !== 'GET') return { ...errorReply(req, 'internal'), route: route.key };
    try {
      let caps = 0;
      if (decl.access !== 'public') {
        if (caller === undefined) throw new DomainError('unauthorized');
        caps = capabilitiesOfCaller(caller);
        if (!hasCapability(caps, decl.access)) throw forbidden(roleFor[decl.access], `${req.method} ${decl.pattern}`);
      }
      const json = parseBody(req);
      const body = decl.body === undefined ? json : decl.body.parse(json, 'body');
      const context = new RequestContext(decl, params, req.query, body, caller, caps, req, deps.routeDeps);
      const answered = (o: RouteResult | OverloadedError): Reply => respond(req, route, params, caller, o);
      const refused = (err: unknown): Reply => failed(req, route, params, caller, err);
      const { strongRead } = deps;
      if (strongRead !== undefined) {
        if (decl.method === 'GET' && wantsStrongRead(req)) return strongRead().then(() => decl.handler(context)).then(answered, refused);
        // A 404 from before any change was asked for (a handler's own look-up); the committer confirms its own.
        const confirm = (err: unknown): Promise<RouteResult | OverloadedError> =>
          (context.committed ? Promise.reject(err) : confirmNotFound(err, strongRead, () => decl.handler(context)));
        let out: ReturnType<typeof decl.handler>;
        try {
          out = decl.handler(context);
        } catch (err) {
          return confirm(err).then(answered, refused);
        }
        if (out instanceof Promise) return out.catch(confirm).then(answered, refused);
        return answered(out);
      }
      const out = decl.handler(context);
      return out instanceof Promise ? out.then(answered, refused) : answered(out);
    } catch (err) {
      return failed(req, route, params, caller, err);
    }
  };

  /** Routing done: the caller check, then the handler. No promise on the way unless something has to wait. */
  const run = (req: HttpRequest, route: Served, params: Record<string, string>): Reply | Promise<Reply> => {
    const { decl } = route;
    if (decl.access === 'public') return handle(req, route, params, undefined);
    try {
      const recognised = decl.recognise !== undefined && hasJsonBody(req) ? decl.recognise(req, deps.routeDeps) : undefined;
      if (recognised instanceof Promise) return recognised.then((o) => respond(req, route, params, undefined, o), (err: unknown) => failed(req, route, params, undefined, err));
      if (recognised !== undefined) return respond(req, route, params, undefined, recognised);
      const known = deps.knownCaller?.(req.authorization, req.remoteAddress);
      if (known !== undefined) return handle(req, route, params, known);
      const credentials = parseBasicAuth(req.authorization === '' ? undefined : req.authorization);
      if (credentials === null) {
        const reason = req.authorization === '' ? 'no_credentials' : 'malformed_credentials';
        deps.audit?.({ action: 'caller.authenticate', caller: null, targets: {}, outcome: 'failure', reason, address: req.remoteAddress });
        return handle(req, route, params, undefined);
      }
      const caller = deps.caller(credentials.username, credentials.password, req.remoteAddress, req.authorization);
      return caller instanceof Promise
        ? caller.then((c) => handle(req, route, params, c), (err: unknown) => failed(req, route, params, undefined, err))
        : handle(req, route, params, caller);
    } catch (err) {
      return failed(req, route, params, undefined, err);
    }
  };

  return (req) => {
    const match = router.match(req.method, req.path);
    if (match.kind === 'not_found') return errorReply(req, 'route_not_found', `No route ${req.method} ${req.path.slice(0, 200)}.`);
    if (match.kind === 'method_not_allowed') {
      return errorReply(req, 'method_not_allowed', `${req.method} is not allowed here; allowed: ${match.allow}.`, { headers: [['Allow', match.allow]] });
    }
    return run(req, match.handler, match.params);
  };
}
