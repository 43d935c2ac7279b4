// The uWebSockets.js front end and, with src/http/uws-loader.ts, the only code that touches uWS: request capture, bounded bodies, corked replies, shutdown.

import type * as Uws from 'uWebSockets.js';
import { bodyReceiveSweepMs, headerBytesMax, peerAddressTextsMax, replyEncodeBytesMax } from '../config/limits.js';
import {
  addressText, drainsRefusedBody, encodePieces, joined, refusal, RequestTracker, statusLine, statusLines,
  type AdapterOptions, type BodyText, type Finish, type HttpRequest, type Reply, type RequestState, type RunningServer, type StreamSink,
} from './adapter.js';

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

/**
 * The buffer uWS gathers a corked socket's writes in (LoopData::CORK_BUFFER_SIZE, 16 KiB in uWebSockets 20):
 * a single write larger than what is left of it is sent to the socket at once, with what the buffer held.
 */
const uwsCorkBufferBytes = 16 * 1024;

/** The body as bytes in replyScratch (valid until the next call), or as one string when it may not fit. */
function encodedBody(body: BodyText): string | Buffer {
  if (typeof body === 'string') return body.length * 3 > replyEncodeBytesMax ? body : replyScratch.subarray(0, replyScratch.write(body, 0, 'utf8'));
  const end = encodePieces(replyScratch, body, 0);
  return end === -1 ? joined(body) : replyScratch.subarray(0, end);
}

/**
 * Peer addresses as text (see addressText), by their binary form read as a number: IPv4 as itself, IPv4-mapped IPv6 as
 * -1 - itself. Every uWS address call is a getpeername system call and a new ArrayBuffer; POST
 * /authenticate reads the peer on every request, and client applications reach us from few addresses
 * over pooled connections, so keeping the text by the binary form mostly hits.
 */
const peerTexts = new Map<number, string>();

function peerKey(raw: Uint8Array): number | undefined {
  if (raw.length === 4) return ((raw[0]! << 24) | (raw[1]! << 16) | (raw[2]! << 8) | raw[3]!) >>> 0;
  if (raw.length !== 16 || raw[10] !== 0xff || raw[11] !== 0xff) return undefined;
  for (let i = 0; i < 10; i++) if (raw[i] !== 0) return undefined;
  return -1 - (((raw[12]! << 24) | (raw[13]! << 16) | (raw[14]! << 8) | raw[15]!) >>> 0);
}

/** Other IPv6 peers' texts the same way, by a hash of their 16 bytes, each with its bytes to tell a collision. */
const peerTexts6 = new Map<number, { readonly raw: Uint8Array; readonly text: string }>();

function remoteAddressOf(res: Uws.HttpResponse): string {
  const raw = new Uint8Array(res.getRemoteAddress());
  const key = peerKey(raw);
  if (key === undefined) return raw.length === 16 ? ipv6PeerText(raw) : addressText(raw);
  let text = peerTexts.get(key);
  if (text === undefined) {
    text = addressText(raw);
    if (peerTexts.size >= peerAddressTextsMax) peerTexts.clear();
    peerTexts.set(key, text);
  }
  return text;
}

function ipv6PeerText(raw: Uint8Array): string {
  let hash = 0;
  for (let i = 0; i < 16; i++) hash = Math.imul(hash ^ raw[i]!, 0x01000193);
  const held = peerTexts6.get(hash);
  if (held !== undefined) {
    let same = true;
    for (let i = 0; i < 16 && same; i++) same = held.raw[i] === raw[i];
    if (same) return held.text;
  }
  const text = addressText(raw);
  if (peerTexts6.size >= peerAddressTextsMax) peerTexts6.clear();
  peerTexts6.set(hash, { raw, text });
  return text;
}

/** A streamed body's way out through uWS: every write after a turn's end is corked, and none after an abort. */
function uwsSink(res: Uws.HttpResponse, state: RequestState): StreamSink {
  const later = (resume: () => void): void => {
    setImmediate(() => { if (!state.aborted) res.cork(resume); });
  };
  return {
    write: (chunk) => res.write(chunk),
    later,
    whenDrained: (resume) => res.onWritable(() => { later(resume); return true; }),
    end: () => { res.end(); },
    cut: () => { res.close(); },
  };
}

/** uWS's ListenOptions.LIBUS_LISTEN_EXCLUSIVE_PORT (libusockets' flag; the typings do not export the constant). */
const listenExclusivePort = 1;
/** listen(host, port, options, cb): the builds take it, though their typings name options only without a host. */
type ListenWithOptions = (host: string, port: number, options: number, cb: (listenSocket: Uws.us_listen_socket | false) => void) => Uws.TemplatedApp;

/**
 * Methods whose answers are written at the end of the event-loop turn they are ready in, all together (see
 * startUwsServer). A client sends nothing more on a connection before it has the answer to one of these (RFC 9112
 * §9.3.2: no pipelining behind a method that is not idempotent), so holding the answer back never meets a request
 * behind it, which uWS would answer by cutting the connection.
 */
const batchedMethods: ReadonlySet<string> = new Set(['POST', 'PATCH']);

/** An answer held for the end of the turn. */
interface Batched {
  readonly res: Uws.HttpResponse;
  readonly state: RequestState;
  readonly request: HttpRequest;
  readonly reply: Reply;
}

/** uWS reports methods in lower case; the usual ones map to constants instead of a new upper-cased string per request. */
const upperMethods: ReadonlyMap<string, string> = new Map(['get', 'post', 'put', 'delete', 'patch', 'head', 'options'].map((m) => [m, m.toUpperCase()]));
const methodsWithBody: ReadonlySet<string> = new Set(['post', 'put', 'patch']);

/**
 * A request copied out of uWS before the handler runs. The peer address is asked for only when read
 * (uWS answers it with a getpeername call, a syscall that /health and other public routes do not need)
 * and kept from then on; read it before the first await, as the pipeline does, and it is there after.
 */
class CapturedRequest implements HttpRequest {
  body: Buffer | undefined = undefined;
  authorization = '';
  contentType = '';
  consistency = '';
  #address: string | undefined;
  readonly #res: Uws.HttpResponse;
  readonly #state: RequestState;

  constructor(
    readonly method: string, readonly path: string, readonly query: string, readonly startedAt: number,
    res: Uws.HttpResponse, state: RequestState,
  ) {
    this.#res = res;
    this.#state = state;
  }

  get aborted(): boolean {
    return this.#state.aborted;
  }

  get remoteAddress(): string {
    // Once answered or aborted, res must not be touched again.
    this.#address ??= this.#state.done ? '' : remoteAddressOf(this.#res);
    return this.#address;
  }
}

/**
 * The headers the service reads, gathered in one pass over all of them, which also sizes them and counts
 * Content-Lengths: uWS itself takes the first of two and sets no size limit short of its buffer, where
 * node:http refuses both (request smuggling, memory).
 */
class HeaderScan {
  authorization = '';
  contentType = '';
  contentLength = '';
  consistency = '';
  contentLengths = 0;
  bytes = 0;
  readonly visit = (key: string, value: string): void => {
    this.bytes += key.length + value.length + 4;
    if (key === 'authorization') this.authorization = value;
    else if (key === 'content-type') this.contentType = value;
    else if (key === 'content-length') { this.contentLength = value; this.contentLengths++; }
    else if (key === 'x-consistency') this.consistency = value;
  };

  reset(requestLineBytes: number): void {
    this.authorization = '';
    this.contentType = '';
    this.contentLength = '';
    this.consistency = '';
    this.contentLengths = 0;
    this.bytes = requestLineBytes;
  }
}

export function startUwsServer(uws: typeof Uws, opts: AdapterOptions): Promise<RunningServer> {
  // Without it every answer carries `uWebSockets: 20`, naming the server software (node:http names none).
  // The addon's undocumented `_cfg('silent')` is Loop::setSilent(true), which leaves that header out.
  if (typeof uws._cfg === 'function') uws._cfg('silent');
  const app = uws.App();
  // One scan object for every request: uWS calls the handler synchronously, one request at a time.
  const scan = new HeaderScan();

  const writeHead = (res: Uws.HttpResponse, reply: Reply): void => {
    res.writeStatus(encodedStatusLines.get(reply.status) ?? statusLine(reply.status));
    res.writeHeader(contentTypeName, reply.contentType ?? jsonContentType);
    if (reply.headers !== undefined) for (const [k, v] of reply.headers) res.writeHeader(k, v);
  };

  /** A whole reply written and settled, unless its client has gone meanwhile. */
  const write = (res: Uws.HttpResponse, state: RequestState, request: HttpRequest, reply: Reply): void => {
    // An aborted request is already settled by onAborted.
    if (state.done) return;
    res.cork(() => {
      writeHead(res, reply);
      const body = encodedBody(reply.body);
      // A HEAD answer has headers and no body, as node:http sends it. The connection closes after it: this
      // uWS build takes the connection to be still answering after endWithoutBody and cuts it at the next request.
      if (request.method === 'HEAD') res.endWithoutBody(typeof body === 'string' ? Buffer.byteLength(body) : body.length, true);
      else res.end(body, reply.closeConnection === true);
    });
    tracker.settle(state, request, reply);
  };

  /**
   * Answers to batchedMethods waiting for the end of this turn. Written one by one as each is ready, every send
   * would find the client's process asleep and wake it, which costs the sending CPU more than the send itself
   * (an inter-processor interrupt); written back to back, a client's process woken by the first finds the others
   * ready. Answers that close their connection are not held back.
   */
  let batch: Batched[] = [];
  const writeBatch = (): void => {
    const ready = batch;
    batch = [];
    for (const { res, state, request, reply } of ready) write(res, state, request, reply);
  };

  const finish: Finish<Uws.HttpResponse> = (res, state, request, reply) => {
    if (state.done || state.streaming) return;
    const stream = reply.stream;
    if (stream === undefined) {
      if (!batchedMethods.has(request.method) || reply.closeConnection === true) {
        write(res, state, request, reply);
        return;
      }
      if (batch.length === 0) setImmediate(writeBatch);
      batch.push({ res, state, request, reply });
      return;
    }
    state.streaming = true;
    res.cork(() => {
      writeHead(res, reply);
      res.write(encodedBody(reply.body));
      tracker.pump(uwsSink(res, state), state, request, reply, stream);
    });
  };
  // finish and the tracker refer to each other; neither runs before a request arrives.
  const tracker = new RequestTracker<Uws.HttpResponse>(opts, finish, bodyReceiveSweepMs);

  /**
   * Answers a refusal from inside the request's handler and closes the connection before uWS parses what
   * follows the request. uWS runs the handler with the socket corked and, once it returns, parses the rest of
   * the packet: a request found there would be served, and would reset the connection's close-after-answer
   * state, while the refusal still waited in the cork. A write larger than the cork buffer goes out at once
   * instead, and end() then closes the connection, which stops the parser. Hence the body is padded past the
   * cork buffer with spaces (JSON allows trailing whitespace). If the socket's send buffer is full (a client
   * that does not read), uWS keeps the connection until it drains: see docs/http-front-ends.md.
   */
  const refuseAndClose = (res: Uws.HttpResponse, state: RequestState, request: HttpRequest, reply: Reply): void => {
    const text = joined(reply.body);
    const body = Buffer.alloc(Math.max(Buffer.byteLength(text), uwsCorkBufferBytes + 1), 0x20);
    body.write(text, 0, 'utf8');
    writeHead(res, reply);
    res.end(body, true);
    tracker.settle(state, request, reply);
  };

  app.any('/*', (res, req) => {
    const startedAt = performance.now();
    const method = req.getMethod();
    const url = req.getUrl();
    const query = req.getQuery() ?? '';
    scan.reset(method.length + url.length + query.length + 12);
    req.forEach(scan.visit);
    const state = tracker.begin();
    const request = new CapturedRequest(upperMethods.get(method) ?? method.toUpperCase(), url, query, startedAt, res, state);
    request.authorization = scan.authorization;
    request.contentType = scan.contentType;
    request.consistency = scan.consistency;
    const contentLength = scan.contentLength;
    res.onAborted(() => tracker.aborted(state));

    if (scan.bytes > headerBytesMax) {
      refuseAndClose(res, state, request, refusal(opts, 'headers_too_large'));
      return;
    }
    if (scan.contentLengths > 1) {
      // Request smuggling: uWS takes the first length, an intermediary may take the last.
      refuseAndClose(res, state, request, refusal(opts, 'bad_request'));
      return;
    }
    if (!methodsWithBody.has(method)) {
      tracker.dispatch(res, state, request);
      return;
    }
    // Bounded while streaming: refuse on the declared length, then re-check the running length per chunk.
    // A refused body may still be arriving: onData goes on dropping it (drainsRefusedBody).
    const chunks: Buffer[] = [];
    let received = 0;
    if (contentLength !== '' && Number(contentLength) > opts.bodyBytesMax) {
      res.onData(() => {});
      finish(res, state, request, refusal(opts, 'payload_too_large', !drainsRefusedBody(contentLength)));
      return;
    }
    const entry = tracker.receiving(res, state, request);
    res.onData((chunk, isLast) => {
      if (state.done) return;
      received += chunk.byteLength;
      if (received > opts.bodyBytesMax) {
        tracker.received(entry);
        finish(res, state, request, refusal(opts, 'payload_too_large'));
        return;
      }
      // uWS neuters the ArrayBuffer after this callback returns: copy it.
      chunks.push(Buffer.from(new Uint8Array(chunk)));
      if (isLast) {
        tracker.received(entry);
        request.body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, received);
        tracker.dispatch(res, state, request);
      }
    });
  });

  return new Promise((resolve, reject) => {
    // Exclusive, as node:http listens: uWS otherwise sets SO_REUSEPORT, and a second authd started on this port by
    // mistake (another data directory) would silently take part of the traffic and answer it from its own state.
    (app as unknown as { listen: ListenWithOptions }).listen(opts.host, opts.port, listenExclusivePort, (listenSocket) => {
      if (listenSocket === false) {
        reject(new Error(`cannot listen on ${opts.host}:${opts.port}`));
        return;
      }
      resolve({
        port: uws.us_socket_local_port(listenSocket),
        close(graceMs: number): Promise<void> {
          uws.us_listen_socket_close(listenSocket);
          return tracker.drained(graceMs);
        },
      });
    });
  });
}
