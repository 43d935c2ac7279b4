// Cluster mode against real servers: three nats-server processes with JetStream and service nodes as child processes.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { randomBytes } from 'node:crypto';
import { natsSkipReason, startNatsCluster, until, type NatsCluster } from './helpers/nats-cluster.js';
import { newServerDirs, ServerProcess, type Api, type HttpResult } from './helpers/server.js';
import { emptyCrashTotals, formatCrashTotals, runCrashLoop } from './helpers/fault-crash-loop.js';
import { baseApplicationId, defaultUserPassword } from './helpers/http-fixtures.js';

const skip = natsSkipReason();

/** Starts service nodes on one stream of the NATS cluster; node i's data directory is its own, the key file is shared. */
class Nodes {
  readonly nodes: ServerProcess[] = [];
  readonly stream = `t${randomBytes(4).toString('hex')}`;

  constructor(private readonly nats: NatsCluster) {}

  async start(i: number, env: Record<string, string> = {}): Promise<ServerProcess> {
    const first = this.nodes[0];
    const dirs = this.nodes[i]?.dirs ?? (first === undefined ? newServerDirs() : { ...newServerDirs(), keyFile: first.dirs.keyFile });
    const node = await ServerProcess.start({
      dirs,
      env: { CLUSTER_NATS_SERVERS: this.nats.urls.join(','), CLUSTER_STREAM: this.stream, CLUSTER_REPLICAS: '3', NODE_ID: `node${i}`, ...env },
    });
    this.nodes[i] = node;
    return node;
  }

  api(i: number): Api {
    return this.nodes[i]!.api();
  }

  async dispose(): Promise<void> {
    for (const node of this.nodes) await node?.dispose();
  }
}

/** The emails of the Users a node holds, read with strong consistency. */
async function emailsOn(api: Api): Promise<string[]> {
  let list: HttpResult | undefined;
  // A 503 says to retry: the node could not give a strong read yet (NATS electing a leader after a restart).
  await until(async () => (list = await api.get('/users?consistent=1&limit=1000')).status !== 503, 30_000, 'a strongly consistent read');
  assert.equal(list!.status, 200, list!.text);
  return (list!.json as { service: { result: { users: { email: string }[] } } }).service.result.users.map((u) => u.email);
}

/** Two nodes on a fresh stream and the base Application's id. */
async function twoNodes(nats: NatsCluster, env: Record<string, string> = {}): Promise<{ nodes: Nodes; app: string }> {
  const nodes = new Nodes(nats);
  await nodes.start(0, env);
  await nodes.start(1, env);
  return { nodes, app: await baseApplicationId(nodes.api(0)) };
}

function userBody(email: string, app: string): Record<string, unknown> {
  return { email, password: defaultUserPassword, name: 'Cluster User', applications: [app] };
}

describe('cluster mode on NATS JetStream', { skip }, () => {
  let nats: NatsCluster;
  before(async () => {
    nats = await startNatsCluster({ servers: 3 });
  });
  after(async () => {
    await nats?.stop();
  });

  test('a write on one node is read on another: at once with strong consistency, and eventually without', async () => {
    const { nodes, app } = await twoNodes(nats);
    try {
      const created = await nodes.api(0).post('/users/user', userBody('reads@example.com', app));
      assert.equal(created.status, 200, created.text);
      const id = (created.json as { service: { result: { user: { id: string } } } }).service.result.user.id;
      // Strong: the node applies what the stream held when the read arrived before answering.
      const strong = await nodes.api(1).get(`/users/user/${id}`, { headers: { 'X-Consistency': 'strong' } });
      assert.equal(strong.status, 200, strong.text);
      const query = await nodes.api(1).get(`/users/user/${id}?consistent=1`);
      assert.equal(query.status, 200, query.text);
      // A write on node 1 read on node 0, without asking for consistency: it arrives within the replication delay.
      const other = await nodes.api(1).post('/users/user', userBody('reads-2@example.com', app));
      assert.equal(other.status, 200, other.text);
      const otherId = (other.json as { service: { result: { user: { id: string } } } }).service.result.user.id;
      await until(async () => (await nodes.api(0).get(`/users/user/${otherId}`)).status === 200, 5_000, 'the write on node 1 read on node 0');
      const ready = await nodes.api(1).get('/health/ready', { credentials: null });
      assert.equal(ready.status, 200);
      assert.match(ready.text, /"status":"ready"/);
    } finally {
      await nodes.dispose();
    }
  });

  test('access tokens: the nodes publish one set of keys; a token one node issues is active on the other, and a rotation reaches both', async () => {
    const { nodes } = await twoNodes(nats, { PUBLIC_URL: 'https://auth.cluster.test' });
    try {
      const jwksOf = async (i: number): Promise<{ keys: { kid: string }[] }> => (await nodes.api(i).get('/.well-known/jwks.json', { credentials: null })).json as { keys: { kid: string }[] };
      const keys = await jwksOf(0);
      assert.equal(keys.keys.length, 2);
      assert.deepEqual(await jwksOf(1), keys, 'the second node found the first node\'s keys');
      const created = await nodes.api(0).post('/applications/application', { name: 'cluster-tokens', tokens: { enabled: true } });
      assert.equal(created.status, 200, created.text);
      const appId = (created.json as { service: { result: { application: { id: string } } } }).service.result.application.id;
      assert.equal((await nodes.api(0).post('/users/user', userBody('tokens@example.com', appId))).status, 200);
      let token: string | undefined;
      await until(async () => {
        const res = await nodes.api(1).post('/authenticate', { type: 'username', application: appId, credential: { username: 'tokens@example.com', password: defaultUserPassword } });
        token = (res.json as { service?: { result?: { access_token?: string } } }).service?.result?.access_token;
        return token !== undefined;
      }, 5_000, 'a token from node 1 for a User made on node 0');
      const active = await nodes.api(0).post('/tokens/introspect', { token });
      assert.match(active.text, /"active":true/);
      assert.equal((await nodes.api(0).post('/admin/signing-keys/rotate')).status, 200);
      await until(async () => (await jwksOf(1)).keys.length === 4, 5_000, 'the rotation on node 0 seen by node 1');
    } finally {
      await nodes.dispose();
    }
  });

  test('the same email created on two nodes at the same time: exactly one succeeds, the other gets 409', async () => {
    const { nodes, app } = await twoNodes(nats);
    try {
      for (let round = 0; round < 10; round++) {
        const email = `same-${round}@example.com`;
        const answers = await Promise.all([0, 1].map((i) => nodes.api(i).post('/users/user', userBody(email, app))));
        const statuses = answers.map((a) => a.status).sort();
        assert.deepEqual(statuses, [200, 409], answers.map((a) => a.text).join('\n'));
      }
      // Both nodes hold each email once.
      for (const i of [0, 1]) {
        const emails = (await emailsOn(nodes.api(i))).filter((e) => e.startsWith('same-'));
        assert.equal(emails.length, 10);
        assert.equal(new Set(emails).size, 10);
      }
    } finally {
      await nodes.dispose();
    }
  });

  test('kill -9 of a node during concurrent writes: every acknowledged write is on the survivor and on the restarted node', async () => {
    const { nodes, app } = await twoNodes(nats);
    try {
      const acknowledged: string[] = [];
      let stop = false;
      const writer = async (i: number, prefix: string): Promise<void> => {
        for (let n = 0; !stop; n++) {
          const email = `${prefix}-${n}@example.com`;
          const res = await nodes.api(i).post('/users/user', userBody(email, app)).catch(() => undefined);
          if (res?.status === 200) acknowledged.push(email);
          else if (i === 0) return;
        }
      };
      const writers = [writer(0, 'w0a'), writer(0, 'w0b'), writer(1, 'w1a'), writer(1, 'w1b')];
      await until(() => acknowledged.length >= 40, 20_000, '40 acknowledged writes');
      await nodes.nodes[0]!.kill();
      await new Promise((resolve) => setTimeout(resolve, 300));
      stop = true;
      await Promise.all(writers);
      const restarted = await nodes.nodes[0]!.restart();
      nodes.nodes[0] = restarted;
      for (const i of [1, 0]) {
        const held = new Set(await emailsOn(nodes.api(i)));
        const missing = acknowledged.filter((e) => !held.has(e));
        assert.deepEqual(missing, [], `node ${i} lacks acknowledged writes`);
      }
    } finally {
      await nodes.dispose();
    }
  });

  test('kill -9 of one of three NATS servers during writes: writes go on, nothing acknowledged is lost; with two down writes answer 503 and authentications go on', async () => {
    const { nodes, app } = await twoNodes(nats);
    try {
      const acknowledged: string[] = [];
      const refused: number[] = [];
      let stop = false;
      const writer = async (i: number, prefix: string): Promise<void> => {
        for (let n = 0; !stop; n++) {
          const res = await nodes.api(i).post('/users/user', userBody(`${prefix}-${n}@example.com`, app));
          if (res.status === 200) acknowledged.push(`${prefix}-${n}@example.com`);
          else {
            assert.equal(res.status, 503, res.text);
            refused.push(res.status);
          }
        }
      };
      const writers = [writer(0, 'k0'), writer(1, 'k1')];
      await until(() => acknowledged.length >= 20, 20_000, '20 acknowledged writes');
      await nats.kill(0);
      const afterOne = acknowledged.length;
      // JetStream elects new leaders among the two left: writes are acknowledged again.
      await until(() => acknowledged.length >= afterOne + 20, 30_000, '20 more writes after a NATS server died');
      stop = true;
      await Promise.all(writers);

      await nats.kill(1);
      // One server of three: no quorum. Writes are refused with Retry-After; an authentication is answered from memory.
      const refusedWrite = await nodes.api(0).post('/users/user', userBody('no-quorum@example.com', app));
      assert.equal(refusedWrite.status, 503, refusedWrite.text);
      assert.ok(refusedWrite.headers.get('retry-after') !== null);
      const login = await nodes.api(1).post('/authenticate', { type: 'username', application: app, credential: { username: acknowledged[0]!, password: defaultUserPassword } });
      assert.equal(login.status, 200, login.text);
      assert.match(login.text, /"authenticated":true/);
      // Issue 43: still connected to the one server left, but no leader can give a barrier: not ready, writes cannot commit.
      const noQuorum = await nodes.api(0).get('/health/ready', { credentials: null });
      assert.equal(noQuorum.status, 503, noQuorum.text);
      assert.match(noQuorum.text, /"degraded"/);

      await nats.restart(0);
      await nats.restart(1);
      await until(async () => (await nodes.api(0).post('/users/user', userBody(`back-${Date.now()}@example.com`, app))).status === 200, 30_000, 'a write once the servers are back');
      await until(async () => (await nodes.api(0).get('/health/ready', { credentials: null })).status === 200, 10_000, 'ready again once writes commit');
      for (const i of [0, 1]) {
        const held = new Set(await emailsOn(nodes.api(i)));
        assert.deepEqual(acknowledged.filter((e) => !held.has(e)), [], `node ${i} lacks acknowledged writes`);
      }
    } finally {
      await nodes.dispose();
    }
  });

  test('a new node joins from the cluster\'s snapshot and the stream\'s tail', async () => {
    const nodes = new Nodes(nats);
    try {
      await nodes.start(0, { SNAPSHOT_EVERY_RECORDS: '10' });
      const app = await baseApplicationId(nodes.api(0));
      for (let n = 0; n < 35; n++) assert.equal((await nodes.api(0).post('/users/user', userBody(`join-${n}@example.com`, app))).status, 200);
      // The stream was purged below the bucket's oldest snapshot: the newcomer cannot replay from the start.
      await until(() => nodes.nodes[0]!.logLines().some((l) => typeof l['purgedBelow'] === 'number'), 10_000, 'a purge of the stream');
      const joined = await nodes.start(1);
      assert.ok(joined.logLines().some((l) => l['msg'] === 'loaded the cluster\'s snapshot from its bucket'), 'started from the bucket');
      const list = await nodes.api(1).get('/users?limit=1000');
      const emails = (list.json as { service: { result: { users: { email: string }[] } } }).service.result.users.map((u) => u.email);
      assert.equal(emails.filter((e) => e.startsWith('join-')).length, 35);
    } finally {
      await nodes.dispose();
    }
  });

  test('failures spread over two nodes lock an account at the same count as on one', async () => {
    const nodes = new Nodes(nats);
    const limits = { BRUTE_FORCE_FAILURE_FACTOR: '4', BRUTE_FORCE_TARPIT_MS: '0', BRUTE_FORCE_ADDRESS_FAILURE_FACTOR: '0' };
    try {
      await nodes.start(0, limits);
      await nodes.start(1, limits);
      const app = await baseApplicationId(nodes.api(0));
      assert.equal((await nodes.api(0).post('/users/user', userBody('guessed@example.com', app))).status, 200);
      const attempt = (i: number, password: string, address: string) => nodes.api(i).post('/authenticate', {
        type: 'username', application: app, credential: { username: 'guessed@example.com', password }, ip_address: address,
      });
      const settle = () => new Promise((resolve) => setTimeout(resolve, 300));
      for (let n = 0; n < 3; n++) assert.match((await attempt(n % 2, `wrong-${n}-password`, `10.9.0.${n}`)).text, /"authenticated":false/);
      await settle();
      // Three failures of four: both nodes still let the owner in (from an address that never failed).
      await until(async () => (await nodes.api(1).get('/users?consistent=1&limit=1')).status === 200, 5_000, 'node 1 caught up');
      assert.match((await attempt(1, defaultUserPassword, '10.8.0.1')).text, /"authenticated":true/);
      assert.match((await attempt(0, 'wrong-3-password', '10.9.0.3')).text, /"authenticated":false/);
      await settle();
      // The fourth failure, on node 0, locks the account on node 1 too.
      for (const i of [0, 1]) assert.match((await attempt(i, defaultUserPassword, `10.8.1.${i}`)).text, /"authenticated":false/, `node ${i} locked`);
    } finally {
      await nodes.dispose();
    }
  });

  test('a crash loop in cluster mode: every acknowledged mutation survives kill -9 and restart', async (t) => {
    const seed = Number(process.env['CRASH_SEED'] ?? 2525);
    t.diagnostic(`seed ${seed}`);
    const totals = emptyCrashTotals();
    const stream = `crash${randomBytes(4).toString('hex')}`;
    // Kill points are the embedded log's; here every kill is at a random moment. Snapshots every 20 records also
    // exercise the bucket and the stream's purge below the kept snapshots.
    await runCrashLoop({ cycles: 6, seed, pointShare: 0, env: { CLUSTER_NATS_SERVERS: nats.urls.join(','), CLUSTER_STREAM: stream, CLUSTER_REPLICAS: '3', NODE_ID: 'crash' } }, totals);
    for (const line of formatCrashTotals(totals).split('\n')) t.diagnostic(line);
    assert.equal(totals.lostAcknowledged, 0);
    assert.ok(totals.acknowledged > 60, 'each cycle got real work done');
  });

  test('NATS gone: plain reads go on, strong reads answer 503, readiness says degraded, SIGTERM stops cleanly with the snapshot written', async () => {
    const lone = await startNatsCluster({ servers: 1 });
    let node: ServerProcess | undefined;
    try {
      node = await ServerProcess.start({ env: { CLUSTER_NATS_SERVERS: lone.urls[0]!, CLUSTER_STREAM: 'gone', CLUSTER_REPLICAS: '1', NODE_ID: 'gone' } });
      const app = await baseApplicationId(node.api());
      assert.equal((await node.api().post('/users/user', userBody('before-nats-died@example.com', app))).status, 200);
      await lone.kill(0);
      // Reads and readiness without NATS: a plain read is answered from memory, a strong one cannot be, readiness says so.
      const api = node.api();
      await until(async () => (await api.get('/health/ready', { credentials: null })).text.includes('"degraded"'), 10_000, 'readiness degraded');
      assert.equal((await api.get('/users?limit=5')).status, 200);
      const strong = await api.get('/users?limit=5', { headers: { 'X-Consistency': 'strong' } });
      assert.equal(strong.status, 503, strong.text);
      assert.ok(strong.headers.get('retry-after') !== null);
      assert.equal(await node.stop(), 0, node.output().slice(-2000));
      assert.ok(node.logLines().some((l) => l['msg'] === 'snapshot written'), 'the final snapshot is local and needs no NATS');
    } finally {
      await node?.dispose();
      await lone.stop();
    }
  });

  test('a node whose server key is not the cluster\'s refuses to start, saying so', async () => {
    const nodes = new Nodes(nats);
    try {
      await nodes.start(0);
      const stranger = newServerDirs();
      await assert.rejects(
        ServerProcess.start({ dirs: stranger, env: { CLUSTER_NATS_SERVERS: nats.urls.join(','), CLUSTER_STREAM: nodes.stream, NODE_ID: 'stranger' } }),
        /server key .* is not the cluster's/,
      );
    } finally {
      await nodes.dispose();
    }
  });
});
