// Failures shared over a real nats-server (issue 25): guesses spread over two limiters lock the account on both at the failure factor; with NATS gone, failures are dropped and nothing waits. Sealed (issue 42): only failures sealed under the key, never seen before and sent within the window count.

import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { BruteForceLimiter, type LimiterSettings } from '../src/auth/limiter.js';
import { RejectedMessages } from '../src/cluster/rejected.js';
import { ClusterSeal, sealContext } from '../src/cluster/seal.js';
import { failuresSubject, shareFailures } from '../src/cluster/shared-failures.js';
import { sharedFailureWindowMs } from '../src/config/limits.js';
import { packr } from '../src/persist/codec.js';
import { natsSkipReason, startNatsCluster, type NatsCluster } from './helpers/nats-cluster.js';

const factor = 10;
const settings: LimiterSettings = {
  failureFactor: factor, addressFailureFactor: 100, waitIncrementMs: 60_000, maxWaitMs: 15 * 60_000,
  failureResetMs: 12 * 3600_000, tarpitStepMs: 0, tarpitMaxMs: 5_000,
};
const stream = 'authd-test';
/** The cluster's key, as every node derives it from the shared server key. */
const clusterKey = randomBytes(32);
const quiet = { warn: () => undefined };

/** Shares the limiter's failures as a node of the cluster would (its own ClusterSeal: its own nonces). */
function share(nc: NatsConnection, limiter: BruteForceLimiter, rejected = new RejectedMessages(quiet)) {
  return shareFailures(nc, stream, limiter, new ClusterSeal(clusterKey), rejected);
}

const skip = natsSkipReason();

async function until(what: string, done: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

let nats: NatsCluster | undefined;
const connections: NatsConnection[] = [];

async function node(): Promise<NatsConnection> {
  const nc = await connect({ servers: nats!.urls[0]!, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
  connections.push(nc);
  return nc;
}

before(async () => {
  if (skip === false) nats = await startNatsCluster({ servers: 1, jetstream: false });
});

after(async () => {
  for (const nc of connections) await nc.close().catch(() => undefined);
  await nats?.stop();
});

/** One wrong password on this limiter: admitted and failed. */
function guess(limiter: BruteForceLimiter, account: string, address: string): boolean {
  const a = limiter.admit(account, address);
  if (a.admitted) limiter.failed(a.ticket);
  return a.admitted;
}

function locked(limiter: BruteForceLimiter, account: string): boolean {
  const a = limiter.admit(account, '203.0.113.250');
  if (a.admitted) limiter.released(a.ticket);
  return !a.admitted;
}

test('guesses spread over two nodes lock the account on both at the failure factor', { skip }, async () => {
  const [ncA, ncB] = [await node(), await node()];
  const [limiterA, limiterB] = [new BruteForceLimiter(settings), new BruteForceLimiter(settings)];
  const sharedA = share(ncA, limiterA);
  const sharedB = share(ncB, limiterB);
  // The subscriptions are on the server once each connection's PING is answered.
  await Promise.all([ncA.flush(), ncB.flush()]);
  const spread = async (from: number, to: number): Promise<void> => {
    for (let i = from; i < to; i++) {
      const [limiter, shared, other] = i % 2 === 0 ? [limiterA, sharedA, sharedB] : [limiterB, sharedB, sharedA];
      const applied = other.applied;
      assert.ok(guess(limiter, 'u:victim@example.com', `198.51.100.${i}`), `guess ${i + 1} admitted`);
      assert.equal(shared.sent, Math.floor(i / 2) + 1);
      await until(`guess ${i + 1} on the other node`, () => other.applied === applied + 1);
    }
  };
  await spread(0, factor - 1);
  assert.equal(locked(limiterA, 'u:victim@example.com'), false, `${factor - 1} failures: open on node A`);
  assert.equal(locked(limiterB, 'u:victim@example.com'), false, `${factor - 1} failures: open on node B`);
  await spread(factor - 1, factor);
  assert.equal(locked(limiterA, 'u:victim@example.com'), true, `${factor} failures: locked on node A`);
  assert.equal(locked(limiterB, 'u:victim@example.com'), true, `${factor} failures: locked on node B`);
  // Each node counted its own once (its echo skipped) and the other's once.
  assert.deepEqual([sharedA.sent, sharedA.applied, sharedB.sent, sharedB.applied], [5, 5, 5, 5]);
  assert.deepEqual([sharedA.dropped, sharedB.dropped], [0, 0]);
  sharedA.stop();
  sharedB.stop();
  assert.equal(limiterA.onFailure, undefined, 'stop() removes the listener');
});

test('issue 42: a failure that does not open, a replayed one and one outside the window are refused and counted; the node\'s own echo is skipped', { skip }, async () => {
  const nc = await node();
  const limiter = new BruteForceLimiter(settings);
  const rejected = new RejectedMessages(quiet);
  const shared = share(nc, limiter, rejected);
  await nc.flush();
  const publisher = await node();
  const subject = failuresSubject(stream);
  const context = sealContext('failure', stream, subject);
  const otherKey = new ClusterSeal(randomBytes(32));
  const cluster = new ClusterSeal(clusterKey);
  const failure = (sender: string, counter: number, account: string, sentAtMs = Date.now()): Uint8Array => packr.pack([sender, counter, sentAtMs, account, '192.0.2.1']);
  // Without the key: clear (today's earlier format and the new one), garbage, another key, another subject's context.
  publisher.publish(subject, packr.pack(['node-x', 'u:a@example.com', '192.0.2.1']));
  publisher.publish(subject, failure('6e6f64652d78', 1, 'u:a@example.com'));
  publisher.publish(subject, new TextEncoder().encode('not msgpack at all \u00c1'));
  publisher.publish(subject, new Uint8Array(8192));
  publisher.publish(subject, otherKey.seal(failure('6e6f64652d78', 2, 'u:a@example.com'), context));
  publisher.publish(subject, cluster.seal(failure('6e6f64652d78', 3, 'u:a@example.com'), sealContext('failure', 'other-stream', subject)));
  // With the key: sent too long ago, or too far ahead, by the sender's clock.
  publisher.publish(subject, cluster.seal(failure('6f6c64', 1, 'u:a@example.com', Date.now() - sharedFailureWindowMs - 5_000), context));
  publisher.publish(subject, cluster.seal(failure('6f6c64', 2, 'u:a@example.com', Date.now() + sharedFailureWindowMs + 5_000), context));
  // One good failure, then the same bytes again and again (a capture replayed), and an older counter of the same sender.
  const good = cluster.seal(failure('73656e646572', 7, 'u:someone@example.com'), context);
  for (let i = 0; i < factor; i++) publisher.publish(subject, good);
  publisher.publish(subject, cluster.seal(failure('73656e646572', 6, 'u:someone@example.com'), context));
  await publisher.flush();
  await until('every message', () => shared.applied + shared.rejected === 1 + 8 + factor);
  assert.equal(shared.applied, 1, 'only the first copy of the one good failure counts');
  assert.equal(shared.rejected, 8 + factor);
  assert.equal(rejected.counts.failure, 8 + factor);
  assert.equal(locked(limiter, 'u:someone@example.com'), false, `${factor} copies of one failure are one failure`);
  assert.equal(locked(limiter, 'u:a@example.com'), false);
  assert.equal(limiter.size, 3, 'the one failure: account, address and pair');

  // This node's own failures come back from the server: skipped, neither counted again nor rejected.
  assert.ok(guess(limiter, 'u:self@example.com', '192.0.2.5'));
  await nc.flush();
  await sleep(100);
  assert.equal(shared.sent, 1);
  assert.deepEqual([shared.applied, shared.rejected], [1, 8 + factor]);
  shared.stop();
});

test('with NATS gone, failures are dropped at once and authentication does not wait', { skip }, async () => {
  const nc = await node();
  const limiter = new BruteForceLimiter(settings);
  const shared = share(nc, limiter);
  await nc.flush();
  assert.ok(guess(limiter, 'u:before@example.com', '192.0.2.10'));
  assert.equal(shared.sent, 1);
  await nats!.kill(0);
  // Counted locally and dropped, synchronously, every time, once the client has seen the connection go.
  let i = 0;
  await until('a dropped failure', () => {
    assert.ok(guess(limiter, `u:during${i}@example.com`, `192.0.2.${11 + (i++ % 200)}`));
    return shared.dropped > 0;
  });
  const sent = shared.sent;
  const started = performance.now();
  for (let k = 0; k < 1000; k++) assert.ok(guess(limiter, 'u:spray@example.com', `10.8.${k >> 8}.${k & 255}`) || k >= factor);
  assert.ok(performance.now() - started < 1000, 'no failure waited for NATS');
  assert.equal(shared.sent, sent, 'nothing more handed to the client while disconnected');
  assert.ok(locked(limiter, 'u:spray@example.com'), 'the local count still locks');
  shared.stop();
});
