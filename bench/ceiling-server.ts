// The ceiling: a minimal uWebSockets.js server answering one fixed small JSON body, run as its own process so the load generator drives it exactly as it drives authd.
//
// Every HTTP scenario is reported as a ratio to what this server does on the same machine under the
// same load generator: the one number that compares across machines. POST bodies are read to the end
// (as authd must) before answering, so a POST scenario is compared with a POST ceiling.

import { createRequire } from 'node:module';
import type * as Uws from 'uWebSockets.js';

const require = createRequire(import.meta.url);
const uws = require('uWebSockets.js') as typeof Uws;

/** The same shape and size as authd's GET /health answer. */
const body = '{"service":{"result":{"status":"ok"},"elapsed":0.000004}}';
const port = Number(process.env['PORT'] ?? '0');
const host = process.env['HOST'] ?? '127.0.0.1';

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
  if (listenSocket === false) {
    process.stderr.write(`ceiling: cannot listen on ${host}:${port}\n`);
    process.exit(1);
  }
  process.stdout.write(`${JSON.stringify({ msg: 'listening', port: uws.us_socket_local_port(listenSocket) })}\n`);
});
