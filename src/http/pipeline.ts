// The request pipeline between the adapter and the route handlers: routing, caller check, body parsing, envelope, error mapping.

import { OverloadedError } from '../auth/hash-pool.js';
import { parseBasicAuth } from '../auth/basic.js';
import type { User } from '../domain/entities.js';
import { DomainError, errorCatalog, type ErrorCode } from '../domain/errors.js';
import type { HttpRequest, Reply } from './adapter.js';
import { Router, type Method } from './router.js';

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
  readonly headers?: readonly (readonly [string, string])[];
} & ({ readonly result: string; readonly list?: undefined } | { readonly list: { readonly key: string; readonly items: Iterable<string> } });

/** Characters gathered from rendered items before a chunk is handed to the socket. */
const streamChunkChars = 64 * 1024;

function* listChunks(items: Iterable<string>, req: HttpRequest): Generator<string> {
  let chunk = '';
  let first = true;
  for (const item of items) {
    chunk += first ? item : `,${item}`;
    first = false;
    if (chunk.length >= streamChunkChars) {
      yield chunk;
      chunk = '';
    }
  }
  yield `${chunk}]},"elapsed":${elapsedSeconds(req)}}}`;
}

export type RouteHandler = (ctx: RouteContext) => RouteResult | Promise<RouteResult>;

export interface RouteSpec {
  readonly method: Method;
  readonly pattern: string;
  readonly handler: RouteHandler;
  /** Answered without credentials (GET /health). */
  readonly public?: boolean;
}

export interface PipelineDeps {
  readonly realm: string;
  /** Resolves the Basic credentials to a permitted caller, or undefined. */
  caller(username: string, password: string): Promise<User | undefined>;
  /** Failures that are not DomainErrors: a storage failure, a bug. Must not throw. */
  onUnexpected(err: unknown, req: HttpRequest): ErrorCode;
}

function elapsedSeconds(req: HttpRequest): string {
  return (Number(process.hrtime.bigint() - req.startedAt) / 1e9).toFixed(6);
}

export function envelope(req: HttpRequest, resultJson: string): string {
  return `{"service":{"result":${resultJson},"elapsed":${elapsedSeconds(req)}}}`;
}

export function errorReply(req: HttpRequest, code: ErrorCode, message?: string, extra?: { result?: Record<string, unknown>; retryAfterS?: number; headers?: [string, string][] }): Reply {
  const status = errorCatalog[code].status;
  const error = JSON.stringify({ status, code, message: message ?? errorCatalog[code].message });
  const result = extra?.result === undefined ? '' : `"result":${JSON.stringify(extra.result)},`;
  const headers: [string, string][] = [...(extra?.headers ?? [])];
  if (extra?.retryAfterS !== undefined) headers.push(['Retry-After', String(extra.retryAfterS)]);
  return { status, body: `{"service":{${result}"error":${error},"elapsed":${elapsedSeconds(req)}}}`, headers };
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** JSON media types: application/json, with parameters, or any +json suffix. A missing Content-Type is taken as JSON. */
function isJsonContentType(value: string): boolean {
  if (value === '') return true;
  const media = value.split(';', 1)[0]!.trim().toLowerCase();
  return media === 'application/json' || (media.startsWith('application/') && media.endsWith('+json'));
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
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new DomainError('invalid_json');
  }
}

export function createPipeline(routes: readonly RouteSpec[], deps: PipelineDeps): (req: HttpRequest) => Promise<Reply> | Reply {
  const router = new Router<RouteSpec>();
  for (const route of routes) router.add({ method: route.method, pattern: route.pattern, handler: route });
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

  const run = async (req: HttpRequest, route: RouteSpec, params: Record<string, string>): Promise<Reply> => {
    try {
      let caller: User | undefined;
      if (route.public !== true) {
        const credentials = parseBasicAuth(req.authorization === '' ? undefined : req.authorization);
        caller = credentials === null ? undefined : await deps.caller(credentials.username, credentials.password);
        if (caller === undefined) throw new DomainError('unauthorized');
      }
      const body = parseBody(req);
      const out = await route.handler({ params, query: req.query, body, caller, req });
      if (out.list !== undefined) {
        return {
          status: out.status ?? 200, headers: out.headers,
          body: `{"service":{"result":{${JSON.stringify(out.list.key)}:[`, stream: listChunks(out.list.items, req),
        };
      }
      return { status: out.status ?? 200, body: envelope(req, out.result), headers: out.headers };
    } catch (err) {
      return fail(req, err);
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
