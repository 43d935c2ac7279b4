// HTTP on the wire, on both front ends: framing refusals (two Content-Lengths, no Host, malformed requests, oversized headers), pipelining, aborted and slow bodies, reply headers.

import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, test } from 'node:test';
import { headerBytesMax, refusedBodyDrainBytesMax } from '../src/config/limits.js';
import { adminEmail, adminPassword, basicAuth, startServer, type ServerProcess } from './helpers/server.js';

let server: ServerProcess;

before(async () => {
  server = await startServer();
});

after(async () => {
  await server.dispose();
});

interface WireResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

/** Every complete response in `bytes` (Content-Length framed: the service answers so, except streamed listings). */
function parseResponses(bytes: Buffer): WireResponse[] {
  const out: WireResponse[] = [];
  let at = 0;
  for (;;) {
    const end = bytes.indexOf('\r\n\r\n', at);
    if (end < 0) return out;
    const lines = bytes.subarray(at, end).toString('latin1').split('\r\n');
    const headers: Record<string, string> = {};
    for (const line of lines.slice(1)) headers[line.slice(0, line.indexOf(':')).toLowerCase()] = line.slice(line.indexOf(':') + 1).trim();
    const length = Number(headers['content-length'] ?? 0);
    if (bytes.length < end + 4 + length) return out;
    out.push({ status: Number(lines[0]!.split(' ')[1]), headers, body: bytes.subarray(end + 4, end + 4 + length).toString('utf8') });
    at = end + 4 + length;
  }
}

/**
 * Writes each part in turn (waiting `gapMs` between them), then reads until the server closes the
 * connection or `quietMs` pass without a byte. `abortAfterParts` closes from our side instead.
 */
function exchange(parts: readonly (string | Buffer)[], opts: { gapMs?: number; quietMs?: number; abortAfterParts?: number; port?: number } = {}): Promise<{ responses: WireResponse[]; raw: Buffer; closedByServer: boolean }> {
  return new Promise((resolve, reject) => {
    const socket = connect(opts.port ?? server.port, '127.0.0.1');
    let received = Buffer.alloc(0);
    let quiet: NodeJS.Timeout | undefined;
    let done = false;
    const finish = (closedByServer: boolean): void => {
      if (done) return;
      done = true;
      clearTimeout(quiet);
      socket.destroy();
      resolve({ responses: parseResponses(received), raw: received, closedByServer });
    };
    const rearm = (): void => {
      clearTimeout(quiet);
      quiet = setTimeout(() => finish(false), opts.quietMs ?? 700);
    };
    socket.on('data', (chunk: Buffer) => { received = Buffer.concat([received, chunk]); rearm(); });
    socket.on('close', () => finish(true));
    socket.on('error', (err: NodeJS.ErrnoException) => { if (err.code !== 'ECONNRESET' && err.code !== 'EPIPE') reject(err); });
    socket.on('connect', async () => {
      for (let i = 0; i < parts.length; i++) {
        if (i > 0 && opts.gapMs !== undefined) await new Promise((r) => setTimeout(r, opts.gapMs));
        if (socket.destroyed) return;
        socket.write(parts[i]!);
        if (opts.abortAfterParts === i + 1) {
          socket.destroy();
          finish(false);
          return;
        }
      }
      rearm();
    });
  });
}

const auth = basicAuth(adminEmail, adminPassword);

function errorCode(res: WireResponse): string {
  return (JSON.parse(res.body) as { service: { error: { code: string } } }).service.error.code;
}

function frontEnd(): string {
  return String(server.logLines().find((l) => l['msg'] === 'front end')?.['frontEnd']);
}

/** A 400 `bad_request` in the envelope, with the headers every answer carries. */
function assertBadRequest(res: WireResponse | undefined, what: string): void {
  assert.equal(res?.status, 400, what);
  assert.equal(errorCode(res!), 'bad_request', what);
  assert.ok(!Number.isNaN(Date.parse(res!.headers['date'] ?? '')), `${what}: a Date header`);
  assert.equal(res!.headers['connection'], 'close', what);
}

// Issue 23, HTTP framing: duplicate Content-Length must be refused with 400, not cut off without an answer.
test('two Content-Length headers, equal or not, get 400 and the connection closed: a request smuggled behind them is never served', async () => {
  const smuggled = 'GET /health HTTP/1.1\r\nHost: x\r\n\r\n';
  for (const lengths of [['2', '2'], ['2', '40'], ['40', '2']]) {
    const text = `POST /authenticate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${lengths[0]}\r\nContent-Length: ${lengths[1]}\r\n\r\n{}${smuggled}`;
    // A request before it in the same packet is answered first, and not lost with the connection.
    const { responses, closedByServer } = await exchange([`${smuggled}${text}`]);
    assert.deepEqual(responses.map((r) => r.status), [200, 400], `Content-Length ${lengths.join(' and ')}`);
    assertBadRequest(responses[1], `Content-Length ${lengths.join(' and ')}`);
    assert.equal(closedByServer, true);
  }
});

test('Content-Length beside Transfer-Encoding: node:http answers 400, uWS closes the connection unanswered; nothing after it is served', async () => {
  const text = 'POST /authenticate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{}GET /health HTTP/1.1\r\nHost: x\r\n\r\n';
  const { responses, closedByServer } = await exchange([text]);
  if (frontEnd() === 'node') {
    assert.equal(responses.length, 1);
    assertBadRequest(responses[0], 'Content-Length with Transfer-Encoding');
  } else {
    // uWS's parser refuses it before any handler runs (docs/http-front-ends.md).
    assert.deepEqual(responses, []);
  }
  assert.equal(closedByServer, true);
});

// Issue 23, HTTP framing: a request without Host answered 200.
test('an HTTP/1.1 request without Host: node:http answers 400, uWS never serves it; HTTP/1.0 without Host is no error', async () => {
  const bare = await exchange(['GET /health HTTP/1.1\r\n\r\n']);
  const withField = await exchange(['GET /health HTTP/1.1\r\nAccept: */*\r\n\r\n']);
  const old = await exchange(['GET /health HTTP/1.0\r\n\r\n']);
  // Two Host fields: neither parser refuses them, and authd does not read Host.
  const twoHosts = await exchange(['GET /health HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n']);
  assert.deepEqual(twoHosts.responses.map((r) => r.status), [200]);
  if (frontEnd() === 'node') {
    assertBadRequest(bare.responses[0], 'no header field at all');
    assertBadRequest(withField.responses[0], 'no Host');
    assert.equal(withField.closedByServer, true);
    assert.deepEqual(old.responses.map((r) => r.status), [200]);
  } else {
    // uWS's parser closes the connection when Host is missing, and cannot parse a header with no field
    // (or HTTP/1.0) at all: it waits for more until the idle timeout (docs/http-front-ends.md).
    assert.deepEqual(bare.responses, []);
    assert.deepEqual(withField.responses, []);
    assert.equal(withField.closedByServer, true);
    assert.deepEqual(old.responses, []);
  }
});

// Issue 23, HTTP framing: node:http cut malformed requests off without an answer.
test('malformed requests: node:http answers 400 in the envelope and closes, uWS never answers them', async () => {
  const malformed = {
    'a Content-Length that is not a number': 'POST /authenticate HTTP/1.1\r\nHost: x\r\nContent-Length: 2x\r\n\r\n{}',
    'a bare LF': 'GET /health HTTP/1.1\nHost: x\n\n',
    'a request line that is not HTTP': 'HELLO\r\n\r\n',
    'a space in a field name': 'GET /health HTTP/1.1\r\nHost: x\r\nBad Name: y\r\n\r\n',
    'a folded field': 'GET /health HTTP/1.1\r\nHost: x\r\nX-A: a\r\n b\r\n\r\n',
  };
  for (const [what, text] of Object.entries(malformed)) {
    const { responses, closedByServer } = await exchange([text], { quietMs: 500 });
    if (frontEnd() === 'node') {
      assert.equal(responses.length, 1, what);
      assertBadRequest(responses[0], what);
      assert.equal(closedByServer, true, what);
    } else {
      assert.deepEqual(responses, [], what);
    }
  }
});

test('a malformed request pipelined behind one still being answered: node:http answers both in order, the 400 last', async () => {
  // A password caller check not seen before is hashed on a worker: its answer is still pending when the next bytes are read.
  const caller = basicAuth(adminEmail, `${adminPassword}-wrong-2`);
  const text = `GET /applications HTTP/1.1\r\nHost: x\r\nAuthorization: ${caller}\r\n\r\nHELLO\r\n\r\n`;
  const { responses, closedByServer } = await exchange([text], { quietMs: 3000 });
  if (frontEnd() === 'node') {
    assert.deepEqual(responses.map((r) => r.status), [401, 400]);
    assertBadRequest(responses[1], 'after a pending answer');
    assert.equal(closedByServer, true);
  } else {
    // uWS waits for the rest of what it cannot parse yet; the pending answer goes out.
    assert.deepEqual(responses.map((r) => r.status), [401]);
  }
});

// Issue 23, smaller findings: the `uWebSockets: 20` header named the server software.
test('no answer names the server software', async () => {
  const { responses } = await exchange(['GET /health HTTP/1.1\r\nHost: x\r\n\r\n', 'GET /no-such-route HTTP/1.1\r\nHost: x\r\n\r\n'], { gapMs: 50 });
  assert.equal(responses.length, 2);
  for (const res of responses) {
    for (const name of Object.keys(res.headers)) assert.doesNotMatch(name, /^(server|uwebsockets|x-powered-by)$/, `header ${name}`);
  }
});

test('header fields over the limit get 431 in the envelope and the connection closed; under it, the request is served', async () => {
  const over = await exchange([`GET /health HTTP/1.1\r\nHost: x\r\nX-Filler: ${'a'.repeat(headerBytesMax + 100)}\r\n\r\n`]);
  assert.equal(over.responses.length, 1);
  assert.equal(over.responses[0]!.status, 431);
  assert.equal(errorCode(over.responses[0]!), 'headers_too_large');
  assert.equal(over.closedByServer, true);
  const under = await exchange([`GET /health HTTP/1.1\r\nHost: x\r\nX-Filler: ${'a'.repeat(headerBytesMax / 2)}\r\n\r\n`]);
  assert.deepEqual(under.responses.map((r) => r.status), [200]);
});

test('a request behind a refusal that closes the connection, in the same packet, is not served', async () => {
  const over = `GET /health HTTP/1.1\r\nHost: x\r\nX-Filler: ${'a'.repeat(headerBytesMax + 100)}\r\n\r\n`;
  const { responses, closedByServer } = await exchange([`${over}GET /no-such-route HTTP/1.1\r\nHost: x\r\n\r\n`]);
  assert.deepEqual(responses.map((r) => r.status), [431]);
  assert.equal(closedByServer, true);
});

const refusedAuthenticate = (() => {
  const body = '{"type":"password","username":"a@b.c","password":"x","application":"ZZZZZZZZZZZZZZZZZZZZZZ"}';
  return `POST /authenticate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
})();

test('pipelined requests answered at once are answered in order on one connection', async () => {
  const text = ['GET /health HTTP/1.1\r\nHost: x\r\n\r\n', 'GET /no-such-route HTTP/1.1\r\nHost: x\r\n\r\n', refusedAuthenticate].join('');
  const { responses, closedByServer } = await exchange([text], { quietMs: 1500 });
  assert.deepEqual(responses.map((r) => r.status), [200, 404, 401]);
  assert.equal(closedByServer, false);
});

/** A GET /health pipelined behind `first`, whose answer is pending when uWS parses it: node:http answers both in order (401, 200), uWS cuts the connection. */
async function assertPipelinedBehindPending(first: string, quietMs: number): Promise<void> {
  const { responses, closedByServer } = await exchange([`${first}GET /health HTTP/1.1\r\nHost: x\r\n\r\n`], { quietMs });
  if (frontEnd() === 'node') {
    assert.deepEqual(responses.map((r) => r.status), [401, 200]);
    assert.equal(closedByServer, false);
  } else {
    assert.deepEqual(responses.map((r) => r.status), []);
    assert.equal(closedByServer, true);
  }
}

test('a request pipelined behind a POST: node:http answers both in order, uWS (POST answers wait for the end of the turn) cuts the connection', async () => {
  await assertPipelinedBehindPending(refusedAuthenticate, 1500);
});

test('POST answers ready in one turn all go out, each on its own connection', async () => {
  // Sent together, so that uWS reads them in one turn and batches their answers; twice, so a second batch follows the first.
  for (let round = 0; round < 2; round++) {
    const results = await Promise.all(Array.from({ length: 20 }, () => exchange([refusedAuthenticate], { quietMs: 300 })));
    for (const { responses } of results) assert.deepEqual(responses.map((r) => r.status), [401]);
  }
});

test('a request pipelined behind one still being answered: node:http answers both in order, uWS cuts the connection (docs/http-front-ends.md)', async () => {
  // A password caller check not seen before is hashed on a worker: its answer is still pending when the next request is read.
  const caller = basicAuth(adminEmail, `${adminPassword}-wrong`);
  await assertPipelinedBehindPending(`GET /applications HTTP/1.1\r\nHost: x\r\nAuthorization: ${caller}\r\n\r\n`, 3000);
});

// Issue 23, HTTP framing: on uWS a change was made although its answer was dropped with the connection.
test('a change pipelined ahead of another request: node:http makes and answers it, uWS drops the connection and does not make it', async () => {
  // A fresh server has never checked the admin's password: the caller check runs on a worker, and uWS parses
  // the pipelined GET (and closes the connection) before it returns.
  const fresh = await startServer();
  try {
    const body = JSON.stringify({ name: 'pipelined-change-app' });
    const text = `POST /applications/application HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}GET /health HTTP/1.1\r\nHost: x\r\n\r\n`;
    const { responses } = await exchange([text], { quietMs: 3000, port: fresh.port });
    await new Promise((r) => setTimeout(r, 500));
    const apps = await fresh.api().get('/applications?name=pipelined-change-app');
    if (frontEnd() === 'node') {
      assert.deepEqual(responses.map((r) => r.status), [200, 200]);
      assert.match(apps.text, /"name":"pipelined-change-app"/);
    } else {
      assert.deepEqual(responses, []);
      assert.doesNotMatch(apps.text, /"name":"pipelined-change-app"/);
    }
  } finally {
    await fresh.dispose();
  }
});

test('replies carry Content-Type, a Content-Length that is the body\'s byte length, and Date', async () => {
  const { responses } = await exchange(['GET /no-such-route/\u00e9 HTTP/1.1\r\nHost: x\r\n\r\n', 'GET /health HTTP/1.1\r\nHost: x\r\n\r\n'], { gapMs: 50 });
  for (const res of responses) {
    assert.equal(res.headers['content-type'], 'application/json');
    assert.equal(Number(res.headers['content-length']), Buffer.byteLength(res.body));
    assert.ok(!Number.isNaN(Date.parse(res.headers['date'] ?? '')), 'a Date header');
  }
});

test('a body that arrives slowly, within the receive timeout, is read whole and answered', async () => {
  const body = Buffer.from(JSON.stringify({ name: 'slow-body-app', description: 'sent in pieces' }));
  const head = `POST /applications/application HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`;
  const parts = [head, body.subarray(0, 10), body.subarray(10, 20), body.subarray(20)];
  const { responses } = await exchange(parts, { gapMs: 300, quietMs: 3000 });
  assert.equal(responses.length, 1);
  assert.equal(responses[0]!.status, 200, responses[0]!.body);
  assert.match(responses[0]!.body, /"name":"slow-body-app"/);
});

test('a request aborted mid-body changes nothing, and the server goes on serving', async () => {
  const body = JSON.stringify({ name: 'aborted-body-app' });
  const head = `POST /applications/application HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth}\r\nContent-Type: application/json\r\nContent-Length: ${body.length + 50}\r\n\r\n`;
  await exchange([head, body], { gapMs: 50, abortAfterParts: 2 });
  // And one aborted as soon as its whole body is sent, before the reply could come.
  const whole = `POST /applications/application HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength('{"name":"aborted-early-app"}')}\r\n\r\n{"name":"aborted-early-app"}`;
  await exchange([whole], { abortAfterParts: 1 });
  await new Promise((r) => setTimeout(r, 300));
  const apps = await server.api().get('/applications?name=aborted-body-app');
  assert.equal(apps.status, 200);
  assert.doesNotMatch(apps.text, /"name":"aborted-body-app"/);
  const { responses } = await exchange(['GET /health HTTP/1.1\r\nHost: x\r\n\r\n']);
  assert.deepEqual(responses.map((r) => r.status), [200]);
  assert.equal(server.running, true);
});

test('HEAD and OPTIONS are refused with 405 and Allow, as any other method a route lacks; a HEAD answer has no body', async () => {
  const options = await exchange(['OPTIONS /health HTTP/1.1\r\nHost: x\r\n\r\n'], { quietMs: 500 });
  assert.equal(options.responses[0]?.status, 405);
  assert.equal(options.responses[0]?.headers['allow'], 'GET');
  // Then a GET on the same connection: had the HEAD answer carried a body, it would be read as the next answer.
  const { raw } = await exchange(['HEAD /health HTTP/1.1\r\nHost: x\r\n\r\n', 'GET /health HTTP/1.1\r\nHost: x\r\n\r\n'], { gapMs: 200, quietMs: 500 });
  const headEnd = raw.indexOf('\r\n\r\n') + 4;
  assert.match(raw.subarray(0, headEnd).toString('latin1'), /^HTTP\/1\.1 405 [^]*\r\nAllow: GET\r\n/i);
  // uWS closes the connection after a HEAD answer (docs/http-front-ends.md); node:http goes on to the GET.
  assert.match(raw.subarray(headEnd).toString('latin1'), /^(HTTP\/1\.1 200 [^]*)?$/, 'no body: the next bytes, if any, are the GET\'s answer');
});

// Issue 23, HTTP framing: a 3 MiB body to a 1 MiB limit reached fetch as a connection reset instead of the 413.
test('a body over the limit that declared its length is drained: a client that sends it whole (fetch) reads the 413', async () => {
  const body = JSON.stringify({ name: 'too-big', blob: 'a'.repeat(3 * 1024 * 1024) });
  const statuses: (number | string)[] = [];
  for (let i = 0; i < 10; i++) {
    try {
      const res = await fetch(`${server.baseUrl}/applications/application`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: auth }, body });
      statuses.push(res.status);
      await res.text();
    } catch (err) {
      statuses.push(String((err as { cause?: { code?: string } }).cause?.code ?? err));
    }
  }
  assert.deepEqual(statuses, Array<number>(10).fill(413));
});

test('after a drained 413 the connection serves the next request; a declared length past the drain limit is answered and cut', async () => {
  const length = 1024 * 1024 + 1;
  const head = `POST /applications/application HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth}\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;
  const drained = await exchange([head, Buffer.alloc(length, 0x61), 'GET /health HTTP/1.1\r\nHost: x\r\n\r\n'], { gapMs: 100, quietMs: 1500 });
  assert.deepEqual(drained.responses.map((r) => r.status), [413, 200]);
  assert.equal(drained.closedByServer, false);
  const huge = `POST /applications/application HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth}\r\nContent-Type: application/json\r\nContent-Length: ${refusedBodyDrainBytesMax + 1}\r\n\r\n`;
  const cut = await exchange([huge], { quietMs: 1500 });
  assert.deepEqual(cut.responses.map((r) => r.status), [413]);
  assert.equal(cut.closedByServer, true);
});
