// A pair that succeeded before a clean restart stays trusted after it: the real server saves and reads its trusted pairs file.

import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { adminEmail, adminPassword, newServerDirs, startServer, type ServerProcess } from './helpers/server.js';

const servers: ServerProcess[] = [];
after(async () => {
  for (const server of servers) await server.kill().catch(() => undefined);
});

/** GET /applications with Basic credentials from `localAddress`: the status. */
function basicCall(port: number, localAddress: string, username: string, password: string): Promise<number> {
  const authorization = `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, localAddress, path: '/applications', headers: { authorization }, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

// Issue 23, part 3: the trusted (recently successful) pair was lost on restart.
test('an admin trusted at its address before a restart gets through a lockout of its account after it', async () => {
  const dirs = newServerDirs();
  const env = { BRUTE_FORCE_FAILURE_FACTOR: '3', BRUTE_FORCE_TARPIT_MS: '0' };
  const first = await startServer({ dirs, env });
  servers.push(first);
  assert.equal(await basicCall(first.port, '127.0.0.2', adminEmail, adminPassword), 200);
  assert.equal(await first.stop(), 0);
  assert.equal(statSync(join(dirs.dataDir, 'trusted-pairs')).mode & 0o777, 0o600);

  const second = await startServer({ dirs, env });
  servers.push(second);
  for (let i = 0; i < 3; i++) assert.equal(await basicCall(second.port, '127.0.0.3', adminEmail, `wrong-${i}`), 401);
  assert.equal(await basicCall(second.port, '127.0.0.4', adminEmail, adminPassword), 401, 'the account is locked');
  assert.equal(await basicCall(second.port, '127.0.0.2', adminEmail, adminPassword), 200, 'but not for the pair trusted before the restart');
});
