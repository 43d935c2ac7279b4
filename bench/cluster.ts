// `npm run bench -- --cluster [--users N] [--quick] [--keep]`: cluster mode against the embedded log on the same data: authentication per node, write latency with 1 and 3 replicas, replication lag, and a new node's time to ready.
//
// Real parts throughout: three nats-server processes with JetStream (Debian's nats-server), authd nodes as child
// processes, wrk (or autocannon) for the authentication load, HTTP for writes and reads. The dataset is the main
// bench's (bench/lib/dataset.ts), written once as a snapshot; the cluster starts from the same state put in its
// bucket as the snapshot at sequence 0, so every node starts from it exactly as a new node of a real cluster would.

import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiKeySecrets } from '../src/auth/apikey-secrets.js';
import { ClusterSeal, clusterSealSubkeyLabel } from '../src/cluster/seal.js';
import { SnapshotBucket } from '../src/cluster/snapshot-bucket.js';
import { StreamLog } from '../src/cluster/stream-log.js';
import { classifyDir } from '../src/persist/layout.js';
import { readSnapshotChunks, writeSnapshot } from '../src/persist/snapshot.js';
import { NodeStorage } from '../src/persist/storage.js';
import { State } from '../src/store/state.js';
import { startNatsCluster, type NatsCluster } from '../test/helpers/nats-cluster.js';
import { seedDataDir, type Fixtures } from './lib/dataset.js';
import { distPath, freePort, removeOnExit, startChild, type Child } from './lib/processes.js';
import { Prng } from './lib/prng.js';
import { adminHeaders, endUserAddress } from './lib/scenario-kit.js';
import { parseSideBenchArgs, type SideBenchArgs } from './lib/side-args.js';
import { autocannonGenerator, ensureWrk, wrkGenerator, type Generator, type GenRequest } from './lib/wrk.js';

/** Targets from issue 25. */
const authRatioMin = 0.9;
const readyMsMax = 10_000;
/** Writes per latency series, one at a time; and the concurrent writers of the throughput run. */
const latencyWrites = 300;
const latencyWritesQuick = 100;
const throughputWriters = 16;
const throughputWriteS = 5;
const lagSamples = 200;
const authWarmS = 5;
const authMeasureS = 10;
const authRequests = 100_000;
const startTimeoutMs = 120_000;

function parseArgs(argv: readonly string[]): SideBenchArgs {
  return parseSideBenchArgs(argv, {
    flag: '--cluster', users: 1_000_000, quickUsers: 50_000, connections: 50,
    usage: 'npm run bench -- --cluster [--users N] [--quick] [--keep] [--connections N]',
  });
}

const log = (line: string): void => { process.stdout.write(`cluster-bench: ${line}\n`); };
const ms = (x: number): string => x.toFixed(2);
const verdict = (met: boolean): string => (met ? 'MET' : 'MISSED');

function percentile(sorted: readonly number[], p: number): number {
  return sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

interface Node { readonly child: Child; readonly port: number; readonly readyMs: number }

/** Resolves once the node's search index is built: until then the build takes CPU from whatever is measured. */
async function indexBuilt(f: Fixtures, node: Node): Promise<void> {
  const deadline = performance.now() + startTimeoutMs;
  for (;;) {
    const res = await fetch(`http://127.0.0.1:${node.port}/metrics`, { headers: adminHeaders(f) });
    if (/^authd_search_index_building 0$/m.test(await res.text())) return;
    if (performance.now() > deadline) throw new Error('the search index was not built in time');
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** An authd process; resolves once GET /health/ready answers 200, with the time from spawn. */
async function startNode(name: string, root: string, env: Record<string, string>): Promise<Node> {
  const port = await freePort();
  const dataDir = join(root, name);
  const child = startChild(name, distPath('src/main.js'), [], {
    PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'warn', FSYNC: 'always',
    SNAPSHOT_EVERY_RECORDS: '1000000000', VERIFY_CACHE_TTL_MS: '86400000', VERIFY_CACHE_IDLE_MS: '86400000', ...env,
  }, join(root, `${name}.log`));
  const deadline = performance.now() + startTimeoutMs;
  for (;;) {
    if (!child.alive) throw new Error(`${name} exited before it was ready; see ${join(root, `${name}.log`)}`);
    try {
      const res = await fetch(`http://127.0.0.1:${port}/health/ready`);
      if (res.status === 200) return { child, port, readyMs: performance.now() - child.spawnedAt };
    } catch { /* not listening yet */ }
    if (performance.now() > deadline) throw new Error(`${name} not ready within ${startTimeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** The seeded state as the cluster's snapshot at sequence 0 in a new stream's bucket, and the key's fingerprint beside it. */
async function prepareStream(nats: NatsCluster, stream: string, replicas: number, seedDir: string, keyFile: string, work: string): Promise<void> {
  const storage = new NodeStorage();
  const { snapshots } = classifyDir(seedDir, await storage.list(seedDir));
  const state = new State();
  await readSnapshotChunks(storage, snapshots[0]!.path, (kind, values) => state.loadSection(kind, values));
  state.finishLoad(0);
  const dir = join(work, `${stream}-snapshot`);
  mkdirSync(dir, { recursive: true });
  const written = await writeSnapshot(storage, dir, state.snapshotSource());
  const streamLog = await StreamLog.open({ servers: nats.urls, stream, replicas, nodeId: 'bench' });
  try {
    const secrets = ApiKeySecrets.load({ keyFile });
    const bucket = await SnapshotBucket.open(streamLog.connection, stream, replicas, new ClusterSeal(secrets.subkey(clusterSealSubkeyLabel)));
    // A new stream: nothing in it to be of an earlier, unsealed version.
    await bucket.checkKey(secrets.fingerprint(), () => Promise.resolve(false));
    await bucket.put(written.path, 0);
  } finally {
    await streamLog.close();
  }
}

function apikeyRequests(f: Fixtures, keyFile: string): GenRequest[] {
  const secrets = ApiKeySecrets.load({ keyFile });
  const keys = f.distinctApikeys.map((k) => ({ application: k.application, username: k.keyId, password: secrets.secretFor(k.keyId, k.nonce) }));
  const prng = new Prng(25);
  return Array.from({ length: authRequests }, (_, n) => {
    const k = prng.pick(keys);
    const body = { type: 'apikey', application: k.application, credential: { username: k.username, password: k.password }, ip_address: endUserAddress((5 << 20) + n) };
    return { method: 'POST', path: '/authenticate', headers: adminHeaders(f), body: JSON.stringify(body) };
  });
}

async function authRate(generator: Generator, file: string, node: Node, connections: number): Promise<{ perSec: number; p99Ms: number }> {
  await generator.run(file, node.port, node.child.pid, connections, authWarmS, 0.5);
  const load = await generator.run(file, node.port, node.child.pid, connections, authMeasureS, 0);
  const bad = Object.entries(load.statusCounts).filter(([code]) => !code.startsWith('2'));
  if (bad.length > 0) throw new Error(`unexpected statuses: ${JSON.stringify(load.statusCounts)}`);
  return { perSec: load.reqPerSec, p99Ms: load.ok.p99Ms };
}

async function rename(f: Fixtures, port: number, userId: string, name: string): Promise<void> {
  const res = await fetch(`http://127.0.0.1:${port}/users/user/${userId}`, { method: 'PUT', headers: adminHeaders(f), body: JSON.stringify({ name }) });
  if (res.status !== 200) throw new Error(`update answered ${res.status}: ${(await res.text()).slice(0, 200)}`);
  await res.arrayBuffer();
}

/** One write at a time: the latency a caller sees. Then throughputWriters at once for throughputWriteS: writes per second. */
async function writeCosts(f: Fixtures, port: number, writes: number): Promise<{ p50Ms: number; p99Ms: number; perSec: number }> {
  const ids = f.userIds;
  const times: number[] = [];
  for (let i = 0; i < writes; i++) {
    const started = performance.now();
    await rename(f, port, ids[i % ids.length]!, `Latency ${i}`);
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  let done = 0;
  const until = performance.now() + throughputWriteS * 1000;
  await Promise.all(Array.from({ length: throughputWriters }, async (_, w) => {
    for (let i = 0; performance.now() < until; i++) {
      await rename(f, port, ids[(w * 7919 + i) % ids.length]!, `Throughput ${w} ${i}`);
      done++;
    }
  }));
  return { p50Ms: percentile(times, 50), p99Ms: percentile(times, 99), perSec: done / throughputWriteS };
}

/** A write acknowledged by one node, then read on the other until it shows: acknowledgement to applied there. */
async function replicationLag(f: Fixtures, writer: number, reader: number): Promise<{ p50Ms: number; p99Ms: number }> {
  const lags: number[] = [];
  const headers = adminHeaders(f);
  for (let i = 0; i < lagSamples; i++) {
    const id = f.userIds[i % f.userIds.length]!;
    const name = `Lag ${i} ${Date.now()}`;
    await rename(f, writer, id, name);
    const acked = performance.now();
    for (;;) {
      const res = await fetch(`http://127.0.0.1:${reader}/users/user/${id}`, { headers });
      if ((await res.text()).includes(name)) break;
    }
    lags.push(performance.now() - acked);
  }
  lags.sort((a, b) => a - b);
  return { p50Ms: percentile(lags, 50), p99Ms: percentile(lags, 99) };
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const root = mkdtempSync(join(tmpdir(), 'authd-cluster-bench-'));
  if (args.keep) log(`keeping ${root}`);
  else removeOnExit(root);
  const seedDir = join(root, 'embedded');
  const keyFile = join(root, 'secrets', 'server.key');
  const fixturesFile = join(root, 'fixtures.json');
  log(`seeding ${args.users.toLocaleString('en-US')} users`);
  await seedDataDir({ users: args.users, dataDir: seedDir, keyFile, force: false, seed: 20_240_601, fixturesFile, log: (l) => log(l) });
  const f = (await import(fixturesFile, { with: { type: 'json' } })).default as Fixtures;
  const genDir = join(root, 'generator');
  mkdirSync(genDir, { recursive: true });
  const generator = ensureWrk(log) ? wrkGenerator(genDir) : autocannonGenerator();
  const authFile = generator.prepare('apikey-distinct', apikeyRequests(f, keyFile));
  const writes = args.quick ? latencyWritesQuick : latencyWrites;
  const results: Record<string, unknown> = { users: args.users, generator: generator.kind };

  log('embedded: one node on the local log, FSYNC=always');
  const embedded = await startNode('embedded', root, { DATA_DIR: seedDir, KEY_FILE: keyFile });
  await indexBuilt(f, embedded);
  const embeddedAuth = await authRate(generator, authFile, embedded, args.connections);
  const embeddedWrites = await writeCosts(f, embedded.port, writes);
  await embedded.child.stop();
  results['embedded'] = { auth: embeddedAuth, writes: embeddedWrites };
  log(`embedded: authenticate ${Math.round(embeddedAuth.perSec)}/s; write p50 ${ms(embeddedWrites.p50Ms)} ms p99 ${ms(embeddedWrites.p99Ms)} ms, ${Math.round(embeddedWrites.perSec)}/s with ${throughputWriters} writers`);

  log('starting three nats-server processes with JetStream');
  const nats = await startNatsCluster({ servers: 3 });
  try {
    for (const replicas of [3, 1]) {
      const stream = `bench_r${replicas}`;
      log(`replicas ${replicas}: the seeded state as the bucket's snapshot at sequence 0`);
      await prepareStream(nats, stream, replicas, seedDir, keyFile, root);
      const env = (id: string): Record<string, string> => ({ CLUSTER_NATS_SERVERS: nats.urls.join(','), CLUSTER_STREAM: stream, CLUSTER_REPLICAS: String(replicas), NODE_ID: id, KEY_FILE: keyFile });
      // One after the other, each measured alone: a start is mostly one core's work (decoding, indexing).
      const a = await startNode(`${stream}-a`, root, env('a'));
      await indexBuilt(f, a);
      const b = await startNode(`${stream}-b`, root, env('b'));
      await indexBuilt(f, b);
      log(`replicas ${replicas}: nodes ready ${(a.readyMs / 1000).toFixed(2)} s and ${(b.readyMs / 1000).toFixed(2)} s after spawn (from the bucket's snapshot)`);
      const row: Record<string, unknown> = { readyMs: [a.readyMs, b.readyMs] };
      if (replicas === 3) {
        const auth = await authRate(generator, authFile, a, args.connections);
        row['auth'] = auth;
        const ratio = auth.perSec / embeddedAuth.perSec;
        log(`replicas 3: authenticate on one node ${Math.round(auth.perSec)}/s = ${ratio.toFixed(2)} x embedded (target >= ${authRatioMin}: ${verdict(ratio >= authRatioMin)})`);
      }
      const w = await writeCosts(f, a.port, writes);
      row['writes'] = w;
      log(`replicas ${replicas}: write p50 ${ms(w.p50Ms)} ms p99 ${ms(w.p99Ms)} ms, ${Math.round(w.perSec)}/s with ${throughputWriters} writers`);
      const lag = await replicationLag(f, a.port, b.port);
      row['lag'] = lag;
      log(`replicas ${replicas}: replication lag (acknowledged on one node, read on the other) p50 ${ms(lag.p50Ms)} ms p99 ${ms(lag.p99Ms)} ms`);
      // A node that joins once the cluster has run: the bucket's snapshot plus the stream's tail.
      const joined = await startNode(`${stream}-c`, root, { ...env('c'), LOG_LEVEL: 'info' });
      row['joinReadyMs'] = joined.readyMs;
      log(`replicas ${replicas}: a new node with ${args.users.toLocaleString('en-US')} users ready in ${(joined.readyMs / 1000).toFixed(2)} s (target <= ${readyMsMax / 1000} s: ${verdict(joined.readyMs <= readyMsMax)})`);
      for (const n of [a, b, joined]) await n.child.stop();
      results[`replicas${replicas}`] = row;
    }
  } finally {
    await nats.stop();
  }
  const out = join(distPath('../bench/results'), 'cluster-latest.json');
  mkdirSync(join(out, '..'), { recursive: true });
  writeFileSync(out, `${JSON.stringify({ at: new Date().toISOString(), node: process.versions.node, ...results }, null, 2)}\n`);
  log(`wrote ${out}`);
}

main().catch((err: unknown) => {
  process.stderr.write(`cluster-bench: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
  process.exit(1);
});
