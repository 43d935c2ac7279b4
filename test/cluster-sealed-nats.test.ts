// Issue 42, finding 1: a client that reaches the cluster's NATS without the server key can neither read the state, add a record, lock an account out, stop the nodes, nor replay what it captured.
//
// The attacker here is a NATS client with the nodes' own NATS user and password (NATS lets it read and publish
// everything the nodes do): it uses only what any such client has (the nats library, the project's public record
// encoding, node:crypto), never the nodes' server key. Real nats-server, real nodes as child processes.

import assert from 'node:assert/strict';
import { createCipheriv, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { argon2id } from 'hash-wasm';
import { jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { Objm } from '@nats-io/obj';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { ApiKeySecrets } from '../src/auth/apikey-secrets.js';
import type { LogRecord, User } from '../src/domain/entities.js';
import { encodeRecord, packr } from '../src/persist/codec.js';
import { classifyDir } from '../src/persist/layout.js';
import { readSnapshotChunks, writeSnapshot } from '../src/persist/snapshot.js';
import { NodeStorage } from '../src/persist/storage.js';
import { State } from '../src/store/state.js';
import { newEntityId } from '../src/store/ids.js';
import { authctl } from './helpers/authctl.js';
import { authenticate, baseApplicationId, createUser, defaultUserPassword } from './helpers/http-fixtures.js';
import { natsSkipReason, startNatsCluster, until, type NatsCluster } from './helpers/nats-cluster.js';
import { adminEmail, adminPassword, newServerDirs, ServerProcess, type Api, type ServerDirs } from './helpers/server.js';

const skip = natsSkipReason();
/** The NATS user every node and the attacker connect as: the server refuses anonymous clients. */
const natsUser = 'authd';
const natsPassword = randomBytes(12).toString('hex');
const natsCredentials = { CLUSTER_NATS_USER: natsUser, CLUSTER_NATS_PASSWORD: natsPassword };
const intruderEmail = 'intruder@example.com';
const intruderPassword = 'intruder-pass-7Yq!';

/** Nodes on one stream of a one-server NATS; the key file is the first node's. */
class Nodes {
  readonly nodes: ServerProcess[] = [];
  readonly stream = `sealed${randomBytes(4).toString('hex')}`;

  constructor(private readonly nats: NatsCluster) {}

  env(i: number, extra: Record<string, string> = {}): Record<string, string> {
    return { CLUSTER_NATS_SERVERS: this.nats.urls[0]!, CLUSTER_STREAM: this.stream, CLUSTER_REPLICAS: '1', NODE_ID: `node${i}`, ...natsCredentials, ...extra };
  }

  async start(i: number, extra: Record<string, string> = {}): Promise<ServerProcess> {
    const first = this.nodes[0];
    const dirs = first === undefined ? newServerDirs() : { ...newServerDirs(), keyFile: first.dirs.keyFile };
    const node = await ServerProcess.start({ dirs, env: this.env(i, extra) });
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

/** A metric's value on a node (0 when absent), read with the admin's credentials. */
async function metric(api: Api, line: string): Promise<number> {
  const res = await api.get('/metrics');
  assert.equal(res.status, 200, `GET /metrics with the admin's credentials: ${res.text}`);
  const text = res.text;
  const found = text.split('\n').find((l) => l.startsWith(`${line} `));
  return found === undefined ? 0 : Number(found.slice(line.length + 1));
}

/** Every message the stream holds, as raw bytes, by sequence. */
async function rawMessages(jsm: JetStreamManager, stream: string): Promise<Map<number, Uint8Array>> {
  const { first_seq: first, last_seq: last } = (await jsm.streams.info(stream)).state;
  const messages = new Map<number, Uint8Array>();
  for (let seq = first; seq <= last && seq > 0; seq++) {
    const m = await jsm.streams.getMessage(stream, { seq });
    if (m !== null) messages.set(seq, m.data);
  }
  return messages;
}

/** An admin User record as authd encodes it, by someone who only knows the ids any admin API reader sees. */
async function intruderUser(organization: string, application: string): Promise<User> {
  const now = Date.now() * 1000;
  const passwordHash = await argon2id({
    password: intruderPassword, salt: randomBytes(16), memorySize: 1024, iterations: 1, parallelism: 1, hashLength: 32, outputType: 'encoded',
  });
  return {
    id: newEntityId(), email: intruderEmail, name: 'Intruder', status: 'ENABLED', customData: null, passwordHash,
    organization, applications: [application], groups: [], apikeys: [], createdAt: now, modifiedAt: now,
  };
}

/** authd's seal (AES-256-GCM, its associated data), under a key the attacker picked: the right form, the wrong key. */
function sealUnderAnotherKey(plain: Uint8Array, context: string): Buffer {
  const nonce = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', randomBytes(32), nonce);
  cipher.setAAD(Buffer.from(context));
  const body = Buffer.concat([cipher.update(plain), cipher.final()]);
  return Buffer.concat([nonce, body, cipher.getAuthTag()]);
}

function includes(haystack: Uint8Array, needle: string): boolean {
  return Buffer.from(haystack).includes(Buffer.from(needle, 'utf8'));
}

describe('issue 42: a cluster only its nodes can write or read', { skip, timeout: 240_000 }, () => {
  let nats: NatsCluster;
  let nc: NatsConnection;
  before(async () => {
    nats = await startNatsCluster({
      servers: 1,
      extraConfig: `authorization { user: ${JSON.stringify(natsUser)}, password: ${JSON.stringify(natsPassword)} }`,
      clientOptions: { user: natsUser, pass: natsPassword },
    });
    nc = await connect({ servers: nats.urls[0]!, user: natsUser, pass: natsPassword });
  });
  after(async () => {
    await nc?.close();
    await nats?.stop();
  });

  /** Two nodes on a fresh stream, the attacker's JetStream handles, and the base Application. */
  async function cluster(): Promise<{ nodes: Nodes; app: string; jsm: JetStreamManager; js: ReturnType<typeof jetstream>; logSubject: string; failuresSubject: string }> {
    const nodes = new Nodes(nats);
    await nodes.start(0);
    await nodes.start(1);
    return {
      nodes, app: await baseApplicationId(nodes.api(0)), jsm: await jetstreamManager(nc), js: jetstream(nc),
      logSubject: `${nodes.stream}.log`, failuresSubject: `${nodes.stream}.failures`,
    };
  }

  /**
   * After an attack: both nodes pass every message the stream holds and keep running, the admin authenticates on
   * both, the next write is applied by both, and node 0 killed and started again (replaying the whole stream, the
   * attacker's messages included) serves it.
   */
  async function clusterGoesOn(nodes: Nodes, app: string, jsm: JetStreamManager): Promise<void> {
    const lastSeq = (await jsm.streams.info(nodes.stream)).state.last_seq;
    for (const i of [0, 1]) {
      await until(async () => nodes.nodes[i]!.running && (await metric(nodes.api(i), 'authd_log_last_seq')) >= lastSeq, 10_000, `node ${i} past the attacker's messages`);
    }
    for (const i of [0, 1]) {
      const api = nodes.api(i);
      assert.equal((await api.get('/applications')).status, 200, `node ${i}: the admin's Basic credentials work`);
      assert.equal((await authenticate(api, app, 'username', adminEmail, adminPassword)).authenticated, true, `node ${i}: the admin authenticates`);
    }
    const next = await nodes.api(1).post('/users/user', { email: `next-${randomBytes(4).toString('hex')}@example.com`, password: defaultUserPassword, applications: [app] });
    assert.equal(next.status, 200, next.text);
    const nextId = (next.json as { service: { result: { user: { id: string } } } }).service.result.user.id;
    assert.equal((await nodes.api(0).get(`/users/user/${nextId}?consistent=1`)).status, 200, 'the next write is applied on node 0');
    await nodes.nodes[0]!.kill();
    nodes.nodes[0] = await nodes.nodes[0]!.restart();
    assert.equal((await nodes.api(0).get(`/users/user/${nextId}`)).status, 200, 'node 0 started again and serves');
    assert.equal((await authenticate(nodes.api(0), app, 'username', adminEmail, adminPassword)).authenticated, true);
  }

  /**
   * Resolves once both nodes have handled every core NATS message the attacker published before: a status request
   * from the same connection reaches each node after them, and each answers it after its callbacks for them ran.
   */
  async function heardAll(nodes: Nodes): Promise<void> {
    await nc.flush();
    let answers = 0;
    for await (const answer of await nc.requestMany(`${nodes.stream}.status`, randomBytes(16), { strategy: 'count', maxMessages: 2, maxWait: 10_000 })) {
      if (answer.data.length > 0) answers++;
    }
    assert.equal(answers, 2, 'both nodes answered after the messages before');
  }

  test('(a) a `put user` joining the base Application, as authd encodes it, in clear or sealed under another key, is applied by no node', async () => {
    const { nodes, app, jsm, js, logSubject } = await cluster();
    try {
      const someone = await createUser(nodes.api(0), [app]);
      const intruder = await intruderUser(someone.organization!.id, app);
      // Decided for the sequence the stream is at (barriers of the nodes may land in between: then it is void as well).
      const next = async (): Promise<number> => (await jsm.streams.info(nodes.stream)).state.last_seq + 1;
      const forged = (seq: number): LogRecord => ({ seq, at: Date.now() * 1000, ops: [{ op: 'put', kind: 'user', value: intruder }] });
      const intruderKept = async (at: number, what: string): Promise<void> => {
        for (const i of [0, 1]) {
          const api = nodes.api(i);
          await until(async () => (await metric(api, 'authd_log_last_seq')) >= at, 10_000, `node ${i} past the record ${what}`);
          assert.equal((await api.get(`/users/user/${intruder.id}`)).status, 404, `node ${i}: no forged User (${what})`);
          assert.equal((await authenticate(api, app, 'username', intruderEmail, intruderPassword)).authenticated, false, `node ${i}: the forged User does not authenticate`);
          assert.equal((await api.as({ username: intruderEmail, password: intruderPassword }).get('/applications')).status, 401, `node ${i}: the forged User is no caller`);
        }
      };
      await intruderKept((await js.publish(logSubject, encodeRecord(forged(await next())))).seq, 'in clear');
      const sealedElsewhere = sealUnderAnotherKey(encodeRecord(forged(await next())), `authd-cluster-v1\0log\0${nodes.stream}\0${logSubject}`);
      const at = (await js.publish(logSubject, sealedElsewhere)).seq;
      await clusterGoesOn(nodes, app, jsm);
      await intruderKept(at, 'sealed under another key');
      for (const i of [0, 1]) assert.equal(await metric(nodes.api(i), 'authd_cluster_rejected_messages_total{kind="log"}'), 2, `node ${i} counted both`);
    } finally {
      await nodes.dispose();
    }
  });

  test('(b) 30 failures for the admin\'s account from its own address, in clear or sealed under another key, lock nobody out', async () => {
    const { nodes, app, jsm, failuresSubject } = await cluster();
    try {
      for (let i = 0; i < 30; i++) nc.publish(failuresSubject, packr.pack(['attacker', `u:${adminEmail}`, '127.0.0.1']));
      const context = `authd-cluster-v1\0failure\0${nodes.stream}\0${failuresSubject}`;
      for (let i = 0; i < 30; i++) nc.publish(failuresSubject, sealUnderAnotherKey(packr.pack(['0011223344556677', i + 1, Date.now(), `u:${adminEmail}`, '127.0.0.1']), context));
      await heardAll(nodes);
      await clusterGoesOn(nodes, app, jsm);
      assert.equal(await metric(nodes.api(1), 'authd_cluster_rejected_messages_total{kind="failure"}'), 60);
    } finally {
      await nodes.dispose();
    }
  });

  test('(c) seven bytes of garbage on the log stop no node, nor its next start', async () => {
    const { nodes, app, jsm, js, logSubject } = await cluster();
    try {
      await js.publish(logSubject, new Uint8Array([1, 2, 3, 4, 5, 6, 7]));
      await clusterGoesOn(nodes, app, jsm);
      for (const i of [0, 1]) assert.equal(await metric(nodes.api(i), 'authd_cluster_rejected_messages_total{kind="log"}'), 1, `node ${i}`);
    } finally {
      await nodes.dispose();
    }
  });

  test('(d) a captured log message and a captured failure, published again, are not applied again', async () => {
    const { nodes, app, jsm, js, logSubject, failuresSubject } = await cluster();
    try {
      // What the attacker captures of the nodes' own traffic: a failure node 0 shares, and the log message that made a User.
      const victim = await createUser(nodes.api(0), [app], { email: 'victim@example.com' });
      const failures = nc.subscribe(failuresSubject, { max: 1 });
      await nc.flush();
      assert.equal((await authenticate(nodes.api(0), app, 'username', victim.email, 'not-the-password')).authenticated, false);
      let capturedFailure: Uint8Array | undefined;
      for await (const m of failures) capturedFailure = m.data;
      const renamed = await createUser(nodes.api(0), [app], { name: 'First Name' });
      const capturedLog = (await jsm.streams.getMessage(nodes.stream, { last_by_subj: logSubject }))!.data;
      const rename = await nodes.api(0).put(`/users/user/${renamed.id}`, { name: 'Second Name' });
      assert.equal(rename.status, 200, rename.text);

      for (let i = 0; i < 30; i++) nc.publish(failuresSubject, capturedFailure!);
      await heardAll(nodes);
      // The failure counted once where it was heard (node 1), not 31 times; node 0 takes the copies for its own echo.
      assert.equal((await authenticate(nodes.api(1), app, 'username', victim.email, defaultUserPassword)).authenticated, true, 'the victim is not locked out by replays');
      assert.equal(await metric(nodes.api(1), 'authd_cluster_rejected_messages_total{kind="failure"}'), 30);
      assert.equal(await metric(nodes.api(0), 'authd_cluster_rejected_messages_total{kind="failure"}'), 0);
      await js.publish(logSubject, capturedLog);
      await clusterGoesOn(nodes, app, jsm);
      for (const i of [0, 1]) {
        const user = await nodes.api(i).get(`/users/user/${renamed.id}`);
        assert.match(user.text, /"name":"Second Name"/, `node ${i}: the User as it was made did not come back`);
        // It opens (it is the nodes' own), but its records were decided for the sequence where it first landed: void.
        assert.equal(await metric(nodes.api(i), 'authd_cluster_rejected_messages_total{kind="void"}'), 1, `node ${i}`);
      }
    } finally {
      await nodes.dispose();
    }
  });

  /** Node 0 alone with snapshots every 5 records, 12 Users made, and a snapshot of them in the bucket. */
  async function withSharedSnapshot(): Promise<{ nodes: Nodes; app: string; emails: string[] }> {
    const nodes = new Nodes(nats);
    const node0 = await nodes.start(0, { SNAPSHOT_EVERY_RECORDS: '5' });
    const app = await baseApplicationId(nodes.api(0));
    const emails: string[] = [adminEmail];
    for (let i = 0; i < 12; i++) emails.push((await createUser(nodes.api(0), [app], { email: `clear-${i}@example.com` })).email);
    await until(() => node0.logLines().some((l) => l['msg'] === 'snapshot shared with the cluster'), 10_000, 'a snapshot in the bucket');
    return { nodes, app, emails };
  }

  test('the stream\'s messages and the bucket\'s objects hold no email or password hash in clear', async () => {
    const { nodes, emails } = await withSharedSnapshot();
    try {
      const jsm = await jetstreamManager(nc);
      const bucket = await new Objm(nc).open(`${nodes.stream}-cluster`);
      const objects = new Map<string, Uint8Array>();
      for (const info of await bucket.list()) {
        const blob = info.deleted ? null : await bucket.getBlob(info.name);
        if (blob !== null) objects.set(info.name, blob);
      }
      assert.ok([...objects.keys()].some((name) => name.startsWith('snapshot-')), 'the bucket holds a snapshot');
      const messages = await rawMessages(jsm, nodes.stream);
      assert.ok(messages.size > 0);
      for (const [where, bytes] of [...[...messages].map(([seq, b]) => [`message ${seq}`, b] as const), ...objects]) {
        for (const clear of [...emails, '$argon2id$', 'passwordHash', 'apikeys']) assert.equal(includes(bytes, clear), false, `${where} holds ${clear} in clear`);
      }
    } finally {
      await nodes.dispose();
    }
  });

  test('a forged snapshot object, put in the bucket as the newest, is not loaded', async () => {
    const { nodes, app, emails } = await withSharedSnapshot();
    const scratch = mkdtempSync(join(tmpdir(), 'authd-forged-'));
    try {
      // The attacker's snapshot: node 0's state (as an old copy would give it) plus an admin of theirs, as the newest.
      const jsm = await jetstreamManager(nc);
      const storage = new NodeStorage();
      const dataDir = nodes.nodes[0]!.dirs.dataDir;
      const { snapshots } = classifyDir(dataDir, await storage.list(dataDir));
      const state = new State();
      const summary = await readSnapshotChunks(storage, snapshots[0]!.path, (kind, values) => state.loadSection(kind, values));
      state.finishLoad(summary.baseSeq);
      const intruder = await intruderUser(state.meta!.defaultOrganization, app);
      const forgedSeq = (await jsm.streams.info(nodes.stream)).state.last_seq + 1000;
      state.apply({ seq: forgedSeq, at: Date.now() * 1000, ops: [{ op: 'put', kind: 'user', value: intruder }] });
      const written = await writeSnapshot(storage, scratch, state.snapshotSource());
      const bucket = await new Objm(nc).open(`${nodes.stream}-cluster`);
      await bucket.putBlob({ name: `snapshot-${String(forgedSeq).padStart(16, '0')}.msgpack` }, readFileSync(written.path));

      const node1 = await nodes.start(1);
      const api1 = nodes.api(1);
      assert.equal((await api1.get(`/users/user/${intruder.id}`)).status, 404, 'the forged snapshot was not loaded');
      assert.equal((await authenticate(api1, app, 'username', intruderEmail, intruderPassword)).authenticated, false);
      assert.ok(node1.logLines().some((l) => l['msg'] === 'loaded the cluster\'s snapshot from its bucket'), 'the node started from the real snapshot');
      const list = await api1.get('/users?limit=100');
      assert.equal((list.json as { service: { result: { users: unknown[] } } }).service.result.users.length, emails.length);
      assert.equal(await metric(api1, 'authd_cluster_rejected_messages_total{kind="snapshot"}'), 1);
    } finally {
      rmSync(scratch, { recursive: true, force: true });
      await nodes.dispose();
    }
  });

  test('a node refuses to start on a cluster an earlier version wrote unsealed, and says where the migration is', async () => {
    // What an earlier version left: the key's fingerprint in clear in the bucket, records in clear in the stream.
    const dirs: ServerDirs = newServerDirs();
    mkdirSync(dirname(dirs.keyFile), { recursive: true, mode: 0o700 });
    writeFileSync(dirs.keyFile, randomBytes(32), { mode: 0o600 });
    const fingerprint = ApiKeySecrets.load({ keyFile: dirs.keyFile }).fingerprint();
    const jsm = await jetstreamManager(nc);
    const js = jetstream(nc);
    for (const [stream, withBucket] of [[`old${randomBytes(4).toString('hex')}`, true], [`old${randomBytes(4).toString('hex')}`, false]] as const) {
      await jsm.streams.add({ name: stream, subjects: [`${stream}.log`] });
      await js.publish(`${stream}.log`, encodeRecord({ seq: 1, at: Date.now() * 1000, ops: [] }));
      if (withBucket) await (await new Objm(nc).create(`${stream}-cluster`)).putBlob({ name: 'key-fingerprint' }, Buffer.from(fingerprint, 'latin1'));
      await assert.rejects(
        ServerProcess.start({ dirs, env: { CLUSTER_NATS_SERVERS: nats.urls[0]!, CLUSTER_STREAM: stream, CLUSTER_REPLICAS: '1', NODE_ID: 'upgraded', ...natsCredentials } }),
        /written by an earlier version that sealed nothing.*docs\/operations\.md/,
        withBucket ? 'an unsealed bucket' : 'an unsealed stream without a bucket',
      );
    }
    rmSync(dirs.root, { recursive: true, force: true });
  });

  test('an existing cluster moves to sealed messages: its node\'s data directory, stopped, goes into a new stream with cluster init', async () => {
    const old = new Nodes(nats);
    let moved: ServerProcess | undefined;
    try {
      const node = await old.start(0);
      const app = await baseApplicationId(old.api(0));
      const users = [];
      for (let i = 0; i < 5; i++) users.push(await createUser(old.api(0), [app]));
      assert.equal(await node.stop(), 0);
      // A cluster node's data directory: snapshots named by stream sequence, no write-ahead log.
      const newStream = `${old.stream}new`;
      const init = await authctl(['cluster', 'init', '--from', node.dirs.dataDir, '--key-file', node.dirs.keyFile, '--nats', nats.urls[0]!, '--stream', newStream, '--replicas', '1'], { env: natsCredentials });
      assert.equal(init.code, 0, init.stdout + init.stderr);
      assert.match(init.stdout, new RegExp(`moved 1 organizations, 1 applications, 0 groups, 6 users from .* into stream ${newStream}`));
      moved = await ServerProcess.start({
        dirs: { ...newServerDirs(), keyFile: node.dirs.keyFile },
        env: { CLUSTER_NATS_SERVERS: nats.urls[0]!, CLUSTER_STREAM: newStream, CLUSTER_REPLICAS: '1', NODE_ID: 'moved', ...natsCredentials },
      });
      const api = moved.api();
      assert.equal((await authenticate(api, app, 'username', adminEmail, adminPassword)).authenticated, true);
      for (const user of users) assert.equal((await authenticate(api, app, 'username', user.email, defaultUserPassword)).authenticated, true, user.email);
      const status = await authctl(['cluster', 'status', '--json', '--nats', nats.urls[0]!, '--stream', newStream, '--key-file', node.dirs.keyFile], { env: natsCredentials });
      assert.equal(status.code, 0, status.stdout + status.stderr);
      assert.deepEqual((JSON.parse(status.stdout) as { nodes: { node: string }[] }).nodes.map((n) => n.node), ['moved']);
    } finally {
      await moved?.dispose();
      await old.dispose();
    }
  });
});
