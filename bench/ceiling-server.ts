// The ceiling: a bare server of the front end CEILING_FRONT_END names (uws or node) answering one fixed small JSON body, run as its own process so the load generator drives it exactly as it drives authd.
//
// Every HTTP scenario is reported as a ratio to what this server does on the same machine under the
// same load generator, on the same front end as authd: the one number that compares across machines.
// POST and PUT bodies are read to the end (as authd must) before answering, so a POST scenario is
// compared with a POST ceiling.

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type * as Uws from 'uWebSockets.js';
import { connectionIdleMs, headerBytesMax } from '../src/config/limits.js';
import { loadUws } from '../src/http/uws-loader.js';

/** The same shape and size as authd's GET /health answer. */
const body = '{"service":{"result":{"status":"ok"},"elapsed":0.000004}}';
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
    let aborted = false;
    res.onAborted(() => { aborted = true; });
    res.onData((_chunk, isLast) => {
      if (isLast && !aborted) reply(res);
    });
  }).listen(host, port, (listenSocket) => {
    if (listenSocket === false) fail(`cannot listen on ${host}:${port}`);
    else listening(uws.us_socket_local_port(listenSocket), load.build);
  });
}

/** node:http with the server options of src/http/front-node.ts and a reply written as it writes one (reason phrase, flat header list). */
function serveNode(): void {
  const bodyBytes = Buffer.from(body);
  const headers = ['Content-Type', 'application/json', 'Content-Length', String(bodyBytes.length)];
  const reply = (res: ServerResponse): void => {
    res.writeHead(200, 'OK', headers);
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
    req.on('data', () => { /* read and dropped, as uWS's onData above */ });
    req.on('end', () => reply(res));
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
