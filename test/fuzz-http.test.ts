// Property-based fuzzing (fast-check) of every endpoint against the real server over raw sockets, plus bodies around and over the size limit and bodies that never finish: never a 5xx, never a crash, and every accepted write reads back the same after a restart.

import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { bodyBytesMax } from '../src/config/limits.js';
import { serverRoutes } from './helpers/fault-app.js';
import { requestPlan, resolvePlan, type KnownIds, type RouteInfo } from './helpers/fault-fuzz.js';
import { adminEmail, adminPassword, basicAuth, startServer, type RawResponse, type ServerProcess } from './helpers/server.js';

/** `npm run test:fuzz -- --http-cases N` runs many more (it sets FUZZ_HTTP_CASES). */
const cases = Number(process.env['FUZZ_HTTP_CASES'] ?? 700);
/** The limiter has its own suites; here it would only slow the fuzz down. */
const env = { BRUTE_FORCE_FAILURE_FACTOR: '0', BRUTE_FORCE_ADDRESS_FAILURE_FACTOR: '0', BRUTE_FORCE_TARPIT_MS: '0', PUBLIC_URL: 'https://fuzz.example.test' };

let server: ServerProcess;
let routes: RouteInfo[];

before(async () => {
  routes = await serverRoutes();
  server = await startServer({ env });
});

after(async () => {
  await server?.dispose();
});

/**
 * One request on its own connection, written in one piece (two writes would meet Nagle and delayed
 * ACKs: 40 ms each); the answer as soon as it is complete. A server that closes while the client is
 * still sending (413) still gives its answer; a connection dropped with no answer rejects.
 */
function send(requestHead: string, body: Uint8Array | undefined, timeoutMs = 20_000): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = connect(server.port, '127.0.0.1');
    socket.setNoDelay(true);
    let received = Buffer.alloc(0);
    let settled = false;
    const parse = (): RawResponse | undefined => {
      const end = received.indexOf('\r\n\r\n');
      if (end < 0) return undefined;
      const lines = received.subarray(0, end).toString('latin1').split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines.slice(1)) headers[line.slice(0, line.indexOf(':')).toLowerCase()] = line.slice(line.indexOf(':') + 1).trim();
      const length = Number(headers['content-length'] ?? NaN);
      const rest = received.subarray(end + 4);
      if (Number.isFinite(length) && rest.length < length) return undefined;
      return { status: Number(lines[0]!.split(' ')[1]), headers, body: rest.toString('utf8') };
    };
    const finish = (err?: Error): void => {
      if (settled) return;
      const res = parse();
      if (res === undefined && err === undefined && !socket.destroyed) return;
      settled = true;
      socket.destroy();
      if (res !== undefined) resolve(res);
      else reject(err ?? new Error('connection closed without an answer'));
    };
    socket.on('connect', () => socket.write(body === undefined ? `${requestHead}\r\n\r\n` : Buffer.concat([Buffer.from(`${requestHead}\r\n\r\n`), body])));
    socket.on('data', (d: Buffer) => {
      received = Buffer.concat([received, d]);
      if (parse() !== undefined) finish();
    });
    // A server that answers (413) and closes while we still send makes our write fail (EPIPE) before
    // its answer is read: the answer still arrives, so wait for the close.
    let writeError: Error | undefined;
    socket.on('error', (err) => { writeError = err; });
    socket.on('close', () => finish(writeError ?? new Error('connection closed without an answer')));
    // uWS keeps a connection it cannot parse open until its idle timeout, without answering.
    socket.setTimeout(timeoutMs, () => finish(new Error(`no answer in ${timeoutMs} ms`)));
  });
}

function head(method: string, target: string, headers: Record<string, string>): string {
  return [`${method} ${target} HTTP/1.1`, 'Host: fuzz.test', 'Connection: close', ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)].join('\r\n');
}

async function list<T>(path: string, key: string): Promise<T[]> {
  const res = await fetch(server.baseUrl + path, { headers: { authorization: basicAuth(adminEmail, adminPassword) } });
  assert.equal(res.status, 200, `GET ${path}`);
  return ((await res.json()) as { service: { result: Record<string, T[]> } }).service.result[key]!;
}

async function known(): Promise<KnownIds> {
  const users = (await list<{ id: string; email: string; apikeys: { id: string }[] }>('/users', 'users')).filter((u) => u.email !== adminEmail);
  return {
    application: (await list<{ id: string }>('/applications', 'applications')).map((a) => a.id),
    group: (await list<{ id: string }>('/groups', 'groups')).map((g) => g.id),
    user: users.map((u) => u.id),
    organization: [],
    apikey: users.flatMap((u) => u.apikeys.map((k) => ({ user: u.id, key: k.id }))),
  };
}

async function readBack(): Promise<string> {
  const byId = <T extends { id: string }>(items: T[]): T[] => items.sort((a, b) => (a.id < b.id ? -1 : 1));
  return JSON.stringify({
    applications: byId(await list<{ id: string }>('/applications', 'applications')),
    groups: byId(await list<{ id: string }>('/groups', 'groups')),
    users: byId(await list<{ id: string }>('/users', 'users')),
  });
}

async function healthy(): Promise<boolean> {
  try {
    return (await fetch(`${server.baseUrl}/health`)).status === 200;
  } catch {
    return false;
  }
}

/** Sends the first `sent` bytes of a body declared `declared` long, then waits for the answer (or the close). */
function partialBody(declared: number, sent: number): Promise<RawResponse | 'closed'> {
  return new Promise((resolve) => {
    const socket = connect(server.port, '127.0.0.1');
    let received = '';
    socket.on('connect', () => {
      socket.write(`${head('POST', '/applications/application', { Authorization: basicAuth(adminEmail, adminPassword), 'Content-Type': 'application/json', 'Content-Length': String(declared) })}\r\n\r\n`);
      socket.write(Buffer.alloc(sent, 0x20), () => undefined);
    });
    socket.on('data', (d: Buffer) => { received += d.toString('latin1'); });
    socket.on('close', () => {
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(received)?.[1]);
      resolve(Number.isFinite(status) ? { status, headers: {}, body: received.slice(received.indexOf('\r\n\r\n') + 4) } : 'closed');
    });
    socket.on('error', () => undefined);
    socket.setTimeout(30_000, () => socket.destroy());
  });
}

test(`${cases} hostile requests over every endpoint against the real server: never a 5xx, never a crash; every accepted write reads back the same after a restart`, async (t) => {
  const seed = Number(process.env['FUZZ_SEED'] ?? 2024);
  t.diagnostic(`fast-check seed ${seed} (FUZZ_SEED=${seed} replays it); ${routes.length} routes`);
  // A body that never finishes: started now, answered 408 after the receive timeout while the fuzz runs.
  const neverFinishes = partialBody(1000, 10);
  let ids = await known();
  const byStatus = new Map<number, number>();
  let dropped = 0;
  let n = 0;
  const out = await fc.check(fc.asyncProperty(requestPlan(routes.length), async (plan) => {
    if (n++ % 20 === 0) ids = await known();
    const req = resolvePlan(plan, routes, ids);
    const headers: Record<string, string> = {};
    if (req.authorization !== '') headers['Authorization'] = req.authorization === 'admin' ? basicAuth(adminEmail, adminPassword) : req.authorization;
    if (req.contentType !== '') headers['Content-Type'] = req.contentType;
    if (req.body !== undefined) headers['Content-Length'] = String(req.body.length);
    const target = req.path + (req.query === '' ? '' : `?${req.query}`);
    let res: RawResponse;
    try {
      res = await send(head(req.method, target, headers), req.body, 2000);
    } catch {
      // uWS does not answer what is not HTTP at all (a raw control character in the target, say): no answer, no crash.
      dropped++;
      assert.ok(await healthy(), `the server died after: ${req.describe}`);
      return;
    }
    byStatus.set(res.status, (byStatus.get(res.status) ?? 0) + 1);
    assert.ok(res.status < 500, `${res.status} for ${req.describe}: ${res.body.slice(0, 300)}`);
  }), { numRuns: cases, seed, endOnFailure: true });
  if (out.failed) assert.fail(`request ${out.numRuns} (seed ${seed}): ${out.errorInstance instanceof Error ? out.errorInstance.message : String(out.errorInstance)}`);

  // Bodies around and over the size limit.
  // Over the limit the server answers 413 and closes while the body is still coming; the kernel may then
  // reset the connection before the answer is read ('closed'). Either way the write must not be made.
  const sized = async (bytes: number): Promise<number | 'closed'> => {
    const name = `sized-${bytes}`;
    const body = Buffer.from(JSON.stringify({ name, description: '' }));
    const padded = Buffer.concat([body.subarray(0, body.length - 1), Buffer.from(`${' '.repeat(Math.max(0, bytes - body.length))}}`)]);
    return send(head('POST', '/applications/application', {
      Authorization: basicAuth(adminEmail, adminPassword), 'Content-Type': 'application/json', 'Content-Length': String(padded.length),
    }), padded).then((res) => res.status, () => 'closed' as const);
  };
  assert.equal(await sized(bodyBytesMax - 1), 200);
  assert.equal(await sized(bodyBytesMax), 200);
  for (const over of [bodyBytesMax + 1, bodyBytesMax * 3]) {
    const status = await sized(over);
    assert.ok(status === 413 || status === 'closed', `${over} bytes: ${status}`);
  }
  const names = (await list<{ name: string }>('/applications', 'applications')).map((a) => a.name);
  assert.ok(names.includes(`sized-${bodyBytesMax}`) && !names.includes(`sized-${bodyBytesMax + 1}`) && !names.includes(`sized-${bodyBytesMax * 3}`));
  // No declared length at all (chunked): the running count per chunk catches it.
  const chunk = Buffer.alloc(64 * 1024, 0x20);
  const chunked = Buffer.concat([...Array.from({ length: 20 }, () => Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')])), Buffer.from('0\r\n\r\n')]);
  const streamed = await send(head('POST', '/applications/application', {
    Authorization: basicAuth(adminEmail, adminPassword), 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked',
  }), chunked).catch(() => 'closed' as const);
  assert.ok(streamed === 'closed' || streamed.status === 413, `a chunked body over the limit is refused, got ${streamed === 'closed' ? 'closed' : streamed.status}`);
  const slow = await neverFinishes;
  assert.ok(slow !== 'closed' && slow.status === 408, `a body that never finishes is answered 408 and closed, got ${slow === 'closed' ? 'closed' : slow.status}`);

  assert.ok(await healthy(), 'the server is alive');
  const statuses = [...byStatus].sort(([a], [b]) => a - b).map(([s, c]) => `${s}: ${c}`).join(', ');
  t.diagnostic(`${cases} fuzz requests (${statuses}; ${dropped} dropped by uWS as not HTTP), 4 sized bodies, 1 chunked body over the limit, 1 never-finishing body`);

  const before = await readBack();
  assert.equal(await server.stop(), 0, 'a clean stop');
  server = await server.restart();
  assert.equal(await readBack(), before, 'every accepted write reads back the same after the restart');
});
