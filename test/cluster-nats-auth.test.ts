// Cluster mode on NATS servers that require credentials (issue 42): a node connects with each kind, an anonymous client and a node without credentials are refused (with a clear message, at once), and the server configuration in docs/cluster.md serves a node and `authctl cluster status` as written.

import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { connect, credsAuthenticator, nkeyAuthenticator, type NodeConnectionOptions } from '@nats-io/transport-node';
import { StreamLog } from '../src/cluster/stream-log.js';
import { loadConfig, type ClusterConfig } from '../src/config/config.js';
import { authctl } from './helpers/authctl.js';
import { liveRoots } from './helpers/children.js';
import { baseApplicationId, createUser } from './helpers/http-fixtures.js';
import { makeNkeyUser, makeOperatorMode, makeTlsFiles, type NkeyUser, type OperatorMode, type TlsFiles } from './helpers/nats-credentials.js';
import { natsSkipReason, retryUntil, startNatsCluster, type NatsCluster } from './helpers/nats-cluster.js';
import { startServer, type ServerProcess } from './helpers/server.js';

const skip = natsSkipReason();
/** Characters a URL must percent-encode, so that the userinfo test decodes them. */
const password = 'pw@with:odd/chars%!';
const token = 'token-8c1f2e0b47d9';
/** The user docs/cluster.md configures, and its password, in the file the configuration includes. */
const docsUser = 'authd';
const docsPassword = 'docs-password-5e1a';

let dir: string;
let tls: TlsFiles;
let nkeyUser: NkeyUser;
let operator: OperatorMode;
/** accounts {} with a user and password and an nkey user; a token server; an operator-mode server; the docs' configuration. */
let users: NatsCluster | undefined;
let tokens: NatsCluster | undefined;
let operatorServer: NatsCluster | undefined;
let docs: NatsCluster | undefined;
const nodes: ServerProcess[] = [];
let streams = 0;

/** The fenced block after the marker in docs/cluster.md, with its addresses and paths pointed at the test's. */
function docsConfig(server: { clientPort: number; storeDir: string; dir: string }): string {
  const doc = readFileSync(new URL('../../docs/cluster.md', import.meta.url), 'utf8');
  const block = /<!-- nats-server\.conf[^\n]*-->\n```conf\n([\s\S]*?)\n```/.exec(doc);
  assert.ok(block !== null, 'docs/cluster.md has the marked nats-server.conf block');
  const replacements: [string, string][] = [
    ['listen: 0.0.0.0:4222', `listen: 127.0.0.1:${server.clientPort}`],
    ['/var/lib/nats/jetstream', JSON.stringify(server.storeDir)],
    ['/etc/nats/tls/server.crt', JSON.stringify(tls.serverCert)],
    ['/etc/nats/tls/server.key', JSON.stringify(tls.serverKey)],
    ['/etc/nats/tls/ca.crt', JSON.stringify(tls.caCert)],
  ];
  // The one file the configuration includes, as the comment above its include says to write it.
  writeFileSync(join(server.dir, 'authd-password.conf'), `AUTHD_NATS_PASSWORD: ${JSON.stringify(docsPassword)}\n`, { mode: 0o600 });
  let config = block[1]!;
  for (const [from, to] of replacements) {
    assert.equal(config.split(from).length, 2, `the docs' configuration has ${from} once`);
    config = config.replace(from, to);
  }
  return config;
}

before(async () => {
  if (skip !== false) return;
  dir = mkdtempSync(join(tmpdir(), 'authd-nats-auth-'));
  liveRoots.add(dir);
  tls = makeTlsFiles(dir);
  nkeyUser = makeNkeyUser(dir, 'authd-nkey');
  operator = makeOperatorMode(dir);
  const seed = new TextEncoder().encode(readFileSync(nkeyUser.seedFile, 'utf8').trim());
  const started = await Promise.allSettled([
    startNatsCluster({
      servers: 1,
      extraConfig: `accounts { AUTHD: { jetstream: enabled, users: [ { user: authd, password: ${JSON.stringify(password)} }, { nkey: ${nkeyUser.publicKey} } ] } }`,
      clientOptions: { authenticator: nkeyAuthenticator(seed) },
    }),
    startNatsCluster({ servers: 1, extraConfig: `authorization { token: ${JSON.stringify(token)} }`, clientOptions: { token } }),
    startNatsCluster({ servers: 1, extraConfig: operator.serverConfig, clientOptions: { authenticator: credsAuthenticator(readFileSync(operator.credsFile)) } }),
    startNatsCluster({
      servers: 1, config: docsConfig,
      clientOptions: { user: docsUser, pass: docsPassword, tls: { ca: readFileSync(tls.caCert, 'utf8'), cert: readFileSync(tls.clientCert, 'utf8'), key: readFileSync(tls.clientKey, 'utf8') } },
    }),
  ]);
  // Each that started is kept for after() to stop, even when another did not.
  [users, tokens, operatorServer, docs] = started.map((s) => (s.status === 'fulfilled' ? s.value : undefined));
  for (const s of started) if (s.status === 'rejected') throw s.reason;
});

after(async () => {
  for (const node of nodes) await node.dispose();
  await Promise.all([users?.stop(), tokens?.stop(), operatorServer?.stop(), docs?.stop()]);
  if (dir !== undefined) {
    rmSync(dir, { recursive: true, force: true });
    liveRoots.delete(dir);
  }
});

/** A node on a stream of its own, started and counted for after(); resolves once it listens (caught up, connected). */
async function startNode(env: Record<string, string>): Promise<ServerProcess> {
  const node = await startServer({ env: { CLUSTER_STREAM: `auth${++streams}`, CLUSTER_REPLICAS: '1', NODE_ID: `node${streams}`, ...env } });
  nodes.push(node);
  return node;
}

/** The node is ready, takes a write through the stream, and wrote no NATS secret anywhere in its output. */
async function assertServes(node: ServerProcess, secrets: readonly string[]): Promise<void> {
  const ready = await node.api().get('/health/ready', { credentials: null });
  assert.equal(ready.status, 200, ready.text);
  const api = node.api();
  await createUser(api, [await baseApplicationId(api)]);
  const output = node.output();
  for (const secret of secrets) assert.ok(!output.includes(secret), 'no NATS secret in the node\'s output');
}

function writeSecret(name: string, text: string): string {
  const file = join(dir, name);
  writeFileSync(file, text, { mode: 0o600 });
  return file;
}

function clusterOf(env: Record<string, string>): ClusterConfig {
  return loadConfig({ CLUSTER_STREAM: `auth${++streams}`, CLUSTER_REPLICAS: '1', NODE_ID: 'inproc', ...env }, []).cluster!;
}

/** StreamLog.open as a node calls it, in this process: for the variants that need no whole node. */
async function openLog(cluster: ClusterConfig): Promise<StreamLog> {
  return StreamLog.open({ servers: cluster.servers, nats: cluster.nats, stream: cluster.stream, replicas: 1, nodeId: cluster.nodeId });
}

async function anonymousRefused(url: string, options: NodeConnectionOptions = {}): Promise<void> {
  // A server that verifies client certificates ends such a connection without a word: the short timeout bounds the wait.
  await assert.rejects(connect({ servers: url, timeout: 1_000, ...options }).then((nc) => nc.close()), `${url} refuses ${JSON.stringify(Object.keys(options))}`);
}

describe('cluster mode on NATS servers that require credentials (issue 42)', { skip }, () => {
  test('a node connects with a user and password, from the settings or the URL, and with an nkey seed file', async () => {
    const url = users!.urls[0]!;
    await assertServes(await startNode({ CLUSTER_NATS_SERVERS: url, CLUSTER_NATS_USER: 'authd', CLUSTER_NATS_PASSWORD: password }), [password]);
    const inUrl = url.replace('nats://', `nats://authd:${encodeURIComponent(password)}@`);
    await assertServes(await startNode({ CLUSTER_NATS_SERVERS: inUrl }), [password, encodeURIComponent(password)]);
    await assertServes(await startNode({ CLUSTER_NATS_SERVERS: url, CLUSTER_NATS_NKEY_SEED_FILE: nkeyUser.seedFile }), [readFileSync(nkeyUser.seedFile, 'utf8').trim()]);
    // A password file (a systemd credential): its line end is not part of the password.
    const log = await openLog(clusterOf({ CLUSTER_NATS_SERVERS: url, CLUSTER_NATS_USER: 'authd', CLUSTER_NATS_PASSWORD_FILE: writeSecret('nats-password', `${password}\n`) }));
    await log.close();
  });

  test('a node connects with a token, from the setting, a file or the URL', async () => {
    const url = tokens!.urls[0]!;
    await assertServes(await startNode({ CLUSTER_NATS_SERVERS: url, CLUSTER_NATS_TOKEN: token }), [token]);
    for (const env of <Record<string, string>[]>[{ CLUSTER_NATS_SERVERS: url, CLUSTER_NATS_TOKEN_FILE: writeSecret('nats-token', `${token}\n`) }, { CLUSTER_NATS_SERVERS: url.replace('nats://', `nats://${token}@`) }]) {
      const log = await openLog(clusterOf(env));
      await log.close();
    }
  });

  test('a node connects with a .creds file to a server in operator mode', async () => {
    const creds = readFileSync(operator.credsFile, 'utf8');
    await assertServes(await startNode({ CLUSTER_NATS_SERVERS: operatorServer!.urls[0]!, CLUSTER_NATS_CREDS: operator.credsFile }), [/SUA[A-Z0-9]+/.exec(creds)![0]]);
  });

  test('an anonymous client, and one with another operator\'s creds, are refused', async () => {
    await anonymousRefused(users!.urls[0]!);
    await anonymousRefused(users!.urls[0]!, { user: 'authd', pass: 'not-the-password' });
    await anonymousRefused(tokens!.urls[0]!);
    await anonymousRefused(operatorServer!.urls[0]!);
    await anonymousRefused(operatorServer!.urls[0]!, { authenticator: credsAuthenticator(readFileSync(operator.strangerCredsFile)) });
    const ca = readFileSync(tls.caCert, 'utf8');
    await anonymousRefused(docs!.urls[0]!, { tls: { ca } });
    await anonymousRefused(docs!.urls[0]!, { user: docsUser, pass: docsPassword, tls: { ca } });
    await anonymousRefused(docs!.urls[0]!, { user: docsUser, pass: docsPassword, tls: { ca, cert: readFileSync(tls.strangerCert, 'utf8'), key: readFileSync(tls.strangerKey, 'utf8') } });
  });

  test('a node without credentials, or with wrong ones, does not start, and says what to set', async () => {
    const url = users!.urls[0]!;
    await assert.rejects(startNode({ CLUSTER_NATS_SERVERS: url }),
      /authd: cannot start: NATS refused this node's credentials \(Authorization Violation\): no NATS credential is set: give the node its NATS user \(CLUSTER_NATS_USER and CLUSTER_NATS_PASSWORD/);
    await assert.rejects(startNode({ CLUSTER_NATS_SERVERS: url, CLUSTER_NATS_USER: 'authd', CLUSTER_NATS_PASSWORD: 'not-the-password' }),
      (err: Error) => /cannot start: NATS refused this node's credentials \(Authorization Violation\): check CLUSTER_NATS_USER and its password/.test(err.message) && !err.message.includes('not-the-password'));
    await assert.rejects(startNode({ CLUSTER_NATS_SERVERS: operatorServer!.urls[0]!, CLUSTER_NATS_CREDS: operator.strangerCredsFile }),
      /cannot start: NATS refused this node's credentials \(Authorization Violation\): check CLUSTER_NATS_CREDS/);
    // A file that cannot be used is named before any connection (exit 2, a configuration error).
    await assert.rejects(startNode({ CLUSTER_NATS_SERVERS: url, CLUSTER_NATS_NKEY_SEED_FILE: tls.caCert }), /cannot start: CLUSTER_NATS_NKEY_SEED_FILE: .*ca\.crt holds no nkey seed/);
    await assert.rejects(startNode({ CLUSTER_NATS_SERVERS: url, CLUSTER_NATS_CREDS: join(dir, 'missing.creds') }), /cannot start: CLUSTER_NATS_CREDS: cannot read .*missing\.creds \(ENOENT\)/);
  });

  test('TLS: a server certificate no CA vouches for, a server without TLS, and a key that is not the certificate\'s are each named', async () => {
    const cert = { CLUSTER_NATS_TLS_CERT: tls.clientCert, CLUSTER_NATS_TLS_KEY: tls.clientKey };
    await assert.rejects(openLog(clusterOf({ CLUSTER_NATS_SERVERS: docs!.urls[0]!, CLUSTER_NATS_USER: docsUser, CLUSTER_NATS_PASSWORD: docsPassword, ...cert })),
      /TLS with the NATS server failed \(.*\): check CLUSTER_NATS_TLS_CA/);
    await assert.rejects(openLog(clusterOf({ CLUSTER_NATS_SERVERS: users!.urls[0]!.replace('nats://', 'tls://'), CLUSTER_NATS_USER: 'authd', CLUSTER_NATS_PASSWORD: password })),
      /the NATS server does not offer the TLS this node requires/);
    await assert.rejects(openLog(clusterOf({ CLUSTER_NATS_SERVERS: docs!.urls[0]!, CLUSTER_NATS_TLS_CA: tls.caCert, CLUSTER_NATS_TLS_CERT: tls.clientCert, CLUSTER_NATS_TLS_KEY: tls.strangerKey })),
      /CLUSTER_NATS_TLS_KEY: .*stranger\.key is not the private key of the certificate in .*client\.crt/);
  });

  test('the server configuration in docs/cluster.md serves nodes, the snapshot bucket and authctl cluster status, with no permission violation', async () => {
    const url = docs!.urls[0]!;
    const env = {
      CLUSTER_NATS_SERVERS: url.replace('nats://', 'tls://'), CLUSTER_STREAM: 'authd', CLUSTER_REPLICAS: '1',
      CLUSTER_NATS_USER: docsUser, CLUSTER_NATS_PASSWORD_FILE: writeSecret('docs-password', docsPassword),
      CLUSTER_NATS_TLS_CA: tls.caCert, CLUSTER_NATS_TLS_CERT: tls.clientCert, CLUSTER_NATS_TLS_KEY: tls.clientKey,
      // Every change a snapshot, each shared with the bucket: the stream is purged below the older of two kept.
      SNAPSHOT_EVERY_RECORDS: '1',
    };
    const first = await startServer({ env: { ...env, NODE_ID: 'docs-a' } });
    nodes.push(first);
    const api = first.api();
    const app = await baseApplicationId(api);
    for (let i = 0; i < 3; i++) await createUser(api, [app]);
    // A failed authentication is shared on <stream>.failures.
    const failed = await api.post('/authenticate', { type: 'username', application: app, credential: { username: 'nobody@example.com', password: 'wrong-password' } });
    assert.equal(failed.status, 200, failed.text);
    await retryUntil(async () => {
      if (!first.logLines().some((l) => l['msg'] === 'snapshot shared with the cluster; stream purged below the oldest kept')) throw new Error('not yet');
    }, { timeoutMs: 15_000, what: 'a snapshot shared and the stream purged' });
    // A new node finds the stream purged: it must load the bucket's snapshot.
    const second = await startServer({ env: { ...env, NODE_ID: 'docs-b', KEY_FILE: first.dirs.keyFile } });
    nodes.push(second);
    assert.ok(second.logLines().some((l) => l['msg'] === 'loaded the cluster\'s snapshot from its bucket'), second.output());

    const status = await authctl(['cluster', 'status', '--json', '--nats', url, '--nats-user', docsUser,
      '--nats-tls-ca', tls.caCert, '--nats-tls-cert', tls.clientCert, '--nats-tls-key', tls.clientKey, '--key-file', first.dirs.keyFile], { env: { CLUSTER_NATS_PASSWORD: docsPassword } });
    assert.equal(status.code, 0, status.stdout + status.stderr);
    const json = JSON.parse(status.stdout) as { stream: { name: string; last_seq: number }; nodes: { node: string; applied_seq: number }[] };
    assert.equal(json.stream.name, 'authd');
    assert.deepEqual(json.nodes.map((n) => n.node).sort(), ['docs-a', 'docs-b']);
    // Without the client certificate the same user is refused: the server verifies clients.
    const noCert = await authctl(['cluster', 'status', '--nats', url, '--nats-user', docsUser, '--nats-tls-ca', tls.caCert, '--key-file', first.dirs.keyFile], { env: { CLUSTER_NATS_PASSWORD: docsPassword } });
    assert.equal(noCert.code, 1);
    assert.match(noCert.stderr, /no NATS server answered \(nats:\/\/127\.0\.0\.1:\d+\): .*set CLUSTER_NATS_TLS_CERT and CLUSTER_NATS_TLS_KEY/);

    const serverLog = readFileSync(docs!.logFiles[0]!, 'utf8');
    assert.doesNotMatch(serverLog, /Publish Violation|Subscription Violation|Permissions Violation/, 'the docs\' permissions cover everything a node and authctl do');
    for (const node of [first, second]) assert.ok(!node.output().includes(docsPassword), 'no NATS secret in a node\'s output');
  });
});
