// Brute-force failures shared by the nodes of a cluster: each one this node's limiter counts is published on the core NATS subject `<stream>.failures`, and each one another node publishes is counted here.
//
// Without it, an attacker who spreads guesses over N nodes gets N times the failure factor before an account
// locks. With it, every node counts every node's failures (BruteForceLimiter.failedElsewhere), so sequential
// guesses lock the account at the configured count wherever they land, give or take the ones still crossing
// NATS (a millisecond or so on one network). The reservation of slots stays per node: guesses in flight at the
// same moment on several nodes can still be evaluated before each hears of the others' failures.
//
// Cost: one message per failure (msgpack [node id, account, address]: about 40 bytes for an email and an IPv4
// address, plus NATS's PUB line), published synchronously from failed() with no wait, and one PING at a time
// to confirm them; every other node applies it in O(1) on three counters. Successes cost nothing: nothing is
// sent or read for them.
//
// Lost, on purpose (core NATS, no JetStream: a lost failure only lets one more guess through somewhere):
// failures over sharedFailuresSentPerSecondMax a second; failures while this node is disconnected from NATS
// (dropped at once: authentication never waits for NATS, and the client would hold them only to discard them
// at its next reconnection attempt); failures beyond sharedFailuresUnconfirmedMax published since the server
// last answered a PING (a connection that died without a word, until NATS notices); what a node misses while
// it is disconnected, stopped or not yet started; and the failures of a node that has this node's NODE_ID
// (taken for this node's own). Counters are not in the log nor in snapshots: a restarted node starts with what
// it hears from then on.
//
// Nothing secret crosses: account names (`u:<email>`, `k:<key id>`) and client addresses, never a password,
// a secret or a hash. Anyone who may publish on the subject can count failures against any account, as
// anyone who may publish on the log subject can change any account: the cluster's NATS account is trusted.

import type { NatsConnection, Msg, Subscription } from '@nats-io/transport-node';
import type { BruteForceLimiter, FailureListener } from '../auth/limiter.js';
import { sharedFailureBytesMax, sharedFailuresSentPerSecondMax, sharedFailuresUnconfirmedMax } from '../config/limits.js';
import { packr } from '../persist/codec.js';

/** What sharing has done so far: for metrics and tests. */
export interface SharedFailures {
  /** Failures of this node published. */
  readonly sent: number;
  /** Failures of this node not published: disconnected, over the budget, or refused by the client. */
  readonly dropped: number;
  /** Failures of other nodes counted here. */
  readonly applied: number;
  /** Messages on the subject that were not a failure (malformed, too large). */
  readonly ignored: number;
  /** Stops publishing and applying; the limiter's listener is removed. */
  stop(): void;
}

/** The subject a cluster's nodes share failures on: next to the log's `<stream>.log`, outside the stream. */
export function failuresSubject(stream: string): string {
  return `${stream}.failures`;
}

/**
 * Publishes each failure the limiter counts and counts the failures other nodes publish, until stop(). Set the
 * limiter's onFailure listener; the connection is the node's (StreamLog.connection) and stays the caller's to close.
 */
export function shareFailures(nc: NatsConnection, stream: string, nodeId: string, limiter: BruteForceLimiter): SharedFailures {
  const subject = failuresSubject(stream);
  let connected = !nc.isClosed();
  let stopped = false;
  let windowStartMs = 0;
  let sentInWindow = 0;
  let unconfirmed = 0;
  let confirming = false;
  const stats = { sent: 0, dropped: 0, applied: 0, ignored: 0 };

  // One PING at a time: its PONG confirms every failure published before it.
  const confirm = (): void => {
    if (confirming || unconfirmed === 0 || stopped || nc.isClosed()) return;
    confirming = true;
    const covered = unconfirmed;
    nc.flush().then(
      () => { unconfirmed -= covered; },
      // Disconnected: the client dropped what it held; the next PING goes out with the reconnection.
      () => { unconfirmed -= covered; },
    ).finally(() => {
      confirming = false;
      confirm();
    });
  };

  const publish: FailureListener = (accountName, address) => {
    if (stopped || !connected) {
      stats.dropped++;
      return;
    }
    const nowMs = performance.now();
    if (nowMs - windowStartMs >= 1000) {
      windowStartMs = nowMs;
      sentInWindow = 0;
    }
    if (sentInWindow >= sharedFailuresSentPerSecondMax || unconfirmed >= sharedFailuresUnconfirmedMax) {
      stats.dropped++;
      return;
    }
    try {
      // Synchronous: the client queues the bytes and writes them in a microtask; nothing here waits for NATS.
      nc.publish(subject, packr.pack([nodeId, accountName, address]));
      sentInWindow++;
      unconfirmed++;
      stats.sent++;
      confirm();
    } catch {
      // Closed or draining (the node is stopping): the failure still counts here.
      stats.dropped++;
    }
  };

  const receive = (err: Error | null, msg: Msg): void => {
    if (err !== null || stopped) return;
    const failure = decodeFailure(msg.data);
    if (failure === undefined) {
      stats.ignored++;
      return;
    }
    if (failure.origin === nodeId) return; // this node's own, echoed by the server
    limiter.failedElsewhere(failure.accountName, failure.address);
    stats.applied++;
  };

  const subscription: Subscription = nc.subscribe(subject, { callback: receive });
  limiter.onFailure = publish;
  void watchConnection(nc, (now) => { connected = now; }, () => stopped);

  return {
    get sent() { return stats.sent; },
    get dropped() { return stats.dropped; },
    get applied() { return stats.applied; },
    get ignored() { return stats.ignored; },
    stop(): void {
      if (stopped) return;
      stopped = true;
      if (limiter.onFailure === publish) limiter.onFailure = undefined;
      try {
        subscription.unsubscribe();
      } catch {
        // The connection is closed already: so is the subscription.
      }
    },
  };
}

/** A failure message, or undefined for anything else: [origin node id, account name, address], three strings. */
function decodeFailure(data: Uint8Array): { origin: string; accountName: string; address: string } | undefined {
  if (data.length === 0 || data.length > sharedFailureBytesMax) return undefined;
  let value: unknown;
  try {
    value = packr.unpack(data);
  } catch {
    return undefined;
  }
  if (!Array.isArray(value) || value.length !== 3) return undefined;
  const [origin, accountName, address] = value as unknown[];
  if (typeof origin !== 'string' || typeof accountName !== 'string' || typeof address !== 'string') return undefined;
  return { origin, accountName, address };
}

/** Tells onChange whether the connection is up, as NATS reports it lost and back, until stopped() or the connection closes. */
async function watchConnection(nc: NatsConnection, onChange: (connected: boolean) => void, stopped: () => boolean): Promise<void> {
  try {
    for await (const status of nc.status()) {
      if (stopped()) return;
      if (status.type === 'disconnect' || status.type === 'staleConnection' || status.type === 'close') onChange(false);
      else if (status.type === 'reconnect') onChange(true);
    }
  } catch {
    // The status stream ended with the connection: nothing more will be sent on it.
  }
  onChange(false);
}
