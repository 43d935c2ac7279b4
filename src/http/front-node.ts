// The node:http front end, for hosts where no uWebSockets.js build loads: the same requests, limits, replies and shutdown as src/http/front-uws.ts.

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { bodyReceiveSweepMs, connectionIdleMs, headerBytesMax, replyEncodeBytesMax } from '../config/limits.js';
import {
  addressFromText, drainsRefusedBody, encodePieces, joined, refusal, RequestTracker, statusLine,
  type AdapterOptions, type BodyText, type EarlyReplyKind, type Finish, type HttpRequest, type Reply, type RequestState, type RunningServer, type StreamSink,
} from './adapter.js';

const methodsWithBody: ReadonlySet<string> = new Set(['POST', 'PUT', 'PATCH']);

/** Where a body in pieces is encoded before it is copied out: one copy, and no string joined from the pieces. */
const replyScratch = Buffer.allocUnsafeSlow(replyEncodeBytesMax);

/** Each reply's own bytes: node:http may still hold a body it was handed after end() returns, so the scratch is copied out. */
function bodyBytes(body: BodyText): Buffer {
  if (typeof body !== 'string') {
    const end = encodePieces(replyScratch, body, 0);
    if (end !== -1) return Buffer.from(replyScratch.subarray(0, end));
  }
  return Buffer.from(joined(body), 'utf8');
}

/** A streamed body's way out through node:http; the pump checks for an aborted request itself. */
function nodeSink(res: ServerResponse): StreamSink {
  return {
    write: (chunk) => res.write(chunk),
    later: (resume) => setImmediate(resume),
    whenDrained: (resume) => res.once('drain', () => setImmediate(resume)),
    end: () => res.end(),
    cut: () => res.destroy(),
  };
}

/** The status line's reason phrase as uWS sends it (node:http's own differ for some codes). */
function reasonPhrase(status: number): string {
  return statusLine(status).slice(String(status).length + 1);
}

/** The flat header list of a reply: [name, value, name, value, ...]. */
function headerList(reply: Reply, contentLength: number | undefined): string[] {
  const list = ['Content-Type', reply.contentType ?? 'application/json'];
  if (reply.headers !== undefined) for (const [name, value] of reply.headers) list.push(name, value);
  if (contentLength !== undefined) list.push('Content-Length', String(contentLength));
  if (reply.closeConnection === true) list.push('Connection', 'close');
  return list;
}

/** A whole response as raw bytes, for refusals node:http's parser makes before any request object exists. */
function rawReply(reply: Reply): Buffer {
  const body = bodyBytes(reply.body);
  const list = headerList(reply, body.length);
  let head = `HTTP/1.1 ${statusLine(reply.status)}\r\nDate: ${new Date().toUTCString()}\r\n`;
  for (let i = 0; i < list.length; i += 2) head += `${list[i]}: ${list[i + 1]}\r\n`;
  return Buffer.concat([Buffer.from(`${head}\r\n`, 'latin1'), body]);
}

/**
 * The refusal for a parse error of node:http's parser (llhttp, codes `HPE_*`): 431 for header fields over
 * the limit, 400 for anything else malformed (two Content-Lengths, Content-Length beside Transfer-Encoding,
 * a bad request line or field). Other errors (timeouts, resets) get none: the connection is only closed.
 */
function parseErrorKind(code: string | undefined): EarlyReplyKind | undefined {
  if (code === 'HPE_HEADER_OVERFLOW') return 'headers_too_large';
  return code?.startsWith('HPE_') === true ? 'bad_request' : undefined;
}

/** On a socket: how many of its requests' responses have not closed yet (a number: nothing else is kept alive). */
const openResponses = Symbol('openResponses');
/** On a socket: the answer to its parse error, written once no response before it is open. */
const parseErrorAnswer = Symbol('parseErrorAnswer');
type TrackedSocket = Socket & { [openResponses]?: number; [parseErrorAnswer]?: () => void };

/** A request as handlers see it; the peer address is read from the socket only when asked for, and kept. */
class CapturedRequest implements HttpRequest {
  body: Buffer | undefined = undefined;
  consistency = '';
  #address: string | undefined;
  readonly #socket: Socket;
  readonly #state: RequestState;

  constructor(
    readonly method: string, readonly path: string, readonly query: string, readonly authorization: string,
    readonly contentType: string, readonly startedAt: number, socket: Socket, state: RequestState,
  ) {
    this.#socket = socket;
    this.#state = state;
  }

  get aborted(): boolean {
    return this.#state.aborted;
  }

  get remoteAddress(): string {
    this.#address ??= addressFromText(this.#socket.remoteAddress);
    return this.#address;
  }
}

export function startNodeServer(opts: AdapterOptions): Promise<RunningServer> {
  // finish and the tracker refer to each other; neither runs before a request arrives.
  const finish: Finish<ServerResponse> = (res, state, request, reply) => {
    if (state.done || state.streaming) return;
    const stream = reply.stream;
    if (stream === undefined) {
      const body = bodyBytes(reply.body);
      res.writeHead(reply.status, reasonPhrase(reply.status), headerList(reply, body.length));
      res.end(body);
      tracker.settle(state, request, reply);
      return;
    }
    state.streaming = true;
    res.writeHead(reply.status, reasonPhrase(reply.status), headerList(reply, undefined));
    res.write(bodyBytes(reply.body));
    tracker.pump(nodeSink(res), state, request, reply, stream);
  };
  const tracker = new RequestTracker<ServerResponse>(opts, finish, bodyReceiveSweepMs);

  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    const startedAt = performance.now();
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const headers = req.headers;
    const state = tracker.begin();
    const request = new CapturedRequest(
      req.method ?? 'GET', q === -1 ? url : url.slice(0, q), q === -1 ? '' : url.slice(q + 1),
      headers.authorization ?? '', headers['content-type'] ?? '', startedAt, req.socket, state,
    );
    const consistency = headers['x-consistency'];
    if (typeof consistency === 'string') request.consistency = consistency;
    const socket = req.socket as TrackedSocket;
    socket[openResponses] = (socket[openResponses] ?? 0) + 1;
    res.on('close', () => {
      // Closed before the reply was finished: the client went away (or the stream was cut).
      if (!res.writableFinished) tracker.aborted(state);
      const open = socket[openResponses]! - 1;
      socket[openResponses] = open;
      if (open === 0) socket[parseErrorAnswer]?.();
    });

    // RFC 9112 3.2: an HTTP/1.1 request without Host is answered 400. node:http's own check
    // (requireHostHeader) answers without the envelope, so it is off and this one stands in.
    if (headers.host === undefined && req.httpVersionMajor === 1 && req.httpVersionMinor === 1) {
      finish(res, state, request, refusal(opts, 'bad_request'));
      return;
    }
    if (!methodsWithBody.has(request.method)) {
      tracker.dispatch(res, state, request);
      return;
    }
    const contentLength = headers['content-length'];
    if (contentLength !== undefined && Number(contentLength) > opts.bodyBytesMax) {
      // Kept open, node:http reads the rest of the body and drops it (drainsRefusedBody).
      finish(res, state, request, refusal(opts, 'payload_too_large', !drainsRefusedBody(contentLength)));
      return;
    }
    const chunks: Buffer[] = [];
    let received = 0;
    const entry = tracker.receiving(res, state, request);
    req.on('data', (chunk: Buffer) => {
      if (state.done) return;
      received += chunk.length;
      if (received > opts.bodyBytesMax) {
        tracker.received(entry);
        finish(res, state, request, refusal(opts, 'payload_too_large'));
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      tracker.received(entry);
      if (state.done) return;
      request.body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, received);
      tracker.dispatch(res, state, request);
    });
  };

  const server = createServer({
    maxHeaderSize: headerBytesMax,
    keepAliveTimeout: connectionIdleMs,
    headersTimeout: connectionIdleMs,
    // Bodies are timed by the sweep above, as in the uWS front end.
    requestTimeout: 0,
    // Host is checked in onRequest, to answer in the envelope.
    requireHostHeader: false,
    noDelay: true,
  }, onRequest);
  server.on('clientError', (err: NodeJS.ErrnoException, socket: TrackedSocket) => {
    // The parser stays in its error state: more bytes on this socket report the same error again.
    if (socket[parseErrorAnswer] !== undefined) return;
    const kind = parseErrorKind(err.code);
    if (kind === undefined || !socket.writable) {
      socket.destroy();
      return;
    }
    const reply = refusal(opts, kind);
    socket[parseErrorAnswer] = (): void => {
      if (!socket.writable) return;
      opts.onFinished({ method: '', path: '' }, reply.status, 0, undefined);
      socket.write(rawReply(reply));
      // As node:http ends a `Connection: close` response: FIN once written, then the socket is destroyed.
      socket.destroySoon();
    };
    // Requests read before the malformed one are answered first, in order: a response closes once node:http has
    // handed all of it to the socket, so with none open the 400 goes after the last of them.
    if ((socket[openResponses] ?? 0) === 0) socket[parseErrorAnswer]();
  });

  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => {
      server.off('error', reject);
      const address = server.address();
      resolve({
        port: typeof address === 'object' && address !== null ? address.port : opts.port,
        close(graceMs: number): Promise<void> {
          server.close();
          server.closeIdleConnections();
          return tracker.drained(graceMs);
        },
      });
    });
  });
}
