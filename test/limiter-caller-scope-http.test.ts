// Over real HTTP: an `ip_address` counts only within the caller that named it, so a caller of POST /authenticate cannot reach the brute-force counters or the trust of the admin API's Basic callers.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { baseApplicationId, createUser, defaultUserPassword } from './helpers/http-fixtures.js';
import { adminEmail, adminPassword, startServer, type Api, type ServerProcess } from './helpers/server.js';

let server: ServerProcess;
let api: Api;

before(async () => {
  // Five failures lock an account; no tarpit, so the test does not wait on it.
  server = await startServer({ env: { BRUTE_FORCE_FAILURE_FACTOR: '5', BRUTE_FORCE_TARPIT_MS: '0' } });
  api = server.api();
});

after(async () => {
  await server?.dispose();
});

// Issue 42, finding 2: a caller with only the authenticator role named the admin's address and took its trusted pair's exemption away.
test('issue 42: an authenticator-role caller that sprays the admin\'s account, then names the admin\'s address (or none), leaves the admin\'s Basic credentials working', async () => {
  // The admin's pair (admin, 127.0.0.1) succeeds: trusted.
  assert.equal((await api.get('/applications')).status, 200);
  const base = await baseApplicationId(api);
  const attacker = await createUser(api, [base], { roles: ['authenticator'] });
  const asAttacker = api.as({ username: attacker.email, password: defaultUserPassword });
  const guess = async (i: number, ipAddress: string | undefined): Promise<boolean> => {
    const body = { type: 'username', application: base, credential: { username: adminEmail, password: `wrong-${i}` }, ...(ipAddress === undefined ? {} : { ip_address: ipAddress }) };
    const res = await asAttacker.post('/authenticate', body);
    assert.equal(res.status, 200);
    return (res.json as { service: { result: { authenticated: boolean } } }).service.result.authenticated;
  };
  for (let i = 0; i < 5; i++) assert.equal(await guess(i, `198.51.100.${i}`), false);
  const fromElsewhere = await asAttacker.post('/authenticate', { type: 'username', application: base, credential: { username: adminEmail, password: adminPassword }, ip_address: '198.51.100.200' });
  assert.equal((fromElsewhere.json as { service: { result: { authenticated: boolean } } }).service.result.authenticated, false, 'the admin\'s account is locked');
  // Five more failures, were they counted on the admin's own pair, would end its exemption.
  for (let i = 0; i < 3; i++) assert.equal(await guess(10 + i, '127.0.0.1'), false);
  for (let i = 0; i < 3; i++) assert.equal(await guess(20 + i, undefined), false, 'no ip_address: the TCP peer, 127.0.0.1, within the caller\'s own scope');
  assert.equal((await api.get('/applications')).status, 200, 'the admin\'s correct Basic credentials still pass from its own address');
  const lines = await server.auditLines();
  const outcomes = lines.filter((l) => l['audit'] === 'authenticate' && l['caller'] === attacker.id).map((l) => l['outcome']);
  assert.deepEqual(outcomes, [...Array<string>(5).fill('failure'), ...Array<string>(7).fill('locked')], 'the guesses at the admin\'s address met the lockout: no exemption of the admin\'s');
});
