// Brute-force failures shared by the nodes of a cluster: each one this node's limiter counts is published, sealed, on the core NATS subject `<stream>.failures`, and each one another node publishes is counted here.
//
// Without it, an attacker who spreads guesses over N nodes gets N times the failure factor before an account
// locks. With it, every node counts every node's failures (BruteForceLimiter.failedElsewhere), so sequential
// guesses lock the account at the configured count wherever they land, give or take the ones still crossing
// NATS (a millisecond or so on one network). The reservation of slots stays per node: guesses in flight at the
// same moment on several nodes can still be evaluated before each hears of the others' failures.
//
// Cost: one message per failure (msgpack [sender, counter, sent at, account, address], sealed: about 100 bytes for
// an email and an IPv4 address, plus NATS's PUB line), sealed and published synchronously from failed() with no wait
// (one AES-GCM of those bytes, a few microseconds), and one PING at a time to confirm them; every other node opens it
// (the same) and applies it in O(1) on three counters. Successes cost nothing: nothing is sent or read for them.
//
// Lost, on purpose (core NATS, no JetStream: a lost failure only lets one more guess through somewhere):
// failures over sharedFailuresSentPerSecondMax a second; failures while this node is disconnected from NATS
// (dropped at once: authentication never waits for NATS, and the client would hold them only to discard them
// at its next reconnection attempt); failures beyond sharedFailuresUnconfirmedMax published since the server
// last answered a PING (a connection that died without a word, until NATS notices); and what a node misses while
// it is disconnected, stopped or not yet started. Counters are not in the log nor in snapshots: a restarted node
// starts with what it hears from then on.
//
// Sealed under the server key (src/cluster/seal.ts), for this stream and subject: whoever may publish on the subject
// without the key can neither read the account names (`u:<email>`, `k:<key id>`) and client addresses nor make a
// failure that counts; what does not open is counted in authd_cluster_rejected_messages_total{kind="failure"} and
// never reaches the limiter. Nothing secret is in a failure anyway: never a password, a secret or a hash. A captured
// failure published again does not count again: the sender is a random id per process and its counter grows by one
// per failure sent, and a receiver refuses a failure whose counter is not above the highest it had from that sender,
// or that was sent more than sharedFailureWindowMs before or after its own clock's now (nodes' clocks must agree
// within that), which lets it forget a sender not heard from for that long. A node skips its own failures (its
// sender id) as the server echoes them.

import { randomBytes } from 'node:crypto';
import type { NatsConnection, Msg, Subscription } from '@nats-io/transport-node';
import type { BruteForceLimiter, FailureListener } from '../auth/limiter.js';
import {
  sharedFailureBytesMax, sharedFailureSendersMax, sharedFailuresSentPerSecondMax, sharedFailuresUnconfirmedMax, sharedFailureWindowMs,
} from '../config/limits.js';
import { packr } from '../persist/codec.js';
import type { RejectedMessages } from './rejected.js';
import { sealContext, type ClusterSeal } from './seal.js';

/** Random bytes of a sender's id: two processes never share one. */
const senderIdBytes = 8;

/** What sharing has done so far: for metrics and tests. */
export interface SharedFailures {
  /** Failures of this node published. */
  readonly sent: number;
  /** Failures of this node not published: disconnected, over the budget, or refused by the client. */
  readonly dropped: number;
  /** Failures of other nodes counted here. */
  readonly applied: number;
  /** Messages that opened but were not a failure (a format this version does not know). */
  readonly ignored: number;
  /** Messages refused: too large, not opening under the key, replayed, or outside the time window. */
  readonly rejected: number;
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
 * Failures are sealed and opened with seal; those refused are told to rejected.
 */
export function shareFailures(nc: NatsConnection, stream: string, limiter: BruteForceLimiter, seal: ClusterSeal, rejected: RejectedMessages): SharedFailures {
  const subject = failuresSubject(stream);
  const context = sealContext('failure', stream, subject);
  const sender = randomBytes(senderIdBytes).toString('hex');
  const freshness = new Freshness();
  let counter = 0;
  let connected = !nc.isClosed();
  let stopped = false;
  let windowStartMs = 0;
  let sentInWindow = 0;
  let unconfirmed = 0;
  let confirming = false;
  const stats = { sent: 0, dropped: 0, applied: 0, ignored: 0, rejected: 0 };
  const refuse = (detail: Record<string, unknown>): void => {
    stats.rejected++;
    rejected.reject('failure', { subject, ...detail });
  };

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
      nc.publish(subject, seal.seal(packr.pack([sender, ++counter, Date.now(), accountName, address]), context));
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
    if (msg.data.length > sharedFailureBytesMax) return refuse({ bytes: msg.data.length, reason: 'too large' });
    const opened = seal.open(msg.data, context);
    if (opened === undefined) return refuse({ bytes: msg.data.length, reason: 'does not open' });
    const failure = decodeFailure(opened);
    if (failure === undefined) {
      stats.ignored++;
      return;
    }
    if (failure.sender === sender) return; // this node's own, echoed by the server
    const refusal = freshness.check(failure, Date.now());
    if (refusal !== undefined) return refuse({ sender: failure.sender, counter: failure.counter, reason: refusal });
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
    get rejected() { return stats.rejected; },
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

interface Failure {
  readonly sender: string;
  readonly counter: number;
  readonly sentAtMs: number;
  readonly accountName: string;
  readonly address: string;
}

/** An opened failure message, or undefined for anything else: [sender, counter, sent at (ms since the epoch), account name, address]. */
function decodeFailure(data: Uint8Array): Failure | undefined {
  let value: unknown;
  try {
    value = packr.unpack(data);
  } catch {
    return undefined;
  }
  if (!Array.isArray(value) || value.length !== 5) return undefined;
  const [sender, counter, sentAtMs, accountName, address] = value as unknown[];
  if (typeof sender !== 'string' || !Number.isSafeInteger(counter) || typeof sentAtMs !== 'number' || !Number.isFinite(sentAtMs)) return undefined;
  if (typeof accountName !== 'string' || typeof address !== 'string') return undefined;
  return { sender, counter: counter as number, sentAtMs, accountName, address };
}

/** Which failures are new: per sender, the highest counter heard and the latest time it was sent, for sharedFailureWindowMs. */
class Freshness {
  readonly #senders = new Map<string, { counter: number; sentAtMs: number }>();

  /** Why the failure is refused (sent before, or outside the window), or undefined when it is new; a new one is remembered. */
  check(failure: Failure, nowMs: number): string | undefined {
    if (Math.abs(nowMs - failure.sentAtMs) > sharedFailureWindowMs) return 'sent outside the time window';
    const seen = this.#senders.get(failure.sender);
    if (seen !== undefined) {
      if (failure.counter <= seen.counter) return 'sent before (a replay)';
      seen.counter = failure.counter;
      if (failure.sentAtMs > seen.sentAtMs) seen.sentAtMs = failure.sentAtMs;
      return undefined;
    }
    this.#forget(nowMs);
    // Only a node with the key makes a sender; this many within the window would be a process starting in a loop.
    if (this.#senders.size >= sharedFailureSendersMax) this.#senders.delete(this.#senders.keys().next().value!);
    this.#senders.set(failure.sender, { counter: failure.counter, sentAtMs: failure.sentAtMs });
    return undefined;
  }

  /**
   * Drops senders whose latest failure was sent longer than the window ago: any failure of theirs heard again was
   * sent no later than that one, so the window refuses it.
   */
  #forget(nowMs: number): void {
    for (const [sender, seen] of this.#senders) {
      if (nowMs - seen.sentAtMs > sharedFailureWindowMs) this.#senders.delete(sender);
    }
  }
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
