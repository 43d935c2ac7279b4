// The NATS connection and the JetStream stream that holds the cluster's log: creating it, publishing to it with an expected last sequence, reading it in order, purging it.

import { connect, errors, type NatsConnection, type NodeConnectionOptions } from '@nats-io/transport-node';
import {
  DiscardPolicy, jetstream, jetstreamManager, JetStreamApiCodes, JetStreamApiError, RetentionPolicy, StorageType,
  type ConsumerMessages, type JetStreamClient, type JetStreamManager, type StreamInfo,
} from '@nats-io/jetstream';
import {
  clusterCloseMs, clusterConnectTimeoutMs, clusterDuplicateWindowMs, clusterFollowBytesMax, clusterFollowExpiresMs, clusterFollowHeartbeatMs, clusterPublishAttemptsMax, clusterPublishRetryMs, clusterPublishTimeoutMs,
  clusterReconnectWaitMs, clusterStartWaitMs,
} from '../config/limits.js';
import type { NatsAccess } from '../config/config.js';
import { anonymousNats, describeCredential, natsAuthOptions } from './nats-connect.js';

/** max_payload counts a message's headers too: ours are a message id and an expected sequence, well under this. */
const messageHeadersBytesMax = 1024;

/**
 * attempt() again while it fails for want of JetStream (a leader being elected, servers restarting), for up to waitMs;
 * a refusal that waiting cannot change (a wrong key, a missing stream) is thrown at once.
 */
export async function whileUnavailable<T>(attempt: () => Promise<T>, waitMs: number, permanent: (err: unknown) => boolean = () => false): Promise<T> {
  const deadline = performance.now() + waitMs;
  for (;;) {
    try {
      return await attempt();
    } catch (err) {
      if (err instanceof StreamMissingError || permanent(err) || performance.now() + clusterReconnectWaitMs > deadline) throw err;
      await new Promise((resolve) => setTimeout(resolve, clusterReconnectWaitMs));
    }
  }
}

/** What promise answers, or late()'s error once ms have passed without an answer (the promise is left to settle unheard). */
export async function within<T>(promise: Promise<T>, ms: number, late: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(late()), ms);
  });
  try {
    return await Promise.race([promise, expired]);
  } finally {
    clearTimeout(timer);
  }
}

/** Another node appended first: the stream's last sequence was not the one this node decided against. */
export class WrongLastSequenceError extends Error {
  readonly code = 'wrong_last_sequence';
  /** expected: the last sequence the write expected; lastSeq: the stream's last as its leader answered (undefined when it did not say). */
  constructor(readonly expected: number, readonly lastSeq: number | undefined) {
    super(`the stream moved past sequence ${expected}`);
    this.name = 'WrongLastSequenceError';
  }
}

/** The stream's last sequence in a wrong-last-sequence refusal (nats-server writes `wrong last sequence: <seq>`), if it names one. */
function lastSeqOf(err: JetStreamApiError): number | undefined {
  const m = /wrong last sequence: (\d+)/.exec(err.message);
  return m === null ? undefined : Number(m[1]);
}

/** The stream could not take or confirm a write: NATS unreachable, no JetStream quorum, or no answer in time. */
export class StreamUnavailableError extends Error {
  readonly code = 'cluster_unavailable';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StreamUnavailableError';
  }
}

/** The stream does not exist, and this StreamLog was opened to look, not to create it. */
export class StreamMissingError extends Error {
  readonly code = 'stream_missing';
  constructor(readonly stream: string) {
    super(`stream ${stream} does not exist`);
    this.name = 'StreamMissingError';
  }
}

export interface StreamLogOptions {
  readonly servers: readonly string[];
  readonly stream: string;
  readonly replicas: number;
  readonly nodeId: string;
  /** The credential and TLS to connect with (ClusterConfig.nats); undefined: none, as for a NATS server on this machine. */
  readonly nats?: NatsAccess;
  /** Told whenever the connection to NATS is lost or comes back. */
  readonly onConnection?: (connected: boolean) => void;
  /** false: a missing stream is a StreamMissingError instead of being created (`authctl cluster status` only looks). */
  readonly createMissing?: boolean;
  /** false: fail when no server answers the first attempt, instead of waiting for one (authctl, which an operator waits on). */
  readonly waitForServers?: boolean;
  /** Keep trying to reach the stream for this long while JetStream is unavailable (a node starting beside restarting servers). */
  readonly startWaitMs?: number;
}

/** Reading the stream from a sequence on: messages in order, each once, until stop(). */
export interface StreamFollower {
  stop(): void;
  /** Drops the reader and starts a new one at the next sequence. */
  restart(): void;
}

export class StreamLog {
  readonly subject: string;
  #connected = true;
  /** Readers to start anew after a reconnect: the server their consumer lived on may be the one that went away. */
  readonly #followers = new Set<StreamFollower>();

  private constructor(
    private readonly nc: NatsConnection,
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    readonly stream: string,
  ) {
    this.subject = `${stream}.log`;
  }

  /**
   * Connects and makes sure the stream exists, creating it if missing. A credential file that cannot be read is a
   * ConfigError before any socket is opened. While no server answers, every server is tried again for startWaitMs
   * (clusterStartWaitMs by default; one round with waitForServers false); credentials or a certificate refused end
   * it at once, with what to check.
   */
  static async open(opts: StreamLogOptions): Promise<StreamLog> {
    const access = opts.nats ?? anonymousNats;
    const nc = await connectWithin({
      servers: [...opts.servers], name: `authd-${opts.nodeId}`, timeout: clusterConnectTimeoutMs,
      maxReconnectAttempts: -1, reconnectTimeWait: clusterReconnectWaitMs, ...natsAuthOptions(access),
    }, opts.waitForServers === false ? 0 : opts.startWaitMs ?? clusterStartWaitMs, access);
    try {
      // The manager too: making it asks JetStream for the account's info, which is refused while servers elect a meta leader.
      const start = async (): Promise<StreamLog> => {
        const jsm = await jetstreamManager(nc, { timeout: clusterPublishTimeoutMs });
        const log = new StreamLog(nc, jetstream(nc, { timeout: clusterPublishTimeoutMs }), jsm, opts.stream);
        await log.#ensureStream(opts.replicas, opts.createMissing ?? true);
        return log;
      };
      const log = await (opts.startWaitMs === undefined ? start() : whileUnavailable(start, opts.startWaitMs));
      log.#watch(opts.onConnection);
      return log;
    } catch (err) {
      await nc.close().catch(() => undefined);
      throw err;
    }
  }

  get connected(): boolean {
    return this.#connected;
  }

  /** The largest payload a message of ours may have: the servers' max_payload (1 MiB unless configured), less room for its headers. */
  get maxPayloadBytes(): number {
    return (this.nc.info?.max_payload ?? 1024 * 1024) - messageHeadersBytesMax;
  }

  /** The connection, for the other NATS users of a node (the snapshot bucket, shared failures). */
  get connection(): NatsConnection {
    return this.nc;
  }

  /** The stream's last sequence as JetStream reports it now (0 for an empty stream). */
  async lastSeq(): Promise<number> {
    return (await this.info()).state.last_seq;
  }

  /** Everything JetStream tells of the stream: its state, configuration, and which servers hold its replicas. */
  async info(): Promise<StreamInfo> {
    try {
      return await this.jsm.streams.info(this.stream);
    } catch (err) {
      throw unavailable(err, 'cannot read the stream state');
    }
  }

  /** The first sequence the stream still holds (1 until it was purged below a snapshot). */
  async firstSeq(): Promise<number> {
    return (await this.info()).state.first_seq;
  }

  /** The message the stream holds at seq, or undefined when it holds none there (purged, deleted, or not yet written). */
  async message(seq: number): Promise<Uint8Array | undefined> {
    try {
      return (await this.jsm.streams.getMessage(this.stream, { seq }))?.data ?? undefined;
    } catch (err) {
      throw unavailable(err, `cannot read message ${seq} of the stream`);
    }
  }

  /**
   * Appends payload as the message right after expectedLastSeq; its sequence once JetStream has stored it on a quorum.
   * A retry with the same msgId inside the duplicate window answers the first write's sequence instead of a second copy.
   */
  async publish(payload: Uint8Array, expectedLastSeq: number, msgId: string): Promise<number> {
    for (let attempt = 1; ; attempt++) {
      try {
        const ack = await this.js.publish(this.subject, payload, { msgID: msgId, expect: { lastSequence: expectedLastSeq }, timeout: clusterPublishTimeoutMs });
        return ack.seq;
      } catch (err) {
        if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamWrongLastSequence) throw new WrongLastSequenceError(expectedLastSeq, lastSeqOf(err));
        // No answer or no leader (a server gone, an election): the same message again, which JetStream stores at most once.
        if (attempt >= clusterPublishAttemptsMax) throw unavailable(err, 'the stream did not take the write');
        await new Promise((resolve) => setTimeout(resolve, clusterPublishRetryMs));
      }
    }
  }

  /** Removes every message below seq (kept snapshots cover them). */
  async purgeBelow(seq: number): Promise<void> {
    await this.jsm.streams.purge(this.stream, { seq });
  }

  /**
   * Delivers every message from fromSeq on, in order, to onMessage (synchronously, one at a time), until stop().
   * onMessage may throw only to stop the process: the message is not delivered again. The reader is started anew
   * from the next sequence whenever it ends, and by restart() (the owner's watchdog, when it sees no progress).
   */
  async follow(fromSeq: number, onMessage: (seq: number, data: Uint8Array) => void): Promise<StreamFollower> {
    let next = Math.max(1, fromSeq);
    let stopped = false;
    let current: ConsumerMessages | undefined;
    /** Which reader is the follower's: one opened before a later restart is stopped, and what it still delivers is dropped. */
    let generation = 0;
    const open = async (mine: number): Promise<void> => {
      const consumer = await this.js.consumers.get(this.stream, { opt_start_seq: next, filter_subjects: this.subject });
      if (stopped || mine !== generation) return;
      // Short expiry and heartbeat: a reader on a server that died notices in about two heartbeats rather than the defaults' 30 s.
      const messages = await consumer.consume({
        callback: (m) => {
          if (mine !== generation || m.seq < next) return;
          next = m.seq + 1;
          onMessage(m.seq, m.data);
        },
        expires: clusterFollowExpiresMs, idle_heartbeat: clusterFollowHeartbeatMs, max_bytes: clusterFollowBytesMax,
      });
      if (stopped || mine !== generation) {
        void messages.stop();
        return;
      }
      current = messages;
      const ended = (): void => { if (!stopped && current === messages) reopen(); };
      void messages.closed().then(ended, ended);
      // Missed heartbeats: its server is gone or paused. A new reader at once, rather than the client's own checks
      // (a consumer info asked of a server that may not answer, retried with backoff), which took seconds more.
      void (async () => {
        for await (const status of messages.status()) {
          if (status.type === 'heartbeats_missed') return ended();
        }
      })().catch(() => undefined);
    };
    const reopen = (): void => {
      if (stopped) return;
      const mine = ++generation;
      const old = current;
      current = undefined;
      void old?.stop();
      open(mine).catch(() => {
        if (mine === generation) setTimeout(reopen, clusterReconnectWaitMs);
      });
    };
    await open(generation);
    const follower: StreamFollower = {
      stop: () => {
        stopped = true;
        this.#followers.delete(follower);
        void current?.stop();
      },
      restart: reopen,
    };
    this.#followers.add(follower);
    return follower;
  }

  /** Drains the connection (what was published goes out), for at most clusterCloseMs: without NATS a drain never ends. */
  async close(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<void>((resolve) => { timer = setTimeout(resolve, clusterCloseMs); });
    await Promise.race([this.nc.drain().catch(() => undefined), late]);
    clearTimeout(timer);
    if (!this.nc.isClosed()) await this.nc.close().catch(() => undefined);
  }

  async #ensureStream(replicas: number, createMissing: boolean): Promise<void> {
    try {
      await this.jsm.streams.info(this.stream);
      return;
    } catch (err) {
      if (!(err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound)) throw unavailable(err, `cannot read stream ${this.stream}`);
    }
    if (!createMissing) throw new StreamMissingError(this.stream);
    try {
      await this.jsm.streams.add({
        name: this.stream, subjects: [this.subject], storage: StorageType.File, num_replicas: replicas,
        retention: RetentionPolicy.Limits, discard: DiscardPolicy.Old, duplicate_window: clusterDuplicateWindowMs * 1_000_000,
      });
    } catch (err) {
      // Another node created it at the same moment: its stream is the one.
      await this.jsm.streams.info(this.stream).catch(() => { throw unavailable(err, `cannot create stream ${this.stream}`); });
    }
  }

  #watch(onConnection: ((connected: boolean) => void) | undefined): void {
    void (async () => {
      for await (const status of this.nc.status()) {
        const connected = status.type === 'reconnect' ? true : status.type === 'disconnect' ? false : undefined;
        if (connected === undefined || connected === this.#connected) continue;
        this.#connected = connected;
        if (connected) for (const follower of this.#followers) follower.restart();
        onConnection?.(connected);
      }
    })();
  }
}

/**
 * The first connection, tried again while the servers do not answer, for up to waitMs. nats.js's own waiting
 * (waitOnFirstConnect) retries for ever whatever the error, so a certificate a server refuses would hang the start;
 * once connected, nats.js reconnects by itself for ever.
 */
async function connectWithin(options: NodeConnectionOptions & { servers: string[] }, waitMs: number, access: NatsAccess): Promise<NatsConnection> {
  const deadline = performance.now() + waitMs;
  for (;;) {
    try {
      return await connect({ ...options, waitOnFirstConnect: false });
    } catch (err) {
      const refused = refusal(err, access);
      if (refused !== undefined) throw new StreamUnavailableError(refused, { cause: err });
      if (performance.now() + clusterReconnectWaitMs > deadline) {
        const why = err instanceof Error ? err.message : String(err);
        const within = waitMs > 0 ? ` within ${Math.round(waitMs / 1000)} s` : '';
        throw new StreamUnavailableError(`no NATS server answered (${options.servers.join(',')})${within}: ${why}${timeoutHint(err, access)}`, { cause: err });
      }
      await new Promise((resolve) => setTimeout(resolve, clusterReconnectWaitMs));
    }
  }
}

/**
 * A server that verifies client certificates ends the connection of a client whose certificate it refuses (or that
 * shows none) after the TLS handshake, without a word: the client sees no answer.
 */
function timeoutHint(err: unknown, access: NatsAccess): string {
  if (!(err instanceof errors.TimeoutError) || access.tls === undefined) return '';
  return access.tls.certFile === undefined
    ? '; a server that verifies client certificates ends the connection of a client without one this way: set CLUSTER_NATS_TLS_CERT and CLUSTER_NATS_TLS_KEY'
    : '; a server that refuses the client certificate (CLUSTER_NATS_TLS_CERT) ends the connection this way: check that its CA signed it';
}

/** What to say when err is a refusal that trying again cannot change (credentials, certificates, TLS); undefined otherwise. */
function refusal(err: unknown, access: NatsAccess): string | undefined {
  if (err instanceof errors.AuthorizationError || err instanceof errors.UserAuthenticationExpiredError) {
    return `NATS refused this node's credentials (${err.message}): ${describeCredential(access)}`;
  }
  const code = (err as { code?: unknown } | undefined)?.code;
  if (typeof code === 'string' && /^ERR_(TLS|SSL)_|CERT|SELF_SIGNED|UNABLE_TO_/.test(code)) {
    return `TLS with the NATS server failed (${(err as Error).message}): check CLUSTER_NATS_TLS_CA (the CA that signed the servers' certificates) and the servers' certificates (their names or addresses, their dates)`;
  }
  if ((err instanceof errors.ConnectionError || err instanceof errors.InvalidArgumentError) && /\btls\b/i.test(err.message)) {
    return `the NATS server does not offer the TLS this node requires (${err.message}): enable TLS on the servers, or unset CLUSTER_NATS_TLS_* and use nats:// URLs`;
  }
  return undefined;
}

function unavailable(err: unknown, what: string): StreamUnavailableError {
  if (err instanceof StreamUnavailableError) return err;
  const why = err instanceof Error ? err.message : String(err);
  return new StreamUnavailableError(`${what}: ${why}`, { cause: err });
}
