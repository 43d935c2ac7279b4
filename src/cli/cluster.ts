// authctl commands on a cluster's NATS servers: `cluster status` (the stream and each node's applied sequence) and `cluster init` (an embedded data directory into an empty stream).

import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiKeySecrets, readKeyFile } from '../auth/apikey-secrets.js';
import { unpackPasswordHash } from '../auth/packed-hash.js';
import type { NodeStatus } from '../cluster/node-status.js';
import type { ClusterSeal } from '../cluster/seal.js';
import type { StreamLog } from '../cluster/stream-log.js';
import { ConfigError, loadConfig, settings, type ClusterConfig, type SettingName } from '../config/config.js';
import { walRecordBytesMax } from '../config/limits.js';
import type { LogRecord, Op } from '../domain/entities.js';
import { encodeRecord, packr } from '../persist/codec.js';
import { readKeyFingerprint } from '../persist/key-fingerprint.js';
import { acquireLock, LockError, LockUnavailableError } from '../persist/lock.js';
import { writeSnapshot } from '../persist/snapshot.js';
import { NodeStorage } from '../persist/storage.js';
import type { State } from '../store/state.js';
import {
  CommandError, positiveIntOption, requiredOption, stringOption, table, UsageError, type Command, type Options, type Output, type Values,
} from './command.js';
import { loadReadOnly, requireDataDir } from './datadir.js';

/** How long `cluster status` listens for nodes' answers: a node answers at once, unless its event loop is stuck. */
const statusAnswersWaitMs = 1_000;
/** A record's map around its ops ({seq, at, ops} with the widest integers and array header) plus its frame header. */
const recordOverheadBytes = 64;

/** The NATS clients, loaded when a cluster command runs instead of at every authctl start, which they would slow for every other command. */
async function loadNats() {
  const [streamLog, snapshotBucket, nodeStatus, seal] = await Promise.all([
    import('../cluster/stream-log.js'), import('../cluster/snapshot-bucket.js'), import('../cluster/node-status.js'), import('../cluster/seal.js'),
  ]);
  return { ...streamLog, ...snapshotBucket, ...nodeStatus, ...seal };
}
type Nats = Awaited<ReturnType<typeof loadNats>>;

/** Flags for the NATS settings (--nats-creds is CLUSTER_NATS_CREDS); a password or token only through the environment or a file, as a command line is visible to every user. */
const natsFlags: readonly (readonly [flag: string, setting: SettingName])[] = (Object.keys(settings) as SettingName[])
  .filter((name) => name.startsWith('CLUSTER_NATS_') && !['CLUSTER_NATS_SERVERS', 'CLUSTER_NATS_PASSWORD', 'CLUSTER_NATS_TOKEN'].includes(name))
  .map((name) => [name.slice('CLUSTER_'.length).toLowerCase().replace(/_/g, '-'), name]);
const natsOptions: Options = {
  nats: { type: 'string' }, stream: { type: 'string' }, 'key-file': { type: 'string' },
  ...Object.fromEntries(natsFlags.map(([flag]) => [flag, { type: flag === 'nats-insecure' ? 'boolean' : 'string' }])),
};
const natsHelp = `  --nats URLS        the cluster's NATS servers, comma-separated (CLUSTER_NATS_SERVERS)
  --stream NAME      the stream (CLUSTER_STREAM; default authd)
  --nats-user NAME, --nats-password-file FILE, --nats-token-file FILE, --nats-creds FILE,
  --nats-nkey-seed-file FILE, --nats-tls-ca FILE, --nats-tls-cert FILE, --nats-tls-key FILE, --nats-insecure
                     how to reach NATS, as a node does (docs/cluster.md): each is the setting of the same name
                     (--nats-creds is CLUSTER_NATS_CREDS), which the environment may give instead; a password
                     or token by value only there (CLUSTER_NATS_PASSWORD, CLUSTER_NATS_TOKEN)`;

/**
 * The server key as a node reads it: --key-file, else SERVER_KEY, else KEY_FILE (default ./secrets/server.key).
 * Everything on the cluster's NATS is sealed under it (src/cluster/seal.ts); forWhat names the key wanted, in a refusal.
 */
function serverKey(values: Values, forWhat: string): { secrets: ApiKeySecrets; source: string } {
  const keyFileOption = stringOption(values, 'key-file');
  const keyValue = keyFileOption === undefined ? process.env['SERVER_KEY'] : undefined;
  const keyFile = keyFileOption ?? process.env['KEY_FILE'] ?? settings.KEY_FILE.default;
  const source = keyValue !== undefined ? 'SERVER_KEY' : `key file ${keyFile}`;
  try {
    if (keyValue !== undefined) return { secrets: ApiKeySecrets.fromValue(keyValue), source };
    const key = readKeyFile(keyFile);
    if (key === undefined) throw new CommandError(`no key file at ${keyFile}: give ${forWhat} (--key-file, KEY_FILE or SERVER_KEY)`);
    return { secrets: ApiKeySecrets.fromKey(key, source), source };
  } catch (err) {
    if (err instanceof CommandError) throw err;
    throw new CommandError((err as Error).message, { cause: err });
  }
}

function clusterSeal(nats: Nats, secrets: ApiKeySecrets): ClusterSeal {
  return new nats.ClusterSeal(secrets.subkey(nats.clusterSealSubkeyLabel));
}

/** The cluster settings as a node reads them (src/config/config.ts), from the options or the environment. */
function clusterFrom(values: Values, replicas?: string): ClusterConfig {
  const env: NodeJS.ProcessEnv = {
    CLUSTER_NATS_SERVERS: stringOption(values, 'nats') ?? process.env['CLUSTER_NATS_SERVERS'],
    CLUSTER_STREAM: stringOption(values, 'stream') ?? process.env['CLUSTER_STREAM'],
    CLUSTER_REPLICAS: replicas ?? process.env['CLUSTER_REPLICAS'],
    CLUSTER_NATS_PASSWORD: process.env['CLUSTER_NATS_PASSWORD'],
    CLUSTER_NATS_TOKEN: process.env['CLUSTER_NATS_TOKEN'],
    // authctl is not a node: its name only labels the NATS connection.
    NODE_ID: 'authctl',
  };
  for (const [flag, setting] of natsFlags) {
    const value = values[flag];
    env[setting] = value === true ? 'true' : typeof value === 'string' ? value : process.env[setting];
  }
  let cluster: ClusterConfig | undefined;
  try {
    cluster = loadConfig(env, []).cluster;
  } catch (err) {
    if (err instanceof ConfigError) throw new UsageError(err.message.replace('CLUSTER_NATS_SERVERS', '--nats (CLUSTER_NATS_SERVERS)'));
    throw err;
  }
  if (cluster === undefined) throw new UsageError('--nats is required (or CLUSTER_NATS_SERVERS)');
  return cluster;
}

async function openStream(nats: Nats, cluster: ClusterConfig, createMissing: boolean): Promise<StreamLog> {
  try {
    return await nats.StreamLog.open({ servers: cluster.servers, nats: cluster.nats, stream: cluster.stream, replicas: cluster.replicas, nodeId: cluster.nodeId, createMissing, waitForServers: false });
  } catch (err) {
    // A credential file that cannot be read: nothing was tried on the servers.
    if (err instanceof ConfigError) throw new CommandError(err.message, { cause: err });
    if (err instanceof nats.StreamMissingError) throw new CommandError(`${err.message} on ${cluster.servers.join(',')}: no node has started on it yet, and no cluster init ran`, { cause: err });
    throw new CommandError(`cannot reach the stream ${cluster.stream} on ${cluster.servers.join(',')}: ${(err as Error).message}`, { cause: err });
  }
}

// ---- cluster status ----

interface StreamReplica {
  readonly server: string;
  readonly role: 'leader' | 'follower';
  readonly current: boolean;
  readonly offline: boolean;
  /** Operations this replica is behind the leader. */
  readonly lag: number;
}

interface ClusterStatus {
  readonly stream: {
    readonly name: string;
    readonly subject: string;
    readonly replicas: number;
    readonly messages: number;
    readonly bytes: number;
    readonly first_seq: number;
    readonly last_seq: number;
    readonly leader: string | null;
    readonly servers: StreamReplica[];
  };
  readonly nodes: (NodeStatus & { readonly lag: number })[];
  /** Answers that did not open under the key given (nodes with another server key, or not nodes at all). */
  readonly unreadable: number;
}

async function readStatus(nats: Nats, log: StreamLog, seal: ClusterSeal): Promise<ClusterStatus> {
  const info = await log.info();
  const { nodes, unreadable } = await nats.askNodeStatus(log.connection, log.stream, statusAnswersWaitMs, seal);
  const leader = info.cluster?.leader ?? null;
  const servers: StreamReplica[] = [];
  if (leader !== null) servers.push({ server: leader, role: 'leader', current: true, offline: false, lag: 0 });
  for (const peer of info.cluster?.replicas ?? []) {
    servers.push({ server: peer.name, role: 'follower', current: peer.current, offline: peer.offline === true, lag: peer.lag ?? 0 });
  }
  const lastSeq = info.state.last_seq;
  return {
    stream: {
      name: log.stream, subject: log.subject, replicas: info.config.num_replicas, messages: info.state.messages, bytes: info.state.bytes,
      first_seq: info.state.first_seq, last_seq: lastSeq, leader, servers,
    },
    // The stream's state was read first: a node may have applied more since, which is no lag.
    nodes: nodes.map((n) => ({ ...n, lag: Math.max(0, lastSeq - n.applied_seq) })),
    unreadable,
  };
}

function printStatus(io: Output, status: ClusterStatus): void {
  const s = status.stream;
  io.out(`stream ${s.name} (subject ${s.subject}): ${s.messages} messages, ${s.bytes} bytes, sequences ${s.first_seq}..${s.last_seq}, ${s.replicas} replicas`);
  if (s.servers.length === 0) io.out('servers: not clustered (one JetStream server holds the stream)');
  else {
    table(io, ['SERVER', 'ROLE', 'CURRENT', 'LAG'], s.servers.map((r) => [
      r.server, r.role, r.offline ? 'offline' : r.current ? 'yes' : 'no', String(r.lag),
    ]));
  }
  io.out('');
  if (status.nodes.length === 0) io.out(`nodes: none answered within ${statusAnswersWaitMs} ms`);
  else {
    table(io, ['NODE', 'APPLIED', 'LAG', 'READINESS', 'VERSION', 'STARTED'], status.nodes.map((n) => [
      n.node, String(n.applied_seq), String(n.lag), n.readiness, n.version ?? '-', n.started_at,
    ]));
  }
  if (status.unreadable > 0) io.out(`${status.unreadable} answers did not open under this server key: nodes with another key (give the cluster's: --key-file, KEY_FILE or SERVER_KEY)`);
}

const statusCommand: Command = {
  name: 'cluster status', summary: 'show the cluster\'s stream and each node\'s applied sequence and lag',
  help: `authctl cluster status [--nats URLS] [--stream NAME] [--nats-... credentials] [--key-file FILE] [--json]

Reads the stream's state from JetStream (messages, bytes, first and last sequence, the servers that hold
its replicas with their lag, the leader), then asks every node on <stream>.status and lists those that
answer within ${statusAnswersWaitMs} ms with the last sequence each has applied, its lag behind the stream's last
sequence, and its readiness. The answers are sealed under the cluster's server key: give it as the nodes
get it. Changes nothing; never creates the stream.

${natsHelp}
  --key-file FILE    the cluster's server key (KEY_FILE, or SERVER_KEY; default ./secrets/server.key)
  --json             print one JSON object {"stream": ..., "nodes": [...], "unreadable": N}`,
  options: { ...natsOptions, json: { type: 'boolean' } },
  async run(values, _p, io) {
    const cluster = clusterFrom(values);
    const { secrets } = serverKey(values, 'the cluster\'s server key');
    const nats = await loadNats();
    const seal = clusterSeal(nats, secrets);
    const log = await openStream(nats, cluster, false);
    try {
      let status: ClusterStatus;
      try {
        status = await readStatus(nats, log, seal);
      } catch (err) {
        if (err instanceof nats.StreamUnavailableError) throw new CommandError(err.message, { cause: err });
        throw err;
      }
      if (values['json'] === true) io.out(JSON.stringify(status));
      else printStatus(io, status);
    } finally {
      await log.close();
    }
    return 0;
  },
};

// ---- cluster init ----

/** The whole state as put ops, in the order apply() meets references: meta, organizations, applications, groups, users. */
export function* stateOps(state: State): Generator<Op> {
  if (state.meta !== undefined) yield { op: 'put', kind: 'meta', value: state.meta };
  for (const value of state.allOrganizations()) yield { op: 'put', kind: 'organization', value };
  for (const value of state.allApplications()) yield { op: 'put', kind: 'application', value };
  for (const value of state.allGroups()) yield { op: 'put', kind: 'group', value };
  // As the log carries them: the PHC string, not the State's packed form (src/auth/packed-hash.ts).
  for (const user of state.allUsers()) yield { op: 'put', kind: 'user', value: { ...user, passwordHash: unpackPasswordHash(user.passwordHash) } };
}

export interface InitMessage {
  readonly seq: number;
  readonly payload: Buffer;
  readonly ops: number;
}

function describeOp(op: Op): string {
  return op.op === 'put' && op.kind !== 'meta' ? `${op.kind} ${op.value.id}` : op.kind;
}

/**
 * The ops as stream messages from firstSeq on: one record per message, carrying the message's sequence, with
 * as many ops as fit both messageBytesMax (what NATS takes) and walRecordBytesMax (what a record may be).
 */
export function* initMessages(ops: Iterable<Op>, firstSeq: number, at: number, messageBytesMax: number): Generator<InitMessage> {
  const opsBytesMax = Math.min(messageBytesMax, walRecordBytesMax) - recordOverheadBytes;
  let seq = firstSeq;
  let batch: Op[] = [];
  let batchBytes = 0;
  const finish = (): InitMessage => {
    const record: LogRecord = { seq, at, ops: batch };
    const payload = encodeRecord(record);
    // The estimate above is an upper bound; a message past the limit would be refused by NATS after the earlier ones went in.
    if (payload.length > messageBytesMax) throw new Error(`invariant: message ${seq} is ${payload.length} bytes, over ${messageBytesMax}`);
    const message = { seq, payload, ops: batch.length };
    seq++;
    batch = [];
    batchBytes = 0;
    return message;
  };
  for (const op of ops) {
    const opBytes = packr.pack(op).length;
    if (opBytes > opsBytesMax) {
      throw new CommandError(`${describeOp(op)} is ${opBytes} bytes encoded, more than a stream message may hold (${opsBytesMax}); raise the NATS servers' max_payload`);
    }
    if (batchBytes + opBytes > opsBytesMax) yield finish();
    batch.push(op);
    batchBytes += opBytes;
  }
  if (batch.length > 0) yield finish();
}

/** The server key the data directory was written with: --key-file, KEY_FILE, or SERVER_KEY as the server reads them. */
async function dataKey(values: Values, dir: string, io: Output): Promise<ApiKeySecrets> {
  const { secrets, source } = serverKey(values, `the one ${dir} was written with`);
  const fingerprint = secrets.fingerprint();
  const recorded = await readKeyFingerprint(new NodeStorage(), dir).catch((err: unknown) => { throw new CommandError((err as Error).message, { cause: err }); });
  if (recorded === undefined) io.err(`note: ${dir} records no key fingerprint (an older version wrote it); taking ${source} as its key`);
  else if (recorded !== fingerprint) {
    throw new CommandError(`the ${source} has fingerprint ${fingerprint}, but ${dir} was written with a key of fingerprint ${recorded}: give that key (--key-file or KEY_FILE)`);
  }
  return secrets;
}

async function lockDataDir(dir: string): Promise<{ release(): Promise<void> }> {
  try {
    return await acquireLock(new NodeStorage(), dir);
  } catch (err) {
    if (err instanceof LockError) throw new CommandError(`${err.message}. Stop the server first (this command needs the directory to itself).`, { cause: err });
    if (err instanceof LockUnavailableError) throw new CommandError(err.message, { cause: err });
    throw err;
  }
}

/**
 * Appends message after message, each sealed as a node's are (its records carrying its sequence) and expecting the
 * one before it: a write by anyone else stops the copy at once.
 */
async function publishAll(nats: Nats, log: StreamLog, seal: ClusterSeal, messages: Iterable<InitMessage>, runId: string): Promise<{ messages: number; ops: number }> {
  const logSeal = new nats.LogSeal(seal, log.stream, log.subject);
  let count = 0;
  let ops = 0;
  for (const message of messages) {
    // StreamLog.publish sends a message with no answer again itself (the same Nats-Msg-Id makes that safe).
    try {
      await log.publish(logSeal.close(message.payload), message.seq - 1, `authctl-init-${runId}-${message.seq}`);
    } catch (err) {
      const partly = count === 0 ? 'nothing was written' : `the stream holds the first ${count} messages of the copy: delete the stream and run cluster init again`;
      if (err instanceof nats.WrongLastSequenceError) {
        throw new CommandError(`something else wrote to stream ${log.stream} while cluster init ran (at sequence ${message.seq}); ${partly}, with no node running`, { cause: err });
      }
      throw new CommandError(`message ${message.seq} was not stored: ${(err as Error).message}; ${partly}`, { cause: err });
    }
    count++;
    ops += message.ops;
  }
  return { messages: count, ops };
}

const initCommand: Command = {
  name: 'cluster init', summary: 'move an embedded data directory into an empty cluster stream',
  help: `authctl cluster init --from DIR [--key-file FILE] [--nats URLS] [--stream NAME] [--nats-... credentials] [--replicas N]

Moves the state of an embedded server's data directory into a cluster: takes the directory's lock
(refusing while a server runs on it), recovers its state read-only, and publishes every entity as put
records to the stream, creating the stream if missing; a stream that holds or held any message is
refused. Then records the server key's fingerprint in the cluster's bucket (<stream>-cluster), so that
only nodes with the same key start, and puts the same state there as the snapshot at the last message,
so that nodes load it instead of replaying every put. Every message and the snapshot are sealed under
that key, as nodes seal theirs. Start every node with that key file. The data directory is left as it
was. DIR may also be a cluster node's data directory (its snapshots), stopped: this moves a cluster into
a new stream (docs/operations.md, "Sealing an existing cluster").

  --from DIR         the embedded data directory
  --key-file FILE    the key it was written with (KEY_FILE, or SERVER_KEY; default ./secrets/server.key)
${natsHelp}
  --replicas N       replicas of a stream this command creates (CLUSTER_REPLICAS; default 3)`,
  options: { ...natsOptions, from: { type: 'string' }, replicas: { type: 'string' } },
  async run(values, _p, io) {
    const dir = requiredOption(values, 'from');
    const replicas = stringOption(values, 'replicas');
    if (replicas !== undefined) positiveIntOption(values, 'replicas', 3, 5);
    const cluster = clusterFrom(values, replicas);
    requireDataDir(dir);
    const secrets = await dataKey(values, dir, io);
    const fingerprint = secrets.fingerprint();
    const lock = await lockDataDir(dir);
    try {
      const state = await loadReadOnly(dir);
      const counts = state.counts();
      if (state.meta === undefined && counts.organizations + counts.applications + counts.groups + counts.users === 0) {
        throw new CommandError(`${dir} holds no entity: nothing to move (a node on an empty stream creates the first admin itself)`);
      }
      const nats = await loadNats();
      const seal = clusterSeal(nats, secrets);
      const log = await openStream(nats, cluster, true);
      try {
        const info = await log.info();
        if (info.state.messages > 0 || info.state.last_seq > 0) {
          throw new CommandError(`stream ${cluster.stream} is not empty (${info.state.messages} messages, last sequence ${info.state.last_seq}): cluster init moves a data directory only into a new stream`);
        }
        const bucket = await nats.SnapshotBucket.open(log.connection, cluster.stream, cluster.replicas, seal);
        try {
          // The stream is empty (above): nothing in it of an earlier, unsealed version.
          await bucket.checkKey(fingerprint, () => Promise.resolve(false));
        } catch (err) {
          if (err instanceof nats.UnsealedClusterError) {
            throw new CommandError(`bucket ${cluster.stream}-cluster still holds what an earlier version wrote unsealed: delete it as well as the stream, or choose a new stream name (docs/operations.md, "Sealing an existing cluster")`, { cause: err });
          }
          if (err instanceof ConfigError) throw new CommandError(err.message.replace('this node\'s server key', `the key of ${dir}`), { cause: err });
          throw err;
        }
        const messages = initMessages(stateOps(state), 1, state.lastAt, log.maxPayloadBytes - nats.sealOverheadBytes);
        const written = await publishAll(nats, log, seal, messages, randomBytes(8).toString('hex'));
        // The same state as the cluster's snapshot at the last message: nodes start from it instead of replaying every put
        // (1,000,000 Users: a load of seconds against a replay of half a minute).
        const scratch = mkdtempSync(join(tmpdir(), 'authd-cluster-init-'));
        try {
          const snapshot = await writeSnapshot(new NodeStorage(), scratch, { ...state.snapshotSource(), baseSeq: written.messages });
          await bucket.put(snapshot.path, written.messages);
        } finally {
          rmSync(scratch, { recursive: true, force: true });
        }
        const summary = `${counts.organizations} organizations, ${counts.applications} applications, ${counts.groups} groups, ${counts.users} users`;
        io.out(`moved ${summary} from ${dir} (state at its seq ${state.lastSeq}) into stream ${cluster.stream} as ${written.messages} messages ` +
          `(sequences 1..${written.messages}, ${written.ops} put ops); key fingerprint ${fingerprint} and a snapshot at sequence ${written.messages} put in bucket ${cluster.stream}-cluster`);
        io.out(`start each node with CLUSTER_NATS_SERVERS, CLUSTER_STREAM=${cluster.stream} and the same key; a change made in ${dir} from now on would not reach the cluster`);
      } finally {
        await log.close();
      }
    } finally {
      await lock.release();
    }
    return 0;
  },
};

export const clusterCommands: Command[] = [statusCommand, initCommand];
