// The HTTP front ends' common interface (src/http/front-uws.ts, src/http/front-node.ts): what a handler sees and answers, and what both share.

import { refusedBodyDrainBytesMax } from '../config/limits.js';

/** What a handler sees of a request: copied out synchronously, so it outlives uWS's stack-allocated original. */
export interface HttpRequest {
  readonly method: string;
  /** Raw (still percent-encoded) path without the query string. */
  readonly path: string;
  readonly query: string;
  readonly authorization: string;
  readonly contentType: string;
  readonly remoteAddress: string;
  /** The X-Consistency header ('' when absent); front ends that do not read it leave it undefined. */
  readonly consistency?: string;
  readonly body: Buffer | undefined;
  /** performance.now() when the request arrived. */
  readonly startedAt: number;
  /**
   * The connection closed before the answer was written: nothing more can reach the client. A change made
   * after this is still made, and its answer lost; read it at the last moment before a change is committed.
   */
  readonly aborted: boolean;
}

/**
 * A body's text, whole or in pieces that are sent one after another, a piece being a string or a list of pieces
 * in turn. Pieces are encoded one by one, never joined first: joining a large cached piece (a rendered User)
 * with its envelope would copy it into a new string on every reply, and a list is sent where it stands (a
 * page's Users, each User's own pieces) rather than copied into its enclosing one.
 */
export type BodyPiece = string | readonly BodyPiece[];
export type BodyText = string | readonly BodyPiece[];

/** The text of a body as one string (for tests and the rare reply that is too long for the encode buffer). */
export function joined(text: BodyText): string {
  if (typeof text === 'string') return text;
  const flat: string[] = [];
  flatten(text, flat);
  return flat.join('');
}

function flatten(pieces: readonly BodyPiece[], into: string[]): void {
  for (const piece of pieces) {
    if (typeof piece === 'string') into.push(piece);
    else flatten(piece, into);
  }
}

/**
 * Pieces up to this many UTF-16 units are copied by encodePieces' own loop when they are ASCII: a Buffer write
 * is a call into C++, which costs more than copying a short field's few bytes.
 */
const inlineCopyCharsMax = 48;

/**
 * Encodes the pieces as UTF-8 into `into` from `at`, nested lists in order; answers where they end, or -1 once
 * one may not fit (what was written is then to be ignored).
 */
export function encodePieces(into: Buffer, pieces: readonly BodyPiece[], at: number): number {
  for (let i = 0; i < pieces.length && at !== -1; i++) {
    const piece = pieces[i]!;
    if (typeof piece !== 'string') {
      at = encodePieces(into, piece, at);
      continue;
    }
    const n = piece.length;
    // A UTF-16 unit is at most 3 UTF-8 bytes: a piece within that bound of the room left fits; one that may not
    // is counted exactly before the buffer is given up.
    const room = into.length - at;
    if (n * 3 > room && Buffer.byteLength(piece, 'utf8') > room) return -1;
    let c = 0;
    if (n <= inlineCopyCharsMax) {
      for (; c < n; c++) {
        const unit = piece.charCodeAt(c);
        if (unit >= 0x80) break;
        into[at + c] = unit;
      }
    }
    // Not short, or not ASCII: written whole, over whatever of it the loop copied.
    at += c === n ? n : into.write(piece, at, 'utf8');
  }
  return at;
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
  /** Close the connection once this reply is sent: what is left of the request on it is unwanted (refusals). */
  readonly closeConnection?: boolean;
}

export type Handler = (req: HttpRequest) => Reply | Promise<Reply>;

export interface AdapterOptions {
  host: string;
  port: number;
  bodyBytesMax: number;
  bodyReceiveTimeoutMs: number;
  handler: Handler;
  /** Called once per finished request, for the request log and metrics. */
  onFinished(req: { method: string; path: string }, status: number, durationMs: number, route: string | undefined): void;
  /** Replies for failures the adapter detects before a handler runs. */
  earlyReply(kind: EarlyReplyKind): Reply;
}

export interface RunningServer {
  readonly port: number;
  /** Stop accepting connections, then resolve when every in-flight request has been answered (or the grace time passed). */
  close(graceMs: number): Promise<void>;
}

export const statusLines: Record<number, string> = {
  200: '200 OK', 201: '201 Created', 400: '400 Bad Request', 401: '401 Unauthorized', 404: '404 Not Found',
  405: '405 Method Not Allowed', 408: '408 Request Timeout', 409: '409 Conflict', 413: '413 Payload Too Large',
  415: '415 Unsupported Media Type', 431: '431 Request Header Fields Too Large', 500: '500 Internal Server Error',
  503: '503 Service Unavailable',
};

export function statusLine(status: number): string {
  return statusLines[status] ?? `${status} Status`;
}

/** An entry of a ReceivingList: its links to the entries added just before and just after it. */
export interface Linked<E> {
  older: E | undefined;
  newer: E | undefined;
}

/**
 * Requests whose body is still arriving, oldest first, as a list linked through the entries themselves.
 * Every POST is added and removed at once; a Set that empties shrinks its table and grows it again on
 * every request, while linking and unlinking allocate nothing.
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


/** Failures a front end detects before a handler runs; each answer closes the connection. */
export type EarlyReplyKind = 'bad_request' | 'payload_too_large' | 'request_timeout' | 'headers_too_large' | 'internal';

/** A refusal made before a handler runs; it closes the connection unless the front end drains the rest of the request. */
export function refusal(opts: AdapterOptions, kind: EarlyReplyKind, closeConnection = true): Reply {
  return { ...opts.earlyReply(kind), closeConnection };
}

/**
 * Whether a body refused for its size is read to its end and dropped, so that a client that sends the whole
 * body before it reads (fetch does) gets the 413 instead of a reset: only a declared length up to
 * refusedBodyDrainBytesMax. A larger or undeclared one is answered and its connection closed at once.
 */
export function drainsRefusedBody(contentLength: string | undefined): boolean {
  return contentLength !== undefined && contentLength !== '' && Number(contentLength) <= refusedBodyDrainBytesMax;
}

/** Chunks of a streamed body written per event-loop turn before yielding (with 64 KiB chunks: 1 MiB). */
const streamChunksPerTurn = 16;

/** Where a streamed body goes: the front end's socket, as RequestTracker.pump drives it. */
export interface StreamSink {
  /** Sends a chunk; false when the socket pushes back. */
  write(chunk: string): boolean;
  /** Runs resume on a later event-loop turn, unless the client has gone by then. */
  later(resume: () => void): void;
  /** Runs resume on a later turn once the socket has taken what it held. */
  whenDrained(resume: () => void): void;
  end(): void;
  /** Cuts the connection, so that the client sees a broken body. */
  cut(): void;
}

/**
 * A peer address as both front ends report it: IPv4 dotted, an IPv4-mapped IPv6 address as its IPv4, and
 * other IPv6 in the RFC 5952 short form; `raw` is the 4 or 16 bytes of the address.
 */
export function addressText(raw: Uint8Array): string {
  if (raw.length === 4) return `${raw[0]}.${raw[1]}.${raw[2]}.${raw[3]}`;
  if (raw.length !== 16) return '';
  let mapped = raw[10] === 0xff && raw[11] === 0xff;
  for (let i = 0; i < 10 && mapped; i++) mapped = raw[i] === 0;
  if (mapped) return `${raw[12]}.${raw[13]}.${raw[14]}.${raw[15]}`;
  const groups: number[] = [];
  for (let i = 0; i < 16; i += 2) groups.push((raw[i]! << 8) | raw[i + 1]!);
  // The longest run of two or more zero groups (the first of equals) becomes '::'.
  let bestAt = -1;
  let bestLength = 1;
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0) { i++; continue; }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLength) { bestAt = i; bestLength = j - i; }
    i = j;
  }
  const hex = (from: number, to: number): string => groups.slice(from, to).map((g) => g.toString(16)).join(':');
  return bestAt === -1 ? hex(0, 8) : `${hex(0, bestAt)}::${hex(bestAt + bestLength, 8)}`;
}

/** The same form from node's text (`::ffff:127.0.0.1` for a mapped address, RFC 5952 otherwise). */
export function addressFromText(text: string | undefined): string {
  if (text === undefined) return '';
  return text.startsWith('::ffff:') && text.includes('.') ? text.slice(7) : text;
}

/** A request's progress, read by its front end's callbacks. */
export interface RequestState { aborted: boolean; done: boolean; streaming: boolean }

/** A request whose body is still arriving, with the response object of its front end. */
export interface Receiving<R> extends Linked<Receiving<R>> {
  readonly res: R;
  readonly state: RequestState;
  readonly request: HttpRequest;
}

/** How a front end answers: writes `reply` to `res`, then calls settle() (at once, or when a stream ends). */
export type Finish<R> = (res: R, state: RequestState, request: HttpRequest, reply: Reply) => void;

/**
 * What both front ends do around each request: count it in flight, answer 408 to bodies that stall, run the
 * handler (a throw or a rejection becomes 500), and let close() wait for the last answer.
 *
 * Stalled bodies are found by one sweep every bodyReceiveSweepMs over a list of the requests still receiving,
 * oldest first, instead of a timer set and cleared per request (a Timeout object to collect on every POST).
 * An aborted request stays until the sweep reaches it; finish does nothing for it. The sweep is unref'd: it
 * keeps no process alive, and goes on after close() for the connections still open.
 */
export class RequestTracker<R> {
  #inFlight = 0;
  #drained: (() => void) | undefined;
  readonly #receiving = new ReceivingList<Receiving<R>>();

  constructor(private readonly opts: AdapterOptions, private readonly finish: Finish<R>, sweepMs: number) {
    setInterval(() => {
      const startedBefore = performance.now() - opts.bodyReceiveTimeoutMs;
      for (let entry = this.#receiving.oldest; entry !== undefined && entry.request.startedAt <= startedBefore; entry = this.#receiving.oldest) {
        this.#receiving.remove(entry);
        this.finish(entry.res, entry.state, entry.request, refusal(opts, 'request_timeout'));
      }
    }, sweepMs).unref();
  }

  begin(): RequestState {
    this.#inFlight++;
    return { aborted: false, done: false, streaming: false };
  }

  /** The client went away: nothing more is written, and the request no longer counts. */
  aborted(state: RequestState): void {
    state.aborted = true;
    if (!state.done) {
      state.done = true;
      this.#left();
    }
  }

  /** The reply is written whole. */
  settle(state: RequestState, request: HttpRequest, reply: Reply): void {
    state.done = true;
    this.opts.onFinished(request, reply.status, performance.now() - request.startedAt, reply.route);
    this.#left();
  }

  /** From the request's headers to its body's last byte; a second remove() does nothing. */
  receiving(res: R, state: RequestState, request: HttpRequest): Receiving<R> {
    const entry: Receiving<R> = { res, state, request, older: undefined, newer: undefined };
    this.#receiving.add(entry);
    return entry;
  }

  received(entry: Receiving<R>): void {
    this.#receiving.remove(entry);
  }

  dispatch(res: R, state: RequestState, request: HttpRequest): void {
    let result: Reply | Promise<Reply>;
    try {
      result = this.opts.handler(request);
    } catch {
      result = this.opts.earlyReply('internal');
    }
    if (result instanceof Promise) {
      result.then(
        (reply) => this.finish(res, state, request, reply),
        () => this.finish(res, state, request, this.opts.earlyReply('internal')),
      );
    } else {
      this.finish(res, state, request, result);
    }
  }

  /**
   * Writes the stream's chunks until the socket pushes back, then waits for it to drain; after
   * streamChunksPerTurn chunks it yields the event loop, so one huge listing never holds up other requests
   * or memory. An empty chunk ends the turn at once (streamPause, src/http/pipeline.ts).
   */
  pump(sink: StreamSink, state: RequestState, request: HttpRequest, reply: Reply, stream: Iterator<string>): void {
    const resume = (): void => this.pump(sink, state, request, reply, stream);
    for (let written = 0; written < streamChunksPerTurn; written++) {
      if (state.aborted) return;
      let next: IteratorResult<string>;
      try {
        next = stream.next();
      } catch {
        // Headers are gone already: all that is left is to cut the connection.
        sink.cut();
        return;
      }
      if (next.done === true) {
        sink.end();
        this.settle(state, request, reply);
        return;
      }
      if (next.value === '') break;
      if (!sink.write(next.value)) {
        sink.whenDrained(resume);
        return;
      }
    }
    sink.later(resume);
  }

  /** Resolves once no request is in flight, or after graceMs. */
  drained(graceMs: number): Promise<void> {
    if (this.#inFlight === 0) return Promise.resolve();
    return new Promise((done) => {
      const timer = setTimeout(done, graceMs);
      this.#drained = () => { clearTimeout(timer); done(); };
    });
  }

  #left(): void {
    this.#inFlight--;
    if (this.#inFlight === 0 && this.#drained !== undefined) this.#drained();
  }
}
