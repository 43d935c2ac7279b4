// The uWebSockets.js front end and the only file that imports it: request capture, bounded bodies, corked replies, shutdown.

import { createRequire } from 'node:module';
import type * as Uws from 'uWebSockets.js';
import { bodyReceiveSweepMs, peerAddressTextsMax, replyEncodeBytesMax } from '../config/limits.js';

/** What a handler sees of a request: copied out of uWS synchronously, so it outlives the stack-allocated original. */
export interface HttpRequest {
  readonly method: string;
  /** Raw (still percent-encoded) path without the query string. */
  readonly path: string;
  readonly query: string;
  readonly authorization: string;
  readonly contentType: string;
  readonly remoteAddress: string;
  readonly body: Buffer | undefined;
  /** performance.now() when the request arrived. */
  readonly startedAt: number;
}

/**
 * A body's text, whole or in pieces that are sent one after another. Pieces are encoded one by one, never
 * joined first: joining a large cached piece (a rendered User) with its envelope copied it into a new
 * string on every reply, a fifth of what an authentication allocated (measured, heap sampling). A piece
 * may be UTF-8 already (a rendering kept as bytes, Renderer.userFullBytes): it is copied, not encoded.
 */
export type BodyPiece = string | Uint8Array;
export type BodyText = string | readonly BodyPiece[];

/** The text of a body as one string (for tests and the rare reply that is too long for the encode buffer). */
export function joined(text: BodyText): string {
  if (typeof text === 'string') return text;
  let out = '';
  for (const piece of text) out += typeof piece === 'string' ? piece : Buffer.from(piece.buffer, piece.byteOffset, piece.byteLength).toString('utf8');
  return out;
}

export interface Reply {
  readonly status: number;
  /** The whole body, or with `stream` the part sent first. */
  readonly body: BodyText;
  readonly headers?: readonly (readonly [string, string])[];
  /** The rest of the body, produced a chunk at a time as the client drains it (chunked transfer encoding); an empty chunk ends the turn. */
  readonly stream?: Iterator<string>;
  /** Instead of application/json (GET /metrics answers Prometheus text). */
  readonly contentType?: string;
  /** The matched route as `METHOD pattern`, for metrics; absent when no route matched. */
  readonly route?: string;
}

export type Handler = (req: HttpRequest) => Reply | Promise<Reply>;

export interface AdapterOptions {
  host: string;
  port: number;
  bodyBytesMax: number;
  bodyReceiveTimeoutMs: number;
  allowSlowFallback: boolean;
  handler: Handler;
  /** Called once per finished request, for the request log and metrics. */
  onFinished(req: { method: string; path: string }, status: number, durationMs: number, route: string | undefined): void;
  /** Replies for failures the adapter detects before a handler runs. */
  earlyReply(kind: 'payload_too_large' | 'request_timeout' | 'internal'): Reply;
}

export interface RunningServer {
  readonly port: number;
  readonly native: boolean;
  /** Stop accepting connections, then resolve when every in-flight request has been answered (or the grace time passed). */
  close(graceMs: number): Promise<void>;
}

const statusLines: Record<number, string> = {
  200: '200 OK', 201: '201 Created', 400: '400 Bad Request', 401: '401 Unauthorized', 404: '404 Not Found',
  405: '405 Method Not Allowed', 408: '408 Request Timeout', 409: '409 Conflict', 413: '413 Payload Too Large',
  415: '415 Unsupported Media Type', 431: '431 Request Header Fields Too Large', 500: '500 Internal Server Error',
  503: '503 Service Unavailable',
};

function statusLine(status: number): string {
  return statusLines[status] ?? `${status} Status`;
}

/*
 * uWS copies every string it is handed into a freshly allocated UTF-8 buffer (malloc, a length pass, a
 * write pass, free), while a Buffer it reads in place. The status lines and the Content-Type header are
 * therefore encoded once, and a reply body is encoded into one reused buffer: uWS has copied it into the
 * socket (or its own backpressure buffer) by the time end() returns.
 */
const encodedStatusLines = new Map(Object.keys(statusLines).map((status) => [Number(status), Buffer.from(statusLine(Number(status)))]));
const contentTypeName = Buffer.from('Content-Type');
const jsonContentType = Buffer.from('application/json');
const replyScratch = Buffer.allocUnsafeSlow(replyEncodeBytesMax);

/** The body as bytes in replyScratch (valid until the next call), or as one string when it may not fit. */
function encodedBody(body: BodyText): string | Buffer {
  if (typeof body === 'string') return body.length * 3 > replyEncodeBytesMax ? body : replyScratch.subarray(0, replyScratch.write(body, 0, 'utf8'));
  // A UTF-16 unit is at most 3 UTF-8 bytes, so a body this short always fits.
  let bytesMax = 0;
  for (const piece of body) bytesMax += typeof piece === 'string' ? piece.length * 3 : piece.byteLength;
  if (bytesMax > replyEncodeBytesMax) return joined(body);
  let end = 0;
  for (const piece of body) {
    if (typeof piece === 'string') end += replyScratch.write(piece, end, 'utf8');
    else {
      replyScratch.set(piece, end);
      end += piece.byteLength;
    }
  }
  return replyScratch.subarray(0, end);
}

/**
 * uWS quietly falls back to a slow pure-JS server when its binary does not load; the fallback lacks
 * getParts. Throws unless the operator allowed the fallback; call it before touching any data.
 */
export function loadUws(allowSlowFallback: boolean): { uws: typeof Uws; native: boolean } {
  const require = createRequire(import.meta.url);
  const originalWarn = console.warn;
  let warning = '';
  console.warn = (...args: unknown[]) => { warning += args.join(' '); };
  let uws: typeof Uws;
  try {
    uws = require('uWebSockets.js') as typeof Uws;
  } finally {
    console.warn = originalWarn;
  }
  const native = typeof (uws as { getParts?: unknown }).getParts === 'function';
  if (!native && !allowSlowFallback) {
    throw new Error(
      'uWebSockets.js could not load its native binary and would fall back to a slow pure-JS server ' +
      `(${warning.split('\n').find((l) => l.trim().length > 0) ?? 'no reason given'}). ` +
      'Refusing to start; set ALLOW_UWS_FALLBACK=1 to run anyway.',
    );
  }
  return { uws, native };
}

/**
 * Peer addresses as text, by their binary form read as a number: IPv4 as itself, IPv4-mapped IPv6 as
 * -1 - itself (its text differs). Every uWS address call is a getpeername system call and a new
 * ArrayBuffer, and the text form then needed a Buffer to decode; POST /authenticate reads the peer on
 * every request, and reading the binary form instead and keeping the text raised its throughput 5-8%
 * (alternated builds). uWS.js keeps nothing per connection for HTTP, so the system call stays. Client
 * applications reach us from few addresses over pooled connections, so the cache mostly hits.
 */
const peerTexts = new Map<number, string>();

function peerKey(raw: Uint8Array): number | undefined {
  if (raw.length === 4) return ((raw[0]! << 24) | (raw[1]! << 16) | (raw[2]! << 8) | raw[3]!) >>> 0;
  if (raw.length !== 16 || raw[10] !== 0xff || raw[11] !== 0xff) return undefined;
  for (let i = 0; i < 10; i++) if (raw[i] !== 0) return undefined;
  return -1 - (((raw[12]! << 24) | (raw[13]! << 16) | (raw[14]! << 8) | raw[15]!) >>> 0);
}

/** The pure-JS fallback implements neither getRemoteAddress nor getRemoteAddressAsText. */
function remoteAddressOf(res: Uws.HttpResponse): string {
  try {
    const key = peerKey(new Uint8Array(res.getRemoteAddress()));
    let text = key === undefined ? undefined : peerTexts.get(key);
    if (text === undefined) {
      text = Buffer.from(res.getRemoteAddressAsText()).toString();
      if (key !== undefined) {
        if (peerTexts.size >= peerAddressTextsMax) peerTexts.clear();
        peerTexts.set(key, text);
      }
    }
    return text;
  } catch {
    return '';
  }
}

/** The pure-JS fallback's getQuery() throws on a path-only URL instead of answering ''. */
function queryOf(req: Uws.HttpRequest): string {
  try {
    return req.getQuery() ?? '';
  } catch {
    return '';
  }
}

const methodsWithBody = new Set(['post', 'put', 'patch']);
/** uWS reports methods in lower case; the usual ones map to constants instead of a new upper-cased string per request. */
const upperMethods: ReadonlyMap<string, string> = new Map(['get', 'post', 'put', 'delete', 'patch', 'head', 'options'].map((m) => [m, m.toUpperCase()]));
/** Chunks of a streamed body written per event-loop turn before yielding (with 64 KiB chunks: 1 MiB). */
const streamChunksPerTurn = 16;

interface RequestState { aborted: boolean; done: boolean; streaming: boolean }
/** An entry of a ReceivingList: its links to the entries added just before and just after it. */
export interface Linked<E> {
  older: E | undefined;
  newer: E | undefined;
}

/** A request whose body is still arriving. */
interface Receiving extends Linked<Receiving> {
  readonly res: Uws.HttpResponse;
  readonly state: RequestState;
  readonly request: CapturedRequest;
}

/**
 * Requests whose body is still arriving, oldest first, as a list linked through the entries themselves.
 * A Set did the same, but every POST is added and removed at once, and a Set that empties shrinks its
 * table and grows it again: the reallocations, and the fresh pages they touched, were 1.6% of the
 * server's samples under POST /authenticate (perf). Linking and unlinking allocate nothing.
 */
export class ReceivingList<E extends Linked<E>> {
  #oldest: E | undefined;
  #newest: E | undefined;

  get oldest(): E | undefined {
    return this.#oldest;
  }

  add(entry: E): void {
    entry.older = this.#newest;
    if (this.#newest === undefined) this.#oldest = entry;
    else this.#newest.newer = entry;
    this.#newest = entry;
  }

  /** Unlinks entry, if it is still linked (a second call does nothing). */
  remove(entry: E): void {
    if (entry.older === undefined && this.#oldest !== entry) return;
    if (entry.older === undefined) this.#oldest = entry.newer;
    else entry.older.newer = entry.newer;
    if (entry.newer === undefined) this.#newest = entry.older;
    else entry.newer.older = entry.older;
    entry.older = undefined;
    entry.newer = undefined;
  }
}

interface RequestMeta { readonly method: string; readonly path: string; readonly startedAt: number }

/**
 * A request copied out of uWS before the handler runs. The peer address is asked for only when read
 * (uWS answers it with a getpeername call, a syscall that /health and other public routes do not need)
 * and kept from then on; read it before the first await, as the pipeline does, and it is there after.
 */
class CapturedRequest implements HttpRequest {
  body: Buffer | undefined = undefined;
  #address: string | undefined;
  readonly #res: Uws.HttpResponse;
  readonly #state: RequestState;

  constructor(
    readonly method: string, readonly path: string, readonly query: string, readonly authorization: string,
    readonly contentType: string, readonly startedAt: number, res: Uws.HttpResponse, state: RequestState,
  ) {
    this.#res = res;
    this.#state = state;
  }

  get remoteAddress(): string {
    // Once answered or aborted, res must not be touched again.
    this.#address ??= this.#state.done ? '' : remoteAddressOf(this.#res);
    return this.#address;
  }
}

export function startServer(opts: AdapterOptions): Promise<RunningServer> {
  const { uws, native } = loadUws(opts.allowSlowFallback);
  const app = uws.App();
  let inFlight = 0;
  let drained: (() => void) | undefined;
  /**
   * Requests whose body is still arriving. One sweep every bodyReceiveSweepMs answers 408 to those older
   * than bodyReceiveTimeoutMs, instead of a timer set and cleared per request (~0.3 us each, and a Timeout
   * object to collect, on every POST). An aborted request stays until the sweep reaches it, as it stayed in
   * its timer: finish() does nothing for it. Unref'd: it keeps no process alive, and it goes on after
   * close() for the connections still open.
   */
  const receiving = new ReceivingList<Receiving>();
  setInterval(() => {
    const startedBefore = performance.now() - opts.bodyReceiveTimeoutMs;
    for (let entry = receiving.oldest; entry !== undefined && entry.request.startedAt <= startedBefore; entry = receiving.oldest) {
      receiving.remove(entry);
      finish(entry.res, entry.state, entry.request, opts.earlyReply('request_timeout'));
    }
  }, bodyReceiveSweepMs).unref();

  const settle = (state: RequestState, meta: RequestMeta, reply: Reply): void => {
    state.done = true;
    inFlight--;
    opts.onFinished(meta, reply.status, performance.now() - meta.startedAt, reply.route);
    if (inFlight === 0 && drained !== undefined) drained();
  };

  const writeHead = (res: Uws.HttpResponse, reply: Reply): void => {
    res.writeStatus(encodedStatusLines.get(reply.status) ?? statusLine(reply.status));
    res.writeHeader(contentTypeName, reply.contentType ?? jsonContentType);
    if (reply.headers !== undefined) for (const [k, v] of reply.headers) res.writeHeader(k, v);
  };

  /**
   * Writes chunks until the socket pushes back, then waits for onWritable; after streamChunksPerTurn
   * chunks it yields the event loop, so one huge listing never holds up other requests or memory.
   */
  const pumpStream = (res: Uws.HttpResponse, state: RequestState, meta: RequestMeta, reply: Reply, stream: Iterator<string>): void => {
    for (let written = 0; written < streamChunksPerTurn; written++) {
      if (state.aborted) return;
      let next: IteratorResult<string>;
      try {
        next = stream.next();
      } catch {
        // Headers are gone already: all that is left is to cut the connection so the client sees a broken body.
        res.close();
        return;
      }
      if (next.done === true) {
        res.end();
        settle(state, meta, reply);
        return;
      }
      // The producer did a slice of work and yields the event loop (streamPause, src/http/pipeline.ts).
      if (next.value === '') break;
      if (!res.write(next.value)) {
        res.onWritable(() => {
          setImmediate(() => { if (!state.aborted) res.cork(() => pumpStream(res, state, meta, reply, stream)); });
          return true;
        });
        return;
      }
    }
    setImmediate(() => { if (!state.aborted) res.cork(() => pumpStream(res, state, meta, reply, stream)); });
  };

  const finish = (res: Uws.HttpResponse, state: RequestState, meta: RequestMeta, reply: Reply): void => {
    // An aborted request is already settled by onAborted.
    if (state.done || state.streaming) return;
    const stream = reply.stream;
    if (stream === undefined) {
      res.cork(() => {
        writeHead(res, reply);
        res.end(encodedBody(reply.body), reply.status === 413 || reply.status === 408);
      });
      settle(state, meta, reply);
      return;
    }
    state.streaming = true;
    res.cork(() => {
      writeHead(res, reply);
      res.write(encodedBody(reply.body));
      pumpStream(res, state, meta, reply, stream);
    });
  };

  const dispatch = (res: Uws.HttpResponse, state: RequestState, request: HttpRequest): void => {
    let result: Reply | Promise<Reply>;
    try {
      result = opts.handler(request);
    } catch {
      result = opts.earlyReply('internal');
    }
    if (result instanceof Promise) {
      result.then(
        (reply) => finish(res, state, request, reply),
        () => finish(res, state, request, opts.earlyReply('internal')),
      );
    } else {
      finish(res, state, request, result);
    }
  };

  app.any('/*', (res, req) => {
    const startedAt = performance.now();
    const method = req.getMethod();
    const state: RequestState = { aborted: false, done: false, streaming: false };
    const request = new CapturedRequest(
      upperMethods.get(method) ?? method.toUpperCase(), req.getUrl(), queryOf(req), req.getHeader('authorization'), req.getHeader('content-type'), startedAt, res, state,
    );
    const contentLength = req.getHeader('content-length');
    inFlight++;
    res.onAborted(() => {
      state.aborted = true;
      if (!state.done) { state.done = true; inFlight--; if (inFlight === 0 && drained !== undefined) drained(); }
    });

    if (!methodsWithBody.has(method)) {
      dispatch(res, state, request);
      return;
    }
    // Bounded while streaming: refuse on the declared length, then re-check the running length per chunk.
    if (contentLength !== '' && Number(contentLength) > opts.bodyBytesMax) {
      finish(res, state, request, opts.earlyReply('payload_too_large'));
      return;
    }
    const chunks: Buffer[] = [];
    let received = 0;
    const entry: Receiving = { res, state, request, older: undefined, newer: undefined };
    receiving.add(entry);
    res.onData((chunk, isLast) => {
      if (state.done) return;
      received += chunk.byteLength;
      if (received > opts.bodyBytesMax) {
        receiving.remove(entry);
        finish(res, state, request, opts.earlyReply('payload_too_large'));
        return;
      }
      // uWS neuters the ArrayBuffer after this callback returns: copy it.
      chunks.push(Buffer.from(new Uint8Array(chunk)));
      if (isLast) {
        receiving.remove(entry);
        request.body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, received);
        dispatch(res, state, request);
      }
    });
  });

  return new Promise((resolve, reject) => {
    app.listen(opts.host, opts.port, (listenSocket) => {
      if (listenSocket === false) {
        reject(new Error(`cannot listen on ${opts.host}:${opts.port}`));
        return;
      }
      const port = uws.us_socket_local_port(listenSocket);
      resolve({
        port,
        native,
        close(graceMs: number): Promise<void> {
          uws.us_listen_socket_close(listenSocket);
          if (inFlight === 0) return Promise.resolve();
          return new Promise((done) => {
            const timer = setTimeout(done, graceMs);
            drained = () => { clearTimeout(timer); done(); };
          });
        },
      });
    });
  });
}
