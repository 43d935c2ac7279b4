// The ceiling: a bare server of the front end CEILING_FRONT_END names (uws or node) answering one fixed JSON body, run as its own process so the load generator drives it exactly as it drives authd.
//
// Every HTTP scenario is reported as a ratio to what this server does on the same machine under the
// same load generator, on the same front end as authd: the one number that compares across machines.
// POST and PUT bodies are read to the end (as authd must) before answering, so a POST scenario is
// compared with a POST ceiling.
//
// With CEILING_READ_JSON=1 (the production-like rows) it also parses every request body as JSON, as
// authd must, and answers with a body set beforehand by PUT /.ceiling/reply: the real answer of the
// scenario it stands beside, so that both write the same bytes.

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type * as Uws from 'uWebSockets.js';
import { connectionIdleMs, headerBytesMax } from '../src/config/limits.js';
import { loadUws } from '../src/http/uws-loader.js';

/** The same shape and size as authd's GET /health answer. */
const healthBody = '{"service":{"result":{"status":"ok"},"elapsed":0.000004}}';
const readJson = process.env['CEILING_READ_JSON'] === '1';
const replyPath = '/.ceiling/reply';
let body: string = healthBody;
let bodyBytes = Buffer.from(body);

/** What a request body costs authd at least: parsing it. A body that does not parse is answered all the same. */
function readBody(raw: Buffer, path: string): void {
  if (readJson && path === replyPath) {
    body = raw.toString('utf8');
    bodyBytes = Buffer.from(body);
    return;
  }
  if (!readJson || raw.length === 0) return;
  try { JSON.parse(raw.toString('utf8')); } catch { /* answered anyway */ }
}
const port = Number(process.env['PORT'] ?? '0');
const host = process.env['HOST'] ?? '127.0.0.1';
const frontEnd = process.env['CEILING_FRONT_END'] ?? 'uws';

const fail = (why: string): never => {
  process.stderr.write(`ceiling: ${why}\n`);
  process.exit(1);
};

const listening = (boundPort: number, build: string | undefined): void => {
  process.stdout.write(`${JSON.stringify({ msg: 'listening', port: boundPort, frontEnd, build })}\n`);
};

/** The same build authd loads with FRONT_END=uws (the bench sets that whenever it runs uWS); never a package's pure-JS fallback. */
function serveUws(): void {
  const load = loadUws({ untraceable: true });
  if (!load.loaded) return fail(load.reason);
  const uws = load.uws;
  const reply = (res: Uws.HttpResponse): void => {
    res.cork(() => {
      res.writeStatus('200 OK');
      res.writeHeader('Content-Type', 'application/json');
      res.end(body);
    });
  };
  uws.App().any('/*', (res, req) => {
    const method = req.getMethod();
    if (method !== 'post' && method !== 'put') {
      reply(res);
      return;
    }
    const path = readJson ? req.getUrl() : '';
    let aborted = false;
    const chunks: Buffer[] = [];
    res.onAborted(() => { aborted = true; });
    res.onData((chunk, isLast) => {
      // uWS reuses the chunk's memory after this call returns: copied when it is to be read.
      if (readJson) chunks.push(Buffer.from(new Uint8Array(chunk)));
      if (!isLast || aborted) return;
      readBody(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks), path);
      reply(res);
    });
  }).listen(host, port, (listenSocket) => {
    if (listenSocket === false) fail(`cannot listen on ${host}:${port}`);
    else listening(uws.us_socket_local_port(listenSocket), load.build);
  });
}

/** node:http with the server options of src/http/front-node.ts and a reply written as it writes one (reason phrase, flat header list). */
function serveNode(): void {
  const reply = (res: ServerResponse): void => {
    res.writeHead(200, 'OK', ['Content-Type', 'application/json', 'Content-Length', String(bodyBytes.length)]);
    res.end(bodyBytes);
  };
  const server = createServer({
    maxHeaderSize: headerBytesMax, keepAliveTimeout: connectionIdleMs, headersTimeout: connectionIdleMs,
    requestTimeout: 0, requireHostHeader: false, noDelay: true,
  }, (req: IncomingMessage, res: ServerResponse) => {
    if (req.method !== 'POST' && req.method !== 'PUT') {
      reply(res);
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => { if (readJson) chunks.push(chunk); });
    req.on('end', () => {
      readBody(Buffer.concat(chunks), req.url ?? '');
      reply(res);
    });
  });
  server.once('error', (err) => fail(`cannot listen on ${host}:${port}: ${err.message}`));
  server.listen(port, host, () => {
    const address = server.address();
    listening(typeof address === 'object' && address !== null ? address.port : port, undefined);
  });
}

if (frontEnd === 'uws') serveUws();
else if (frontEnd === 'node') serveNode();
else fail(`CEILING_FRONT_END must be uws or node, not ${frontEnd}`);
