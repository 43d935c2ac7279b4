// Log injection: newlines, carriage returns, Unicode line separators, escape sequences and forged JSON in names, usernames, addresses, paths and headers never break a log line or forge another one.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { adminEmail, adminPassword, basicAuth, rawRequest, startServer } from './helpers/server.js';

const forged = '{"level":60,"msg":"audit","audit":"POST /users/user","forged":true}';
const payloads = [
  `evil\n${forged}`, `evil\r\n${forged}`, `evil\u2028${forged}`, `evil\u2029x`, 'evil\u001b[2J\u001b[31mred', `evil\u0000${forged}`, `"},${forged.slice(1)}`,
];

test('hostile text in every field that reaches the log leaves one well-formed JSON object per line, and forges none', async (t) => {
  const server = await startServer({ env: { LOG_LEVEL: 'trace' } });
  try {
    const admin = basicAuth(adminEmail, adminPassword);
    const post = (path: string, body: unknown, auth = admin): Promise<Response> => fetch(server.baseUrl + path, { method: 'POST', headers: { authorization: auth, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const app = ((await (await post('/applications/application', { name: 'injection target' })).json()) as { service: { result: { application: { id: string } } } }).service.result.application.id;
    let sent = 0;
    for (const p of payloads) {
      await post('/applications/application', { name: p, description: p, custom_data: { [p.slice(0, 10)]: p } });
      await post('/authenticate', { type: 'username', application: p, credential: { username: p, password: p }, ip_address: p.slice(0, 64) });
      await post('/authenticate', { type: 'apikey', application: app, credential: { username: p, password: p }, ip_address: p.slice(0, 64) });
      await post('/users/user', { email: `${p}@example.com`, password: 'long-enough-pw', name: p, applications: [app] });
      await fetch(`${server.baseUrl}/applications`, { headers: { authorization: basicAuth(p, p) } });
      await fetch(`${server.baseUrl}/users/search/${encodeURIComponent(p)}`, { headers: { authorization: admin } });
      await fetch(`${server.baseUrl}/${encodeURIComponent(p)}/x`, { headers: { authorization: admin } });
      sent += 7;
    }
    // Raw bytes where fetch would refuse: a CR/LF-free but hostile path and header.
    await rawRequest(server.port, `GET /applications/application/%0A%0D${encodeURIComponent(forged)} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: ${admin}\r\nContent-Type: ${'\u001b[31m'}`).catch(() => undefined);
    sent++;
    await new Promise((r) => setTimeout(r, 200));
    const stdout = server.output().split('\n').filter((l) => l !== '' && !l.startsWith('authd:'));
    let parsed = 0;
    for (const line of stdout) {
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch {
        assert.fail(`a log line is not JSON: ${JSON.stringify(line.slice(0, 200))}`);
      }
      assert.ok(typeof value === 'object' && value !== null && !Array.isArray(value), 'each line is one object');
      assert.equal((value as Record<string, unknown>)['forged'], undefined, `a forged field: ${line.slice(0, 300)}`);
      assert.ok(!/[\u2028\u2029\u001b]/.test(line), `a raw separator or escape in a line: ${JSON.stringify(line.slice(0, 200))}`);
      parsed++;
    }
    const requests = server.logLines().filter((l) => l['msg'] === 'request').length;
    assert.ok(requests >= sent, `every request logged on its own line (${requests} for ${sent} sent)`);
    t.diagnostic(`${sent} hostile requests; ${parsed} log lines, every one a single well-formed JSON object with no forged field`);
  } finally {
    await server.dispose();
  }
});
