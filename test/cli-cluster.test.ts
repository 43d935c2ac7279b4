// authctl cluster init and status against a real nats-server: an embedded data directory moved into a stream serves the same Users from a cluster node.

import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { initMessages, stateOps } from '../src/cli/cluster.js';
import { loadReadOnly } from '../src/cli/datadir.js';
import { ApiKeySecrets } from '../src/auth/apikey-secrets.js';
import { serveNodeStatus } from '../src/cluster/node-status.js';
import { RejectedMessages } from '../src/cluster/rejected.js';
import { decodeMessage } from '../src/cluster/replica.js';
import { ClusterSeal, clusterSealSubkeyLabel } from '../src/cluster/seal.js';
import { State } from '../src/store/state.js';
import { authctl } from './helpers/authctl.js';
import { authenticate, baseApplicationId, createApplication, createGroup, createUser, defaultUserPassword } from './helpers/http-fixtures.js';
import type { UserFullJson } from './helpers/http-shapes.js';
import { freePorts, natsSkipReason, startNatsCluster, type NatsCluster } from './helpers/nats-cluster.js';
import { newServerDirs, ServerProcess, type ServerDirs } from './helpers/server.js';

/** Small, so that the Users below need several stream messages and init's splitting is exercised end to end. */
const natsPayloadBytesMax = 8 * 1024;
const usersMade = 40;
const skip = natsSkipReason();
let nats: NatsCluster | undefined;
let embedded: ServerDirs;
let node: ServerProcess | undefined;
let users: UserFullJson[] = [];
let baseApp = '';
const stream = 'clitest';

/** The same entity as served by two servers on different ports. */
const stripHosts = (v: unknown): unknown => JSON.parse(JSON.stringify(v).replace(/http:\/\/127\.0\.0\.1:\d+/g, ''));

/** The cluster's settings and its server key (the data directory's), as a node or an operator gives them. */
function clusterEnv(s = stream): Record<string, string> {
  return { CLUSTER_NATS_SERVERS: nats!.urls[0]!, CLUSTER_STREAM: s, KEY_FILE: embedded.keyFile };
}

interface StatusJson {
  stream: { name: string; messages: number; first_seq: number; last_seq: number; replicas: number; leader: string | null };
  nodes: { node: string; applied_seq: number; lag: number; readiness: string; version: string | null; started_at: string }[];
}

before(async () => {
  if (skip !== false) return;
  nats = await startNatsCluster({ servers: 1, maxPayloadBytes: natsPayloadBytesMax });
  // An embedded server makes the data directory, as an operator's would have been before moving to a cluster.
  const server = await ServerProcess.start();
  embedded = server.dirs;
  try {
    const api = server.api();
    baseApp = await baseApplicationId(api);
    const app = await createApplication(api, { custom_data: { tier: 'gold' } });
    const group = await createGroup(api, app.id);
    const org = await api.client.organizations.create({ name: 'Moved Ltd' });
    for (let i = 0; i < usersMade; i++) {
      users.push(await createUser(api, [baseApp, app.id], { groups: [group.id], organization: org.id, custom_data: { n: i, pad: 'x'.repeat(200) } }));
    }
    assert.equal(await server.stop(), 0);
  } catch (err) {
    await server.dispose();
    throw err;
  }
});

after(async () => {
  await node?.dispose();
  if (embedded !== undefined) rmSync(embedded.root, { recursive: true, force: true });
  await nats?.stop();
});

describe('authctl cluster', { skip }, () => {
  test('init splits the state into messages under the payload limit that replay to the same state', async () => {
    const state = await loadReadOnly(embedded.dataDir);
    const replayed = new State();
    let seq = 0;
    for (const message of initMessages(stateOps(state), 1, state.lastAt, 2048)) {
      assert.equal(message.seq, ++seq);
      assert.ok(message.payload.length <= 2048, `message ${message.seq} is ${message.payload.length} bytes`);
      for (const record of decodeMessage(message.seq, message.payload)) replayed.apply(record);
    }
    assert.ok(seq > 1, 'the state needs several messages of 2 KiB');
    assert.deepEqual(replayed.counts(), state.counts());
    assert.deepEqual(replayed.meta, state.meta);
    assert.deepEqual(replayed.user(users[7]!.id), state.user(users[7]!.id));
  });

  test('refuses a key that is not the data directory\'s, before touching the stream', async () => {
    const wrongKey = join(embedded.root, 'wrong.key');
    writeFileSync(wrongKey, randomBytes(32), { mode: 0o600 });
    const res = await authctl(['cluster', 'init', '--from', embedded.dataDir, '--key-file', wrongKey, '--replicas', '1'], { env: clusterEnv() });
    assert.equal(res.code, 1, res.stdout + res.stderr);
    assert.match(res.stderr, /was written with a key of fingerprint/);
    const status = await authctl(['cluster', 'status', '--nats', nats!.urls[0]!, '--stream', stream, '--key-file', embedded.keyFile]);
    assert.equal(status.code, 1);
    assert.match(status.stderr, /stream clitest does not exist/);
  });

  test('init moves the data directory into an empty stream; a cluster node serves the same Users', async () => {
    const res = await authctl(['cluster', 'init', '--from', embedded.dataDir, '--replicas', '1'], { env: clusterEnv() });
    assert.equal(res.code, 0, res.stdout + res.stderr);
    assert.match(res.stdout, new RegExp(`moved 2 organizations, 2 applications, 1 groups, ${usersMade + 1} users from .* into stream ${stream} as \\d+ messages`));
    const messages = Number(/as (\d+) messages/.exec(res.stdout)![1]);
    assert.ok(messages > 1, `${usersMade} Users of ~1 KiB need several ${natsPayloadBytesMax}-byte messages, got ${messages}`);

    // A new node: its own empty data directory, the data directory's key file.
    const dirs = { ...newServerDirs(), keyFile: embedded.keyFile };
    node = await ServerProcess.start({ dirs, env: { ...clusterEnv(), CLUSTER_REPLICAS: '1', NODE_ID: 'node-a' } });
    // init put the state in the bucket as the snapshot at its last message: the node loads it rather than replaying the puts.
    assert.ok(node.logLines().some((l) => l['msg'] === 'loaded the cluster\'s snapshot from its bucket'), 'the node started from init\'s snapshot');
    const api = node.api();
    for (const user of [users[0]!, users[usersMade - 1]!]) {
      const got = await api.client.users.get(user.id);
      assert.deepEqual(stripHosts(got), stripHosts(user));
      const auth = await authenticate(api, baseApp, 'username', user.email, defaultUserPassword);
      assert.equal(auth.authenticated, true, `${user.email} authenticates on the cluster node`);
    }
    assert.equal((await authenticate(api, baseApp, 'username', users[1]!.email, 'not-the-password')).authenticated, false);
  });

  test('init refuses a stream that holds any message', async () => {
    const res = await authctl(['cluster', 'init', '--from', embedded.dataDir, '--key-file', embedded.keyFile], { env: clusterEnv() });
    assert.equal(res.code, 1, res.stdout + res.stderr);
    assert.match(res.stderr, /stream clitest is not empty \(\d+ messages, last sequence \d+\)/);
  });

  test('status lists the stream and a node that answers, with its lag', async () => {
    const nc: NatsConnection = await connect({ servers: nats!.urls[0]! });
    const key = ApiKeySecrets.load({ keyFile: embedded.keyFile }).subkey(clusterSealSubkeyLabel);
    const status = serveNodeStatus(nc, stream, 'behind-node', () => ({
      node: 'ignored', applied_seq: 1, readiness: 'catching_up', version: '9.9.9', started_at: '2026-01-01T00:00:00.000Z',
    }), new ClusterSeal(key), new RejectedMessages({ warn: () => undefined }));
    try {
      const res = await authctl(['cluster', 'status', '--json'], { env: clusterEnv() });
      assert.equal(res.code, 0, res.stdout + res.stderr);
      const json = JSON.parse(res.stdout) as StatusJson;
      assert.equal(json.stream.name, stream);
      assert.equal(json.stream.first_seq, 1);
      assert.ok(json.stream.last_seq > 1);
      assert.equal(json.stream.messages, json.stream.last_seq);
      assert.equal(json.stream.replicas, 1);
      const behind = json.nodes.find((n) => n.node === 'behind-node');
      assert.deepEqual(behind, {
        node: 'behind-node', applied_seq: 1, lag: json.stream.last_seq - 1, readiness: 'catching_up', version: '9.9.9', started_at: '2026-01-01T00:00:00.000Z',
      });
      const text = await authctl(['cluster', 'status', '--nats', nats!.urls[0]!, '--stream', stream, '--key-file', embedded.keyFile]);
      assert.equal(text.code, 0, text.stdout + text.stderr);
      assert.match(text.stdout, new RegExp(`^stream ${stream} \\(subject ${stream}\\.log\\): ${json.stream.messages} messages`, 'm'));
      assert.match(text.stdout, /^NODE +APPLIED +LAG +READINESS +VERSION +STARTED$/m);
      assert.match(text.stdout, new RegExp(`^behind-node +1 +${json.stream.last_seq - 1} +catching_up +9\\.9\\.9 `, 'm'));
      // Issue 42: the answers are sealed under the cluster's key; under another they do not open, and are said so.
      const otherKey = join(embedded.root, 'other.key');
      writeFileSync(otherKey, randomBytes(32), { mode: 0o600 });
      const stranger = await authctl(['cluster', 'status', '--json', '--key-file', otherKey], { env: clusterEnv() });
      assert.equal(stranger.code, 0, stranger.stdout + stranger.stderr);
      const unread = JSON.parse(stranger.stdout) as StatusJson & { unreadable: number };
      assert.deepEqual(unread.nodes, []);
      assert.ok(unread.unreadable >= 1, stranger.stdout);
      const strangerText = await authctl(['cluster', 'status', '--key-file', otherKey], { env: clusterEnv() });
      assert.match(strangerText.stdout, /answers did not open under this server key/);
    } finally {
      status.stop();
      await nc.close();
    }
  });

  test('status lists a real cluster node with applied_seq equal to the stream\'s last sequence', async () => {
    const res = await authctl(['cluster', 'status', '--json'], { env: clusterEnv() });
    assert.equal(res.code, 0, res.stdout + res.stderr);
    const json = JSON.parse(res.stdout) as StatusJson;
    const a = json.nodes.find((n) => n.node === 'node-a');
    assert.ok(a !== undefined, `node-a answered: ${res.stdout}`);
    assert.equal(a.applied_seq, json.stream.last_seq);
    assert.equal(a.lag, 0);
    assert.equal(a.readiness, 'ready');
  });

  test('status without NATS servers is a usage error; unreachable servers and an unknown stream fail (without creating it)', async () => {
    const res = await authctl(['cluster', 'status']);
    assert.equal(res.code, 2);
    assert.match(res.stderr, /--nats is required/);
    const [closedPort] = await freePorts(1);
    const unreachable = await authctl(['cluster', 'status', '--nats', `nats://127.0.0.1:${closedPort}`], { env: { KEY_FILE: embedded.keyFile } });
    assert.equal(unreachable.code, 1, 'fails at once rather than waiting for a server');
    assert.match(unreachable.stderr, /cannot reach the stream authd on nats:\/\/127\.0\.0\.1:\d+/);
    for (let i = 0; i < 2; i++) {
      const missing = await authctl(['cluster', 'status'], { env: clusterEnv('nosuchstream') });
      assert.equal(missing.code, 1);
      assert.match(missing.stderr, /stream nosuchstream does not exist/);
    }
  });
});
