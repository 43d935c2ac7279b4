// Cluster mode's settings: off unless CLUSTER_NATS_SERVERS is set, defaults, and clear refusals of bad values.

import assert from 'node:assert/strict';
import { hostname } from 'node:os';
import { test } from 'node:test';
import { ConfigError, loadConfig } from '../src/config/config.js';

test('without CLUSTER_NATS_SERVERS the embedded log is used', () => {
  assert.equal(loadConfig({}, []).cluster, undefined);
  assert.equal(loadConfig({ CLUSTER_NATS_SERVERS: '' }, []).cluster, undefined);
});

test('servers are split on commas; stream, replicas and node id have defaults, and flags work too', () => {
  // Servers on other machines want a NATS credential (test/config-nats-auth.test.ts).
  const c = loadConfig({ CLUSTER_NATS_SERVERS: 'nats://10.0.0.1:4222, nats://10.0.0.2:4222,10.0.0.3:4222', CLUSTER_NATS_CREDS: '/etc/authd/nats.creds' }, [])!.cluster!;
  assert.deepEqual(c.servers, ['nats://10.0.0.1:4222', 'nats://10.0.0.2:4222', '10.0.0.3:4222']);
  assert.equal(c.stream, 'authd');
  assert.equal(c.replicas, 3);
  assert.equal(c.nodeId, hostname());
  const f = loadConfig({}, ['--cluster-nats-servers', 'nats://127.0.0.1:4222', '--cluster-stream=users', '--cluster-replicas', '1', '--node-id', 'a-1'])!.cluster!;
  assert.deepEqual({ ...f, servers: [...f.servers] }, { servers: ['nats://127.0.0.1:4222'], stream: 'users', replicas: 1, nodeId: 'a-1', nats: { credential: { kind: 'none' }, tls: undefined } });
});

test('bad cluster settings are refused, naming the setting', () => {
  const bad: [Record<string, string>, RegExp][] = [
    [{ CLUSTER_NATS_SERVERS: 'http://10.0.0.1:4222' }, /CLUSTER_NATS_SERVERS: "http:\/\/10.0.0.1:4222" is not a NATS URL/],
    [{ CLUSTER_NATS_SERVERS: ' , ' }, /CLUSTER_NATS_SERVERS lists no server/],
    [{ CLUSTER_NATS_SERVERS: 'nats://a:1', CLUSTER_STREAM: 'a.b' }, /CLUSTER_STREAM must be/],
    [{ CLUSTER_NATS_SERVERS: 'nats://a:1', CLUSTER_REPLICAS: '7' }, /CLUSTER_REPLICAS must be an integer in 1..5/],
    [{ CLUSTER_NATS_SERVERS: 'nats://a:1', NODE_ID: 'a b' }, /NODE_ID must be/],
  ];
  for (const [env, message] of bad) assert.throws(() => loadConfig(env, []), (err: unknown) => err instanceof ConfigError && message.test(err.message), JSON.stringify(env));
});
