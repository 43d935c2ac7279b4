// The nats-server test harness (issue 25) against real servers: a replicated stream keeps every acknowledged message through kill -9 of one server, refuses writes without quorum, and serves again after restarts.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { jetstream, jetstreamManager, JetStreamApiError, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { natsSkipReason, retryUntil, skipReasonFor, startNatsCluster, type NatsCluster } from './helpers/nats-cluster.js';

const skip = natsSkipReason();
/** Short, so a publish without quorum fails quickly and a publish during an election is retried soon. */
const publishTimeoutMs = 1_000;
/**
 * A stream replica waits 4 to 9 s (nats-server's Raft election timeout) for a lost leader before it campaigns, and
 * a vote that elects nobody, as after two servers restart together, costs another round: three rounds fit.
 */
const electionWaitMs = 30_000;
/** A publish without quorum must fail within its timeout plus the client's own retry on "no responders". */
const noQuorumFailMs = 3 * publishTimeoutMs + 1_000;
const wrongLastSequence = 10071;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Publishes in order, each message expecting the last acknowledged sequence, and remembers every acknowledgement. */
class OrderedPublisher {
  readonly acked: { seq: number; payload: string }[] = [];
  private lastSeq = 0;
  private count = 0;

  constructor(private readonly js: JetStreamClient, private readonly subject: string) {}

  /** One attempt at the next message, without retrying; its msgID is the payload, so a retry is de-duplicated. */
  async tryOnce(payload: string): Promise<number> {
    const ack = await this.js.publish(this.subject, encoder.encode(payload), {
      msgID: payload,
      expect: { lastSequence: this.lastSeq },
      timeout: publishTimeoutMs,
    });
    // A duplicate of a publish that the leader has staged but not yet stored carries no sequence: ask again.
    if (ack.seq === 0) throw new Error(`${payload} is staged, not yet stored`);
    assert.equal(ack.seq, this.lastSeq + 1, `${payload} stored at ${ack.seq}, after ${this.lastSeq}`);
    this.lastSeq = ack.seq;
    this.acked.push({ seq: ack.seq, payload });
    return ack.seq;
  }

  nextPayload(label: string): string {
    this.count += 1;
    return `${label}-${this.count}`;
  }

  /** Publishes `payload`, retrying the same msgID and expectation until acknowledged, as a writer after a lost ack must. */
  async publish(payload: string, timeoutMs: number): Promise<number> {
    return retryUntil(() => this.tryOnce(payload), { timeoutMs, intervalMs: 200, what: `publishing ${payload}` });
  }

  async publishSome(label: string, count: number, timeoutMs: number): Promise<void> {
    for (let i = 0; i < count; i += 1) await this.publish(this.nextPayload(label), timeoutMs);
  }
}

/** Every message of the stream, in sequence order. */
async function readStream(jsm: JetStreamManager, stream: string): Promise<{ seq: number; payload: string }[]> {
  const info = await jsm.streams.info(stream);
  const messages = [];
  for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq += 1) {
    const stored = await jsm.streams.getMessage(stream, { seq });
    assert.ok(stored !== null, `message ${seq} is missing`);
    messages.push({ seq: stored.seq, payload: decoder.decode(stored.data) });
  }
  return messages;
}

/** Runs `body` against the cluster; on failure prints the servers' logs, and always stops the cluster. */
async function withCluster(
  cluster: NatsCluster,
  diagnostic: (message: string) => void,
  body: (nc: NatsConnection) => Promise<void>,
): Promise<void> {
  const nc = await connect({ servers: [...cluster.urls], maxReconnectAttempts: -1, reconnectTimeWait: 100, timeout: 2_000 });
  try {
    await body(nc);
  } catch (error) {
    diagnostic(cluster.logTails());
    throw error;
  } finally {
    await nc.close();
    await cluster.stop();
  }
}

test('the skip reason says how to install nats-server, and CI never skips', () => {
  const reason = skipReasonFor(undefined, false);
  assert.ok(typeof reason === 'string');
  assert.match(reason, /nats-server is not installed/);
  assert.match(reason, /apt-get install nats-server/);
  assert.equal(skipReasonFor(undefined, true), false);
  assert.equal(skipReasonFor('/usr/sbin/nats-server', false), false);
});

test('retryUntil returns the first success and gives up with the last error', async () => {
  let calls = 0;
  const value = await retryUntil(async () => {
    calls += 1;
    if (calls < 3) throw new Error(`attempt ${calls}`);
    return 'done';
  }, { timeoutMs: 2_000, intervalMs: 10, what: 'three attempts' });
  assert.equal(value, 'done');
  assert.equal(calls, 3);

  const started = Date.now();
  await assert.rejects(
    retryUntil(() => Promise.reject(new Error('never')), { timeoutMs: 300, intervalMs: 20, what: 'a lost cause' }),
    /a lost cause: not done within 300 ms .*last error: never/,
  );
  assert.ok(Date.now() - started < 1_000);
});

test('one server: expected last sequence, msgID de-duplication, and the store kept across a restart', { skip }, async (t) => {
  const cluster = await startNatsCluster({ servers: 1 });
  assert.equal(cluster.urls.length, 1);
  assert.match(cluster.url(0), /^nats:\/\/127\.0\.0\.1:\d+$/);
  await withCluster(cluster, (m) => t.diagnostic(m), async (nc) => {
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: 'single', subjects: ['single.log'], storage: 'file', num_replicas: 1 });
    const js = jetstream(nc);
    const publisher = new OrderedPublisher(js, 'single.log');
    assert.equal(await publisher.tryOnce('a'), 1);
    assert.equal(await publisher.tryOnce('b'), 2);

    const stale = js.publish('single.log', encoder.encode('c'), { msgID: 'c', expect: { lastSequence: 1 }, timeout: publishTimeoutMs });
    await assert.rejects(stale, (error: unknown) => error instanceof JetStreamApiError && error.code === wrongLastSequence);
    const again = await js.publish('single.log', encoder.encode('b'), { msgID: 'b', timeout: publishTimeoutMs });
    assert.deepEqual({ seq: again.seq, duplicate: again.duplicate }, { seq: 2, duplicate: true });

    const pid = cluster.pid(0);
    assert.ok(pid !== undefined);
    await cluster.kill(0);
    assert.equal(cluster.pid(0), undefined);
    assert.throws(() => process.kill(pid, 0), { code: 'ESRCH' });
    await cluster.restart(0);
    await publisher.publish('c', electionWaitMs);
    assert.deepEqual(await readStream(await jetstreamManager(nc), 'single'), publisher.acked);
  });
  // stop() is idempotent and leaves no process.
  await cluster.stop();
  assert.equal(cluster.pid(0), undefined);
});

test('three servers: writes survive kill -9 of one, stop without quorum, and resume after restarts', { skip, timeout: 150_000 }, async (t) => {
  const started = Date.now();
  const cluster = await startNatsCluster({ servers: 3 });
  t.diagnostic(`cluster ready in ${Date.now() - started} ms`);
  assert.equal(new Set(cluster.urls).size, 3);
  await withCluster(cluster, (m) => t.diagnostic(m), async (nc) => {
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: 'log', subjects: ['log.records'], storage: 'file', num_replicas: 3 });
    const publisher = new OrderedPublisher(jetstream(nc), 'log.records');
    await publisher.publishSome('before', 5, electionWaitMs);

    // The stream's leader dies, so the survivors must elect another before a write can be stored.
    const leader = (await jsm.streams.info('log')).cluster?.leader;
    assert.ok(leader !== undefined, 'the stream has a leader');
    const first = cluster.indexOf(leader);
    let phase = Date.now();
    await cluster.kill(first);
    await publisher.publishSome('one-down', 5, electionWaitMs);
    t.diagnostic(`killed leader ${leader}: 5 writes acknowledged ${Date.now() - phase} ms later`);

    // One of three left: no write may be acknowledged, and the refusal comes within a bounded time.
    const second = (first + 1) % 3;
    await cluster.kill(second);
    const refused = publisher.nextPayload('no-quorum');
    phase = Date.now();
    const refusal = await publisher.tryOnce(refused).then(
      (seq) => assert.fail(`acknowledged at ${seq} with one server of three`),
      (error: unknown) => (error instanceof Error ? error.message : String(error)),
    );
    const refusedMs = Date.now() - phase;
    t.diagnostic(`without quorum the write was refused after ${refusedMs} ms: ${refusal}`);
    assert.ok(refusedMs < noQuorumFailMs, `refused after ${refusedMs} ms, bound ${noQuorumFailMs} ms`);

    // Back to three: the refused write is retried with its msgID, so it is stored once whether or not the lone
    // server had kept it, and every write after it is acknowledged in order.
    phase = Date.now();
    await Promise.all([cluster.restart(first), cluster.restart(second)]);
    await publisher.publish(refused, electionWaitMs);
    t.diagnostic(`restarted both: a write acknowledged ${Date.now() - phase} ms later`);
    await publisher.publishSome('restored', 5, electionWaitMs);

    const stored = await retryUntil(() => readStream(jsm, 'log'), { timeoutMs: electionWaitMs, what: 'reading the stream' });
    assert.deepEqual(stored, publisher.acked);
    assert.equal(stored.length, 16);
    // The restarted servers caught up: every replica is current again.
    await retryUntil(async () => {
      const info = await jsm.streams.info('log');
      const replicas = info.cluster?.replicas ?? [];
      assert.equal(replicas.length, 2);
      assert.ok(replicas.every((replica) => replica.current), JSON.stringify(replicas));
    }, { timeoutMs: electionWaitMs, intervalMs: 250, what: 'every replica current' });
  });
  t.diagnostic(`whole scenario ${Date.now() - started} ms`);
});
