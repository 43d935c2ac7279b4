// Run-time configuration from the environment and the same names as command-line flags (--port 8080, --data-dir=...).

import { isIPv4, isIPv6 } from 'node:net';
import { availableParallelism, hostname } from 'node:os';
import {
  argon2IterationsDefault, argon2MemoryKiBDefault, argon2ParallelismDefault, bodyBytesMax,
  bruteForceAddressFailureFactorDefault, bruteForceFailureFactorDefault, bruteForceFailureResetMsDefault,
  bruteForceMaxWaitMsDefault, bruteForceTarpitMaxMsDefault, bruteForceTarpitStepMsDefault, bruteForceWaitIncrementMsDefault,
  snapshotEveryRecordsDefault, snapshotEverySecondsDefault, verifyCacheIdleMsDefault, verifyCacheSettingMsMax,
  verifyCacheTtlMsDefault,
} from './limits.js';

export type FsyncPolicy = 'always' | 'interval' | 'off';

export interface Config {
  readonly port: number;
  readonly host: string;
  readonly dataDir: string;
  /** Undefined: http://HOST:PORT with the port actually bound. */
  readonly publicUrl: string | undefined;
  readonly adminEmail: string | undefined;
  readonly adminPassword: string | undefined;
  readonly fsync: FsyncPolicy;
  readonly logLevel: string;
  readonly keyFile: string;
  readonly serverKey: string | undefined;
  readonly hashWorkers: number;
  readonly argon2: { memoryKiB: number; iterations: number; parallelism: number };
  /** The longest a password verification is remembered, counted from the argon2 check itself; 0: no cache. */
  readonly verifyCacheTtlMs: number;
  /** A remembered verification unused this long is forgotten; 0: no cache. */
  readonly verifyCacheIdleMs: number;
  readonly snapshotEveryRecords: number;
  readonly snapshotEverySeconds: number;
  readonly bodyBytesMax: number;
  readonly realm: string;
  readonly frontEnd: FrontEndSetting;
  readonly bruteForce: {
    /** Failures per account before each lockout step; 0: no account lockout. */
    readonly failureFactor: number;
    /** Failures per client address before each lockout step; 0: no address lockout. */
    readonly addressFailureFactor: number;
    readonly waitIncrementMs: number;
    readonly maxWaitMs: number;
    readonly failureResetMs: number;
    /** First tarpit delay of a pair; 0: no tarpit. */
    readonly tarpitStepMs: number;
    readonly tarpitMaxMs: number;
  };
  /** --repair: repair a damaged data directory (back up, truncate at the damage, report) and exit. */
  readonly repair: boolean;
  /** Cluster mode (src/cluster/): the log is a replicated NATS JetStream stream; undefined: the embedded log. */
  readonly cluster: ClusterConfig | undefined;
}

export interface ClusterConfig {
  /** NATS server URLs, e.g. nats://10.0.0.1:4222, with any userinfo taken out (it is in `nats`): safe to print. */
  readonly servers: readonly string[];
  readonly stream: string;
  readonly replicas: number;
  readonly nodeId: string;
  /** How the connection proves who it is and is encrypted (src/cluster/nats-connect.ts turns it into the client's options). */
  readonly nats: NatsAccess;
}

/**
 * A secret setting's value. Printed, logged (pino serializes with toJSON) or inspected it shows as `(secret)`, so
 * that a config or an error object handed to a logger cannot carry it by accident; reveal() is for the NATS client.
 */
export class Secret {
  readonly #value: string;
  constructor(value: string) {
    this.#value = value;
  }
  reveal(): string {
    return this.#value;
  }
  toJSON(): string {
    return '(secret)';
  }
  toString(): string {
    return '(secret)';
  }
  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return '(secret)';
  }
}

/** A secret given in the environment, or the file that holds it (read when the connection is made, by src/cluster/nats-connect.ts). */
export type SecretSource = { readonly value: Secret } | { readonly file: string; readonly setting: SettingName };

/** The one kind of credential a connection shows NATS, and the settings it came from (for messages). */
export type NatsCredential =
  | { readonly kind: 'none' }
  | { readonly kind: 'user'; readonly user: string; readonly password: SecretSource; readonly from: string }
  | { readonly kind: 'token'; readonly token: SecretSource; readonly from: string }
  | { readonly kind: 'creds'; readonly file: string }
  | { readonly kind: 'nkey'; readonly seedFile: string };

export interface NatsTls {
  /** The CA that signed the servers' certificates; undefined: the system's CAs. */
  readonly caFile: string | undefined;
  /** A client certificate and its key, both or neither. */
  readonly certFile: string | undefined;
  readonly keyFile: string | undefined;
}

export interface NatsAccess {
  readonly credential: NatsCredential;
  /** Undefined: TLS when a server offers it (nats.js's default), plain otherwise; set: TLS required, the server's certificate verified. */
  readonly tls: NatsTls | undefined;
}

/** Every setting, its default and what it does: the README's configuration table is this list. */
export const settings = {
  PORT: { default: '8080', help: 'TCP port to listen on (0 picks a free one).' },
  HOST: { default: '0.0.0.0', help: 'Address to listen on.' },
  DATA_DIR: { default: './data', help: 'Directory of the write-ahead log and snapshots.' },
  PUBLIC_URL: { default: 'http://HOST:PORT', help: 'Base of every href in responses, and the access tokens\' issuer.' },
  ADMIN_EMAIL: { default: 'admin@example.com', help: 'First admin User, created on first start only.' },
  ADMIN_PASSWORD: { default: '(generated, logged once)', help: 'Password of the first admin User, first start only.' },
  FSYNC: { default: 'always', help: 'always: reply after fdatasync; interval: fdatasync every 1 s (up to 1 s of acknowledged writes can be lost on power failure); off: leave it to the OS.' },
  LOG_LEVEL: { default: 'info', help: 'pino level: fatal, error, warn, info, debug, trace, silent.' },
  KEY_FILE: { default: './secrets/server.key', help: 'Server key from which API Key secrets are derived; created on first start. Keep it outside the data directory and back it up separately.' },
  SERVER_KEY: { default: '(unset)', help: 'The server key itself (base64 or hex, 32+ bytes), instead of KEY_FILE.' },
  HASH_WORKERS: { default: 'CPU count - 1 (at least 1)', help: 'Worker threads for argon2id; one core is left to the event loop.' },
  ARGON2_MEMORY_KIB: { default: String(argon2MemoryKiBDefault), help: 'argon2id memory cost (KiB).' },
  ARGON2_ITERATIONS: { default: String(argon2IterationsDefault), help: 'argon2id time cost.' },
  ARGON2_PARALLELISM: { default: String(argon2ParallelismDefault), help: 'argon2id parallelism.' },
  VERIFY_CACHE_TTL_MS: { default: String(verifyCacheTtlMsDefault), help: 'The longest a successful password verification is remembered, counted from the argon2 check itself however often it is used since (0 turns the cache off).' },
  VERIFY_CACHE_IDLE_MS: { default: String(verifyCacheIdleMsDefault), help: 'A remembered password verification that goes unused this long is forgotten; above VERIFY_CACHE_TTL_MS it changes nothing (0 turns the cache off).' },
  SNAPSHOT_EVERY_RECORDS: { default: String(snapshotEveryRecordsDefault), help: 'Take a snapshot after this many log records.' },
  SNAPSHOT_EVERY_SECONDS: { default: String(snapshotEverySecondsDefault), help: 'Take a snapshot at least this often when something changed.' },
  BODY_BYTES_MAX: { default: String(bodyBytesMax), help: 'Largest request body (bytes); larger ones get 413.' },
  REALM: { default: 'authd', help: 'Realm named in WWW-Authenticate.' },
  FRONT_END: { default: 'auto', help: 'HTTP front end: auto (uWebSockets.js where its traceable build loads, else node:http), uws (uWebSockets.js, any pinned build, or refuse to start), node (node:http).' },
  BRUTE_FORCE_FAILURE_FACTOR: { default: String(bruteForceFailureFactorDefault), help: 'Failed authentications of one account before each temporary lockout (0: none).' },
  BRUTE_FORCE_ADDRESS_FAILURE_FACTOR: { default: String(bruteForceAddressFailureFactorDefault), help: 'Failed authentications from one client address (IPv6: its /64) before each slowing step of that address; an address is never locked out (0: no slowing).' },
  BRUTE_FORCE_WAIT_INCREMENT_S: { default: String(bruteForceWaitIncrementMsDefault / 1000), help: 'Each lockout lasts this much longer than the one before.' },
  BRUTE_FORCE_MAX_WAIT_S: { default: String(bruteForceMaxWaitMsDefault / 1000), help: 'The longest lockout.' },
  BRUTE_FORCE_FAILURE_RESET_S: { default: String(bruteForceFailureResetMsDefault / 1000), help: 'Failures are forgotten after this long without one.' },
  BRUTE_FORCE_TARPIT_MS: { default: String(bruteForceTarpitStepMsDefault), help: 'Delay before the next attempt of an (account, address) pair after its first failure, doubling per failure; also the spacing of a slowed address\'s attempts, doubling per step (0: neither).' },
  BRUTE_FORCE_TARPIT_MAX_MS: { default: String(bruteForceTarpitMaxMsDefault), help: 'The longest tarpit delay and address spacing.' },
  CLUSTER_NATS_SERVERS: { default: '(unset: embedded log)', help: 'Comma-separated NATS server URLs: cluster mode, the log is a replicated JetStream stream shared by every node (docs/cluster.md).' },
  CLUSTER_NATS_USER: { default: '(unset)', help: 'Cluster mode: the NATS user; with CLUSTER_NATS_PASSWORD or CLUSTER_NATS_PASSWORD_FILE.' },
  CLUSTER_NATS_PASSWORD: { default: '(unset)', help: 'Cluster mode: the NATS user\'s password (environment only; never logged).' },
  CLUSTER_NATS_PASSWORD_FILE: { default: '(unset)', help: 'Cluster mode: a file holding the NATS user\'s password (e.g. a systemd credential), instead of CLUSTER_NATS_PASSWORD.' },
  CLUSTER_NATS_TOKEN: { default: '(unset)', help: 'Cluster mode: a NATS authentication token (environment only; never logged).' },
  CLUSTER_NATS_TOKEN_FILE: { default: '(unset)', help: 'Cluster mode: a file holding the NATS token, instead of CLUSTER_NATS_TOKEN.' },
  CLUSTER_NATS_CREDS: { default: '(unset)', help: 'Cluster mode: a NATS .creds file (user JWT and nkey seed, for servers in operator mode).' },
  CLUSTER_NATS_NKEY_SEED_FILE: { default: '(unset)', help: 'Cluster mode: a file holding the NATS user\'s nkey seed (SU...).' },
  CLUSTER_NATS_TLS_CA: { default: '(system CAs)', help: 'Cluster mode: the CA certificate (PEM file) that signed the NATS servers\' certificates; setting any CLUSTER_NATS_TLS_* requires TLS.' },
  CLUSTER_NATS_TLS_CERT: { default: '(unset)', help: 'Cluster mode: a client certificate (PEM file) shown to NATS; with CLUSTER_NATS_TLS_KEY.' },
  CLUSTER_NATS_TLS_KEY: { default: '(unset)', help: 'Cluster mode: the client certificate\'s private key (PEM file).' },
  CLUSTER_NATS_INSECURE: { default: 'false', help: 'Cluster mode: true lets a node connect without any NATS credential to a server that is not on this machine (anyone who reaches it can then read and write the cluster\'s log).' },
  CLUSTER_STREAM: { default: 'authd', help: 'Cluster mode: the JetStream stream (and the prefix of its subject and snapshot bucket).' },
  CLUSTER_REPLICAS: { default: '3', help: 'Cluster mode: replicas of the stream, set when the first node creates it.' },
  NODE_ID: { default: '(host name)', help: 'Cluster mode: this node\'s name in logs, metrics and cluster status.' },
  REPAIR: { default: '0', help: 'With --repair (or 1): repair a damaged data directory (back the damaged file up, cut it at the damage, say what was dropped) and exit.' },
} as const;

/** Settings that are switches: `--repair` alone turns it on. */
const switches: ReadonlySet<string> = new Set(['REPAIR']);
/** Secrets that no flag may carry: a command line is visible to every user of the machine (ps, /proc). */
const environmentOnly: ReadonlySet<string> = new Set(['CLUSTER_NATS_PASSWORD', 'CLUSTER_NATS_TOKEN']);

export type SettingName = keyof typeof settings;

export class ConfigError extends Error {}

/** The default public URL once the bound port is known; a wildcard listen address is shown as localhost. */
export function defaultPublicUrl(host: string, port: number): string {
  const shown = host === '0.0.0.0' || host === '::' ? 'localhost' : host.includes(':') ? `[${host}]` : host;
  return `http://${shown}:${port}`;
}

/** `--data-dir x`, `--data-dir=x`, `--DATA_DIR x` all set DATA_DIR. */
export function parseFlags(argv: readonly string[]): Partial<Record<SettingName, string>> {
  const out: Partial<Record<SettingName, string>> = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith('--')) throw new ConfigError(`unexpected argument ${arg}`);
    const eq = arg.indexOf('=');
    const rawName = eq === -1 ? arg.slice(2) : arg.slice(2, eq);
    const name = rawName.replace(/-/g, '_').toUpperCase();
    if (!(name in settings)) throw new ConfigError(`unknown flag --${rawName}`);
    if (environmentOnly.has(name)) throw new ConfigError(`${name} is read from the environment only (a command line is visible to every user of the machine): set it there, or use ${name}_FILE`);
    const bareSwitch = eq === -1 && switches.has(name) && (argv[i + 1] === undefined || argv[i + 1]!.startsWith('--'));
    let value: string | undefined = bareSwitch ? '1' : eq === -1 ? argv[++i] : arg.slice(eq + 1);
    if (value === undefined) throw new ConfigError(`flag --${rawName} needs a value`);
    out[name as SettingName] = value;
  }
  return out;
}

const frontEndSettings = ['auto', 'uws', 'node'] as const;
export type FrontEndSetting = (typeof frontEndSettings)[number];

function oneOf<T extends string>(name: SettingName, raw: string, allowed: readonly T[]): T {
  if (!(allowed as readonly string[]).includes(raw)) throw new ConfigError(`${name} must be one of ${allowed.join(', ')}, got "${raw}"`);
  return raw as T;
}

function integer(name: SettingName, raw: string, min: number, max: number): number {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) throw new ConfigError(`${name} must be an integer in ${min}..${max}, got "${raw}"`);
  return n;
}

export function loadConfig(env: NodeJS.ProcessEnv, argv: readonly string[]): Config {
  const flags = parseFlags(argv);
  const get = (name: SettingName): string | undefined => {
    const v = flags[name] ?? env[name];
    return v === undefined || v === '' ? undefined : v;
  };
  const port = integer('PORT', get('PORT') ?? '8080', 0, 65535);
  const host = get('HOST') ?? '0.0.0.0';
  const fsync = oneOf('FSYNC', get('FSYNC') ?? 'always', ['always', 'interval', 'off'] as const);
  const publicUrl = get('PUBLIC_URL')?.replace(/\/+$/, '');
  if (publicUrl !== undefined && !/^https?:\/\/[^\s/]+(\/[^\s]*)?$/.test(publicUrl)) {
    throw new ConfigError(`PUBLIC_URL must be an http(s) URL, got "${publicUrl}"`);
  }
  const memoryKiB = integer('ARGON2_MEMORY_KIB', get('ARGON2_MEMORY_KIB') ?? String(argon2MemoryKiBDefault), 8, 4 * 1024 * 1024);
  const parallelism = integer('ARGON2_PARALLELISM', get('ARGON2_PARALLELISM') ?? String(argon2ParallelismDefault), 1, 16);
  if (memoryKiB < 8 * parallelism) throw new ConfigError('ARGON2_MEMORY_KIB must be at least 8 x ARGON2_PARALLELISM');
  return {
    port, host, publicUrl, fsync,
    dataDir: get('DATA_DIR') ?? './data',
    adminEmail: get('ADMIN_EMAIL'),
    adminPassword: get('ADMIN_PASSWORD'),
    logLevel: get('LOG_LEVEL') ?? 'info',
    keyFile: get('KEY_FILE') ?? './secrets/server.key',
    serverKey: get('SERVER_KEY'),
    // One core stays with the event loop: a hash thread on its core only slows the replies, and verifies no faster.
    hashWorkers: integer('HASH_WORKERS', get('HASH_WORKERS') ?? String(Math.max(1, availableParallelism() - 1)), 1, 256),
    argon2: {
      memoryKiB,
      iterations: integer('ARGON2_ITERATIONS', get('ARGON2_ITERATIONS') ?? String(argon2IterationsDefault), 1, 100),
      parallelism,
    },
    verifyCacheTtlMs: integer('VERIFY_CACHE_TTL_MS', get('VERIFY_CACHE_TTL_MS') ?? String(verifyCacheTtlMsDefault), 0, verifyCacheSettingMsMax),
    verifyCacheIdleMs: integer('VERIFY_CACHE_IDLE_MS', get('VERIFY_CACHE_IDLE_MS') ?? String(verifyCacheIdleMsDefault), 0, verifyCacheSettingMsMax),
    snapshotEveryRecords: integer('SNAPSHOT_EVERY_RECORDS', get('SNAPSHOT_EVERY_RECORDS') ?? String(snapshotEveryRecordsDefault), 1, 1e9),
    snapshotEverySeconds: integer('SNAPSHOT_EVERY_SECONDS', get('SNAPSHOT_EVERY_SECONDS') ?? String(snapshotEverySecondsDefault), 1, 1e7),
    bodyBytesMax: integer('BODY_BYTES_MAX', get('BODY_BYTES_MAX') ?? String(bodyBytesMax), 1024, 64 * 1024 * 1024),
    realm: (get('REALM') ?? 'authd').replace(/["\\]/g, ''),
    frontEnd: oneOf('FRONT_END', get('FRONT_END') ?? 'auto', frontEndSettings),
    bruteForce: {
      failureFactor: integer('BRUTE_FORCE_FAILURE_FACTOR', get('BRUTE_FORCE_FAILURE_FACTOR') ?? String(bruteForceFailureFactorDefault), 0, 1e6),
      addressFailureFactor: integer('BRUTE_FORCE_ADDRESS_FAILURE_FACTOR', get('BRUTE_FORCE_ADDRESS_FAILURE_FACTOR') ?? String(bruteForceAddressFailureFactorDefault), 0, 1e6),
      waitIncrementMs: 1000 * integer('BRUTE_FORCE_WAIT_INCREMENT_S', get('BRUTE_FORCE_WAIT_INCREMENT_S') ?? String(bruteForceWaitIncrementMsDefault / 1000), 0, 24 * 3600),
      maxWaitMs: 1000 * integer('BRUTE_FORCE_MAX_WAIT_S', get('BRUTE_FORCE_MAX_WAIT_S') ?? String(bruteForceMaxWaitMsDefault / 1000), 0, 7 * 24 * 3600),
      failureResetMs: 1000 * integer('BRUTE_FORCE_FAILURE_RESET_S', get('BRUTE_FORCE_FAILURE_RESET_S') ?? String(bruteForceFailureResetMsDefault / 1000), 1, 30 * 24 * 3600),
      tarpitStepMs: integer('BRUTE_FORCE_TARPIT_MS', get('BRUTE_FORCE_TARPIT_MS') ?? String(bruteForceTarpitStepMsDefault), 0, 60_000),
      tarpitMaxMs: integer('BRUTE_FORCE_TARPIT_MAX_MS', get('BRUTE_FORCE_TARPIT_MAX_MS') ?? String(bruteForceTarpitMaxMsDefault), 0, 600_000),
    },
    repair: get('REPAIR') === '1' || get('REPAIR') === 'true',
    cluster: clusterConfig(get),
  };
}

function clusterConfig(get: (name: SettingName) => string | undefined): ClusterConfig | undefined {
  const list = get('CLUSTER_NATS_SERVERS');
  if (list === undefined) return undefined;
  const parsed = list.split(',').map((s) => s.trim()).filter((s) => s !== '').map(parseNatsServer);
  if (parsed.length === 0) throw new ConfigError('CLUSTER_NATS_SERVERS lists no server');
  const stream = get('CLUSTER_STREAM') ?? 'authd';
  // JetStream names: no whitespace, dots, wildcards or path separators.
  if (!/^[A-Za-z0-9_-]{1,32}$/.test(stream)) throw new ConfigError(`CLUSTER_STREAM must be 1 to 32 of A-Z a-z 0-9 _ -, got "${stream}"`);
  const nodeId = get('NODE_ID') ?? hostname();
  if (!/^[A-Za-z0-9_.-]{1,64}$/.test(nodeId)) throw new ConfigError(`NODE_ID must be 1 to 64 of A-Z a-z 0-9 _ . -, got "${nodeId}"`);
  const replicas = integer('CLUSTER_REPLICAS', get('CLUSTER_REPLICAS') ?? '3', 1, 5);
  const nats = natsAccess(get, parsed);
  refuseOpenNats(get, nats, parsed);
  return { servers: parsed.map((server) => server.url), stream, replicas, nodeId, nats };
}

interface NatsServer {
  /** As given, less any userinfo. */
  readonly url: string;
  /** Lower case, IPv6 without brackets. */
  readonly host: string;
  readonly tlsScheme: boolean;
  /** The text between `//` and `@`, undefined when there is none. */
  readonly userinfo: string | undefined;
}

/** A server URL written with its password shown as `***`, for an error message. */
export function redactUserinfo(text: string): string {
  const at = text.lastIndexOf('@');
  if (at === -1) return text;
  const scheme = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//.exec(text)?.[0] ?? '';
  return `${scheme}***${text.slice(at)}`;
}

/** nats://host:port, tls://host:port or host:port, each with optional user:password@ or token@. */
function parseNatsServer(text: string): NatsServer {
  const bad = (why: string): ConfigError => new ConfigError(`CLUSTER_NATS_SERVERS: "${redactUserinfo(text)}" is not a NATS URL (nats://host:port): ${why}`);
  const schemeText = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//.exec(text)?.[0] ?? '';
  const scheme = schemeText === '' ? 'nats' : schemeText.slice(0, -3).toLowerCase();
  if (scheme !== 'nats' && scheme !== 'tls') throw bad(`the scheme is ${scheme}, not nats or tls`);
  // The last @: a password may hold one only percent-encoded, and the URL standard splits there too.
  const at = text.lastIndexOf('@');
  const userinfo = at === -1 ? undefined : text.slice(schemeText.length, at);
  const url = at === -1 ? text : schemeText + text.slice(at + 1);
  let parsed: URL;
  try {
    parsed = new URL(schemeText === '' ? `nats://${url}` : url);
  } catch {
    throw bad('not a host and port');
  }
  if (parsed.hostname === '' || (parsed.pathname !== '' && parsed.pathname !== '/') || parsed.search !== '' || parsed.hash !== '' || /\s/.test(text)) {
    throw bad('only a host and port may follow the scheme');
  }
  const host = parsed.hostname.toLowerCase().replace(/^\[(.*)\]$/, '$1');
  return { url, host, tlsScheme: scheme === 'tls', userinfo };
}

function decodeUserinfoPart(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    throw new ConfigError('CLUSTER_NATS_SERVERS: a URL\'s userinfo is not valid percent-encoding');
  }
}

/** The credential and TLS settings, checked: one kind of credential at most, each complete, TLS files in pairs. */
function natsAccess(get: (name: SettingName) => string | undefined, servers: readonly NatsServer[]): NatsAccess {
  const secretSource = (valueName: SettingName, fileName: SettingName): SecretSource | undefined => {
    const value = get(valueName);
    const file = get(fileName);
    if (value !== undefined && file !== undefined) throw new ConfigError(`${valueName} and ${fileName} are both set: set one`);
    return value !== undefined ? { value: new Secret(value) } : file !== undefined ? { file, setting: fileName } : undefined;
  };
  const found: { readonly names: string; readonly credential: NatsCredential }[] = [];

  const userinfos = new Set(servers.map((server) => server.userinfo));
  if (userinfos.size > 1) throw new ConfigError('CLUSTER_NATS_SERVERS: the URLs carry different userinfo (user:password@ or token@): give each URL the same, or none and CLUSTER_NATS_USER and CLUSTER_NATS_PASSWORD');
  const userinfo = servers[0]!.userinfo;
  if (userinfo !== undefined) {
    const colon = userinfo.indexOf(':');
    if (userinfo === '' || colon === 0) throw new ConfigError('CLUSTER_NATS_SERVERS: a URL has an @ but no user or token before it');
    if (colon === -1) found.push({ names: 'a token in the CLUSTER_NATS_SERVERS URLs', credential: { kind: 'token', token: { value: new Secret(decodeUserinfoPart(userinfo)) }, from: 'CLUSTER_NATS_SERVERS' } });
    else {
      const password = decodeUserinfoPart(userinfo.slice(colon + 1));
      if (password === '') throw new ConfigError('CLUSTER_NATS_SERVERS: a URL names a user with no password (nats://user:password@host:port)');
      found.push({ names: 'a user in the CLUSTER_NATS_SERVERS URLs', credential: { kind: 'user', user: decodeUserinfoPart(userinfo.slice(0, colon)), password: { value: new Secret(password) }, from: 'CLUSTER_NATS_SERVERS' } });
    }
  }
  const user = get('CLUSTER_NATS_USER');
  const password = secretSource('CLUSTER_NATS_PASSWORD', 'CLUSTER_NATS_PASSWORD_FILE');
  if (user !== undefined && password === undefined) throw new ConfigError('CLUSTER_NATS_USER is set without CLUSTER_NATS_PASSWORD or CLUSTER_NATS_PASSWORD_FILE');
  if (user === undefined && password !== undefined) throw new ConfigError(`${'file' in password ? 'CLUSTER_NATS_PASSWORD_FILE' : 'CLUSTER_NATS_PASSWORD'} is set without CLUSTER_NATS_USER`);
  if (user !== undefined && password !== undefined) found.push({ names: 'CLUSTER_NATS_USER', credential: { kind: 'user', user, password, from: 'CLUSTER_NATS_USER' } });
  const token = secretSource('CLUSTER_NATS_TOKEN', 'CLUSTER_NATS_TOKEN_FILE');
  if (token !== undefined) found.push({ names: 'file' in token ? 'CLUSTER_NATS_TOKEN_FILE' : 'CLUSTER_NATS_TOKEN', credential: { kind: 'token', token, from: 'file' in token ? 'CLUSTER_NATS_TOKEN_FILE' : 'CLUSTER_NATS_TOKEN' } });
  const creds = get('CLUSTER_NATS_CREDS');
  if (creds !== undefined) found.push({ names: 'CLUSTER_NATS_CREDS', credential: { kind: 'creds', file: creds } });
  const seedFile = get('CLUSTER_NATS_NKEY_SEED_FILE');
  if (seedFile !== undefined) found.push({ names: 'CLUSTER_NATS_NKEY_SEED_FILE', credential: { kind: 'nkey', seedFile } });
  if (found.length > 1) {
    throw new ConfigError(`NATS credentials of more than one kind are set (${found.map((f) => f.names).join(', ')}): a connection shows one; keep one`);
  }

  const caFile = get('CLUSTER_NATS_TLS_CA');
  const certFile = get('CLUSTER_NATS_TLS_CERT');
  const keyFile = get('CLUSTER_NATS_TLS_KEY');
  if (certFile !== undefined && keyFile === undefined) throw new ConfigError('CLUSTER_NATS_TLS_CERT is set without CLUSTER_NATS_TLS_KEY (the client certificate\'s private key)');
  if (keyFile !== undefined && certFile === undefined) throw new ConfigError('CLUSTER_NATS_TLS_KEY is set without CLUSTER_NATS_TLS_CERT');
  const tlsWanted = caFile !== undefined || certFile !== undefined || servers.some((server) => server.tlsScheme);
  return { credential: found[0]?.credential ?? { kind: 'none' }, tls: tlsWanted ? { caFile, certFile, keyFile } : undefined };
}

/** 127.0.0.0/8, ::1 and localhost: a NATS server on this machine, which only its own users reach. */
export function isLoopbackHost(host: string): boolean {
  if (host === 'localhost') return true;
  if (isIPv4(host)) return host.startsWith('127.');
  return isIPv6(host) && host === '::1';
}

/**
 * Refuses, before any connection, a node that would reach a NATS server on another machine with no credential: on an
 * open NATS anyone who reaches the server reads and writes the cluster's log. A TLS client certificate counts, as a
 * server that verifies one refuses a client without it (docs/cluster.md).
 */
function refuseOpenNats(get: (name: SettingName) => string | undefined, nats: NatsAccess, servers: readonly NatsServer[]): void {
  const insecure = oneOf('CLUSTER_NATS_INSECURE', get('CLUSTER_NATS_INSECURE') ?? 'false', ['true', 'false', '1', '0'] as const);
  if (insecure === 'true' || insecure === '1') return;
  if (nats.credential.kind !== 'none' || nats.tls?.certFile !== undefined) return;
  const remote = servers.find((server) => !isLoopbackHost(server.host));
  if (remote === undefined) return;
  throw new ConfigError(
    `CLUSTER_NATS_SERVERS names ${remote.url}, which is not this machine, and no NATS credential is set: anyone who reaches that server could read ` +
    'and write the cluster\'s log. Give the node a NATS user (CLUSTER_NATS_USER with CLUSTER_NATS_PASSWORD or CLUSTER_NATS_PASSWORD_FILE, ' +
    'CLUSTER_NATS_TOKEN, CLUSTER_NATS_CREDS, CLUSTER_NATS_NKEY_SEED_FILE, or a TLS client certificate with CLUSTER_NATS_TLS_CERT and CLUSTER_NATS_TLS_KEY), ' +
    'or set CLUSTER_NATS_INSECURE=true to connect without one (docs/cluster.md)',
  );
}

/** `authd --help`: how to start it and every setting with its default. */
export function usage(): string {
  const names = Object.keys(settings) as SettingName[];
  const width = Math.max(...names.map((n) => n.length));
  const lines = names.map((name) => `  ${name.padEnd(width)}  ${settings[name].help} (default: ${settings[name].default})`);
  return [
    'Usage: authd [--setting value ...]',
    '',
    'Starts the authentication service. Each setting is read from the environment or from a flag of the same',
    'name (--data-dir ./data is DATA_DIR=./data; a flag wins). --help prints this, --version the version.',
    '',
    'Settings:',
    ...lines,
    '',
  ].join('\n');
}
