// The request pipeline between the adapter and the route handlers: routing, caller check, body parsing, envelope, error mapping.

import { OverloadedError } from '../auth/hash-pool.js';
import { parseBasicAuth } from '../auth/basic.js';
import { bodyJsonDepthMax, unavailableRetryAfterS } from '../config/limits.js';
import type { User } from '../domain/entities.js';
import { DomainError, errorCatalog, type ErrorCode } from '../domain/errors.js';
import { joined, type BodyPiece, type BodyText, type HttpRequest, type Reply } from './adapter.js';
import { bodyNestsTooDeep } from './json-depth.js';
import { Router, type Method } from './router.js';
import type { AuditEntry } from '../service/audit.js';

export interface RouteContext {
  readonly params: Readonly<Record<string, string>>;
  readonly query: string;
  /** The parsed JSON body ({} when the request carried none). */
  readonly body: unknown;
  readonly caller: User | undefined;
  readonly req: HttpRequest;
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
} & ({ readonly result: BodyText; readonly list?: undefined } | { readonly list: { readonly key: string; readonly items: Iterable<string> } });

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

/** A handler's answer, or the error it would have thrown: returned on hot refusal paths (`overloaded`, see src/auth/hash-pool.ts). */
export type RouteHandler = (ctx: RouteContext) => RouteResult | OverloadedError | Promise<RouteResult | OverloadedError>;

export interface RouteSpec {
  readonly method: Method;
  readonly pattern: string;
  readonly handler: RouteHandler;
  /** Answered without credentials (GET /health). */
  readonly public?: boolean;
  /** false for a POST that changes nothing and audits itself (POST /authenticate). */
  readonly mutation?: false;
  /**
   * Answers a request it recognises by its Authorization header and its JSON body's exact bytes, before the
   * caller check and the parse (POST /authenticate from a caller, with credentials, that passed lately),
   * else undefined and the request takes the usual way. Only for a route that audits itself (`mutation: false`).
   */
  readonly recognise?: (req: HttpRequest & { readonly body: Buffer }) => RouteResult | undefined;
}

export interface PipelineDeps {
  readonly realm: string;
  /**
   * Resolves the Basic credentials to a permitted caller, or undefined; address is the TCP peer, for the brute-force limiter;
   * authorization the header they came in, by which a caller that passes is known next time (knownCaller).
   * A promise only when the answer has to wait (an argon2 verification, a tarpit); `overloaded` when the hash queue is full.
   */
  caller(username: string, password: string, address: string, authorization: string): User | undefined | OverloadedError | Promise<User | undefined | OverloadedError>;
  /** The caller whose check passed lately with this very Authorization header from this peer, if still valid; else undefined and caller() decides. */
  knownCaller?(authorization: string, address: string): User | undefined;
  /** Told one entry per mutation (every request but GETs and routes marked `mutation: false`) and per refused credential format. */
  audit?(entry: AuditEntry): void;
  /** Failures that are not DomainErrors: a storage failure, a bug. Must not throw. */
  onUnexpected(err: unknown, req: HttpRequest): ErrorCode;
}

function elapsedSeconds(req: HttpRequest): string {
  return ((performance.now() - req.startedAt) / 1000).toFixed(6);
}

/** The envelope around a result, as pieces: the result's own pieces are not copied into a new string (see BodyText). */
export function envelope(req: HttpRequest, result: BodyText): readonly BodyPiece[] {
  const pieces: BodyPiece[] = ['{"service":{"result":'];
  if (typeof result === 'string') pieces.push(result);
  else for (const piece of result) pieces.push(piece);
  pieces.push(`,"elapsed":${elapsedSeconds(req)}}}`);
  return pieces;
}

type HeaderList = readonly (readonly [string, string])[];

/**
 * Every answer of the service, errors included, forbids caches to keep it: it carries user data, an API Key's
 * secret or an account's state, and none is worth serving stale (GET /health and GET /openapi.json neither).
 * One array shared by every reply, so the common reply allocates no header list.
 */
export const noStoreHeaders: HeaderList = [['Cache-Control', 'no-store']];

/** A handler's own headers after the shared ones; the shared array itself when it has none. */
function withNoStore(headers: HeaderList | undefined): HeaderList {
  return headers === undefined || headers.length === 0 ? noStoreHeaders : [...noStoreHeaders, ...headers];
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

/** The label a route's replies carry (Reply.route), e.g. `GET /users/user/:userid`. */
export function routeKey(route: { readonly method: string; readonly pattern: string }): string {
  return `${route.method} ${route.pattern}`;
}

/** The renderer writes an entity's id first: `{"<kind>":{"id":"<id>",...`. */
const createdPrefix = /^\{"([a-z_]+)":\{"id":"([0-9A-Za-z]+)"/;

/** `{"<kind>":{"id":...}}` of a create's result, as `{ <kind>: id }`; nothing for any other shape. */
function createdId(result: BodyText): Record<string, string> {
  const m = createdPrefix.exec(joined(result));
  return m === null ? {} : { [m[1]!]: m[2]! };
}

export function createPipeline(routes: readonly RouteSpec[], deps: PipelineDeps): (req: HttpRequest) => Promise<Reply> | Reply {
  // The `METHOD pattern` label of each route is made once here, so a reply names its route without allocating.
  const router = new Router<{ spec: RouteSpec; key: string }>();
  for (const route of routes) router.add({ method: route.method, pattern: route.pattern, handler: { spec: route, key: routeKey(route) } });
  const challenge: [string, string][] = [['WWW-Authenticate', `Basic realm="${deps.realm}", charset="UTF-8"`]];

  const fail = (req: HttpRequest, err: unknown): Reply => {
    if (err instanceof DomainError) {
      return errorReply(req, err.code, err.message, {
        result: err.result, retryAfterS: err.retryAfterS, headers: err.code === 'unauthorized' ? challenge : undefined,
      });
    }
    if (err instanceof OverloadedError) return errorReply(req, 'overloaded', undefined, { retryAfterS: err.retryAfterS });
    return errorReply(req, deps.onUnexpected(err, req));
  };

  /** The audit line of a mutation: path ids, plus the created entity's id for a successful POST. */
  const auditMutation = (req: HttpRequest, key: string, params: Record<string, string>, caller: User, outcome: string, result?: BodyText): void => {
    const targets: Record<string, string> = { ...params };
    if (result !== undefined && req.method === 'POST') Object.assign(targets, createdId(result));
    deps.audit?.({ action: key, caller: caller.id, targets, outcome, address: req.remoteAddress });
  };

  /** The reply to a request whose handler failed (or whose caller was refused), audited when it was a mutation. */
  const failed = (req: HttpRequest, route: RouteSpec, params: Record<string, string>, key: string, caller: User | undefined, err: unknown): Reply => {
    const reply = fail(req, err);
    if (isAudited(route) && caller !== undefined) auditMutation(req, key, params, caller, err instanceof DomainError ? err.code : reply.status === 503 ? 'unavailable' : 'error');
    return { ...reply, route: key };
  };

  const isAudited = (route: RouteSpec): boolean => deps.audit !== undefined && route.method !== 'GET' && route.mutation !== false;

  const respond = (req: HttpRequest, route: RouteSpec, params: Record<string, string>, key: string, caller: User | undefined, out: RouteResult | OverloadedError): Reply => {
    if (out instanceof OverloadedError) return failed(req, route, params, key, caller, out);
    if (isAudited(route) && caller !== undefined) auditMutation(req, key, params, caller, 'success', out.list === undefined ? out.result : undefined);
    if (out.list !== undefined) {
      return {
        status: out.status ?? 200, headers: withNoStore(out.headers),
        body: `{"service":{"result":{${JSON.stringify(out.list.key)}:[`, stream: listChunks(out.list.items, req), route: key,
      };
    }
    if (out.contentType !== undefined) return { status: out.status ?? 200, body: out.result, headers: withNoStore(out.headers), contentType: out.contentType, route: key };
    return { status: out.status ?? 200, body: envelope(req, out.result), headers: withNoStore(out.headers), route: key };
  };

  /** Once the caller is known: the handler's reply, at once when the handler answers at once. */
  const handle = (req: HttpRequest, route: RouteSpec, params: Record<string, string>, key: string, caller: User | undefined | OverloadedError): Reply | Promise<Reply> => {
    if (caller instanceof OverloadedError) return failed(req, route, params, key, undefined, caller);
    try {
      if (route.public !== true && caller === undefined) throw new DomainError('unauthorized');
      const out = route.handler({ params, query: req.query, body: parseBody(req), caller, req });
      return out instanceof Promise
        ? out.then((o) => respond(req, route, params, key, caller, o), (err: unknown) => failed(req, route, params, key, caller, err))
        : respond(req, route, params, key, caller, out);
    } catch (err) {
      return failed(req, route, params, key, caller, err);
    }
  };

  /** Routing done: the caller check, then the handler. No promise on the way unless something has to wait. */
  const run = (req: HttpRequest, route: RouteSpec, params: Record<string, string>, key: string): Reply | Promise<Reply> => {
    if (route.public === true) return handle(req, route, params, key, undefined);
    try {
      const recognised = route.recognise !== undefined && hasJsonBody(req) ? route.recognise(req) : undefined;
      if (recognised !== undefined) return respond(req, route, params, key, undefined, recognised);
      const known = deps.knownCaller?.(req.authorization, req.remoteAddress);
      if (known !== undefined) return handle(req, route, params, key, known);
      const credentials = parseBasicAuth(req.authorization === '' ? undefined : req.authorization);
      if (credentials === null) {
        const reason = req.authorization === '' ? 'no_credentials' : 'malformed_credentials';
        deps.audit?.({ action: 'caller.authenticate', caller: null, targets: {}, outcome: 'failure', reason, address: req.remoteAddress });
        return handle(req, route, params, key, undefined);
      }
      const caller = deps.caller(credentials.username, credentials.password, req.remoteAddress, req.authorization);
      return caller instanceof Promise
        ? caller.then((c) => handle(req, route, params, key, c), (err: unknown) => failed(req, route, params, key, undefined, err))
        : handle(req, route, params, key, caller);
    } catch (err) {
      return failed(req, route, params, key, undefined, err);
    }
  };

  return (req) => {
    const match = router.match(req.method, req.path);
    if (match.kind === 'not_found') return errorReply(req, 'route_not_found', `No route ${req.method} ${req.path.slice(0, 200)}.`);
    if (match.kind === 'method_not_allowed') {
      return errorReply(req, 'method_not_allowed', `${req.method} is not allowed here; allowed: ${match.allow}.`, { headers: [['Allow', match.allow]] });
    }
    return run(req, match.handler.spec, match.params, match.handler.key);
  };
}
