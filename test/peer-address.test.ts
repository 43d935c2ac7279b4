// The TCP peer's address as the audit trail records it: each connection's own, whichever peers came before it (the adapter keeps the texts by binary address), on an IPv4 and on a dual-stack listener.

import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, test } from 'node:test';
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

test('a dual-stack listener records IPv6 peers and IPv4-mapped peers as uWS writes them', async () => {
  const server = await startServer({ env: { HOST: '::' } });
  servers.push(server);
  const addresses = await addressesOf(server, [['::1', '::1'], ['127.0.0.1', '127.0.0.2'], ['::1', '::1'], ['127.0.0.1', '127.0.0.1'], ['127.0.0.1', '127.0.0.2']]);
  assert.deepEqual(addresses, [
    '0000:0000:0000:0000:0000:0000:0000:0001',
    '0000:0000:0000:0000:0000:ffff:7f00:0002',
    '0000:0000:0000:0000:0000:0000:0000:0001',
    '0000:0000:0000:0000:0000:ffff:7f00:0001',
    '0000:0000:0000:0000:0000:ffff:7f00:0002',
  ]);
});
