// A node started while the NATS servers are still electing JetStream's meta leader (all of them just restarted) waits
// for JetStream rather than exiting with "JetStream system temporarily unavailable".

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { StreamLog } from '../src/cluster/stream-log.js';
import { clusterStartWaitMs } from '../src/config/limits.js';
import { natsSkipReason, startNatsCluster, type NatsCluster } from './helpers/nats-cluster.js';

const skip = natsSkipReason();
let nats: NatsCluster | undefined;

before(async () => {
  if (skip === false) nats = await startNatsCluster({ servers: 3 });
});

after(async () => {
  await nats?.stop();
});

test('opening the stream while every server has just restarted waits for JetStream', { skip }, async () => {
  const cluster = nats!;
  for (let i = 0; i < 3; i++) await cluster.kill(i);
  // Each restart resolves once its server takes clients, before the servers have a meta leader again.
  await Promise.all([0, 1, 2].map((i) => cluster.restart(i)));
  const log = await StreamLog.open({ servers: cluster.urls, stream: 'election', replicas: 3, nodeId: 'n0', startWaitMs: clusterStartWaitMs });
  try {
    assert.equal(await log.lastSeq(), 0);
    assert.equal(await log.publish(new Uint8Array([1]), 0, 'first'), 1);
  } finally {
    await log.close();
  }
});
