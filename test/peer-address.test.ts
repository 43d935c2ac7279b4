// The TCP peer's address as the audit trail records it: each connection's own, whichever peers came before it, on an IPv4 and on a dual-stack listener, in one form on both front ends.

import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, test } from 'node:test';
import { addressFromText, addressText } from '../src/http/adapter.js';
import { startServer, type ServerProcess } from './helpers/server.js';

const servers: ServerProcess[] = [];

after(async () => {
  for (const server of servers) await server.dispose();
});

/** A request with malformed Basic credentials (refused without hashing, one audit line), from `localAddress`. */
function refusedCall(host: string, port: number, localAddress: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host, port, localAddress, path: '/applications', headers: { authorization: 'Basic !!!' }, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

async function addressesOf(server: ServerProcess, calls: readonly [host: string, from: string][]): Promise<string[]> {
  const before = (await server.auditLines()).length;
  for (const [host, from] of calls) assert.equal(await refusedCall(host, server.port, from), 401);
  return (await server.auditLines()).slice(before).map((l) => l['address'] as string);
}

test('an IPv4 listener records each peer\'s own address, repeated and alternating peers alike', async () => {
  const server = await startServer();
  servers.push(server);
  const from = ['127.0.0.1', '127.0.0.2', '127.0.0.1', '127.0.0.3', '127.0.0.2'];
  assert.deepEqual(await addressesOf(server, from.map((f) => ['127.0.0.1', f])), from);
});

test('a dual-stack listener records IPv6 peers in short form and IPv4-mapped peers as IPv4', async () => {
  const server = await startServer({ env: { HOST: '::' } });
  servers.push(server);
  const addresses = await addressesOf(server, [['::1', '::1'], ['127.0.0.1', '127.0.0.2'], ['::1', '::1'], ['127.0.0.1', '127.0.0.1'], ['127.0.0.1', '127.0.0.2']]);
  assert.deepEqual(addresses, ['::1', '127.0.0.2', '::1', '127.0.0.1', '127.0.0.2']);
});

test('addressText writes IPv6 as RFC 5952 does (as the WHATWG URL serializer does) and mapped IPv4 as IPv4', () => {
  let seed = 0x2545f491;
  const next = (): number => { seed ^= seed << 13; seed ^= seed >>> 17; seed ^= seed << 5; return seed >>> 0; };
  for (let round = 0; round < 5000; round++) {
    const raw = new Uint8Array(16);
    // Mostly zero groups, so runs of every length and position come up.
    for (let g = 0; g < 8; g++) if (next() % 3 === 0) { const v = next() & 0xffff; raw[2 * g] = v >> 8; raw[2 * g + 1] = v & 0xff; }
    const full = Array.from({ length: 8 }, (_, g) => ((raw[2 * g]! << 8) | raw[2 * g + 1]!).toString(16)).join(':');
    const mapped = raw.subarray(0, 10).every((b) => b === 0) && raw[10] === 0xff && raw[11] === 0xff;
    const expected = mapped ? raw.subarray(12).join('.') : new URL(`http://[${full}]/`).hostname.slice(1, -1);
    assert.equal(addressText(raw), expected, `seed round ${round}: ${full}`);
  }
  assert.equal(addressText(new Uint8Array([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 1, 2, 3])), '10.1.2.3');
  assert.equal(addressText(new Uint8Array([192, 168, 0, 1])), '192.168.0.1');
  assert.equal(addressFromText('::ffff:127.0.0.2'), '127.0.0.2');
  assert.equal(addressFromText('::1'), '::1');
});

/** GET /applications with Basic credentials from `localAddress`: the status. */
function basicCall(host: string, port: number, localAddress: string, username: string, password: string): Promise<number> {
  const authorization = `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;
  return new Promise((resolve, reject) => {
    const req = request({ host, port, localAddress, path: '/applications', headers: { authorization }, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

// Issue 23, finding 1: on a dual-stack listener every IPv4 client and ::1 shared one address bucket, so failures from one locked out all.
// An address is slowed rather than locked: with a step of a minute, its line is past the backlog after one attempt more.
test('on a dual-stack listener, failures from one IPv4 address slow that address only, not its neighbours nor ::1', async () => {
  const addressFailures = 5;
  const server = await startServer({
    env: {
      HOST: '::', BRUTE_FORCE_ADDRESS_FAILURE_FACTOR: String(addressFailures), BRUTE_FORCE_FAILURE_FACTOR: '0',
      BRUTE_FORCE_TARPIT_MS: '60000', BRUTE_FORCE_TARPIT_MAX_MS: '60000',
    },
  });
  servers.push(server);
  const { adminEmail, adminPassword } = await import('./helpers/server.js');
  for (let i = 0; i <= addressFailures; i++) {
    assert.equal(await basicCall('127.0.0.1', server.port, '127.0.0.2', `nobody-${i}@example.com`, 'wrong-password'), 401);
  }
  assert.equal(await basicCall('127.0.0.1', server.port, '127.0.0.2', adminEmail, adminPassword), 401, 'the guessing address is slowed past its backlog');
  assert.equal(await basicCall('127.0.0.1', server.port, '127.0.0.3', adminEmail, adminPassword), 200, 'a neighbour is not');
  assert.equal(await basicCall('127.0.0.1', server.port, '127.0.0.1', adminEmail, adminPassword), 200);
  assert.equal(await basicCall('::1', server.port, '::1', adminEmail, adminPassword), 200, 'nor is ::1');
});
