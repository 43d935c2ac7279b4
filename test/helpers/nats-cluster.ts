// Starts real nats-server processes (one server or a JetStream cluster) on free loopback ports for tests.
//
// Each server gets a config file, a JetStream store dir and a log file in one temporary root. Every child is
// killed when the test process exits (normally or by signal), so no server outlives the tests that started it.

import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, closeSync, constants, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect as connectTcp, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection, type NodeConnectionOptions } from '@nats-io/transport-node';
import { liveChildren, liveRoots } from './children.js';

/** How long one server may take to accept clients after it was spawned. */
const serveTimeoutMs = 10_000;
/** How long a new cluster may take to elect its JetStream meta leader and place a replicated stream. */
const jetstreamReadyTimeoutMs = 30_000;
/** One JetStream API request while waiting for readiness: short, so a request to a server still electing is retried. */
const readyRequestTimeoutMs = 2_000;
/** Starting again with fresh ports when another process took one between picking it and the server binding it. */
const portClashAttemptsMax = 3;
const killTimeoutMs = 5_000;
/** Lines of each server's log quoted in an error. */
const logTailLines = 30;
/** The paths searched besides PATH: Debian installs the server in /usr/sbin, which is not in a user's PATH. */
const fallbackDirs = ['/usr/sbin', '/usr/bin'];

// ---- finding the binary ----

/** The nats-server binary from PATH, /usr/sbin or /usr/bin; undefined when it is not installed. */
export function natsServerPath(): string | undefined {
  const dirs = [...(process.env['PATH'] ?? '').split(delimiter).filter((dir) => dir !== ''), ...fallbackDirs];
  for (const dir of dirs) {
    const candidate = join(dir, 'nats-server');
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch { /* not here */ }
  }
  return undefined;
}

/**
 * The reason for node:test's `skip` option, given whether the binary was found and whether this is CI. CI always
 * installs nats-server, so there a missing binary is not a skip: the tests run and fail loudly.
 */
export function skipReasonFor(binary: string | undefined, ci: boolean): string | false {
  if (binary !== undefined || ci) return false;
  return 'nats-server is not installed: cluster tests need it (Debian/Ubuntu: apt-get install nats-server; ' +
    'elsewhere: https://docs.nats.io/running-a-nats-service/introduction/installation)';
}

/** `test('...', { skip: natsSkipReason() }, ...)`: skips, saying why, when nats-server is missing, except on CI. */
export function natsSkipReason(): string | false {
  return skipReasonFor(natsServerPath(), process.env['CI'] === 'true');
}

// ---- retrying ----

export interface RetryOptions {
  /** Gives up after this long, rejecting with the last attempt's error. */
  readonly timeoutMs: number;
  /** Pause between attempts. */
  readonly intervalMs?: number;
  /** What is awaited, for the error message. */
  readonly what: string;
  /** Stops retrying at once, rejecting with the signal's reason. */
  readonly signal?: AbortSignal;
}

/** Calls `attempt` until it resolves and returns its value; after `timeoutMs` rejects naming the last error. */
export async function retryUntil<T>(attempt: () => Promise<T>, options: RetryOptions): Promise<T> {
  const { timeoutMs, intervalMs = 100, what, signal } = options;
  const deadline = Date.now() + timeoutMs;
  let attempts = 0;
  for (;;) {
    signal?.throwIfAborted();
    attempts += 1;
    try {
      return await attempt();
    } catch (error) {
      signal?.throwIfAborted();
      if (Date.now() + intervalMs >= deadline) {
        const last = error instanceof Error ? error.message : String(error);
        throw new Error(`${what}: not done within ${timeoutMs} ms (${attempts} attempts); last error: ${last}`, { cause: error });
      }
    }
    await sleep(intervalMs);
  }
}

/** Resolves once check() answers true; rejects naming `what` after timeoutMs. */
export async function until(check: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  await retryUntil(async () => {
    if (!(await check())) throw new Error('not yet');
  }, { timeoutMs, what });
}

// ---- ports ----

/** `count` distinct free loopback ports: all are held open together so none is handed out twice, then released. */
export async function freePorts(count: number): Promise<number[]> {
  const servers = [];
  try {
    for (let i = 0; i < count; i += 1) {
      const server = createServer();
      servers.push(server);
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(0, '127.0.0.1', () => resolve());
      });
    }
    return servers.map((server) => {
      const address = server.address();
      if (address === null || typeof address === 'string') throw new Error('a TCP server has no port');
      return address.port;
    });
  } finally {
    await Promise.all(servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))));
  }
}

// ---- one server ----

interface ServerSpec {
  readonly name: string;
  readonly dir: string;
  readonly configFile: string;
  readonly logFile: string;
  readonly clientPort: number;
  readonly clusterPort: number | undefined;
}

interface RunningServer {
  readonly child: ChildProcess;
  readonly exited: Promise<void>;
}

/** nats-server's config syntax accepts JSON-style quoted strings, so JSON.stringify quotes paths safely. */
function configText(spec: ServerSpec, clusterName: string, peers: readonly ServerSpec[], options: NatsClusterOptions): string {
  const { jetstream = true, maxPayloadBytes, config, extraConfig } = options;
  if (config !== undefined) return config({ clientPort: spec.clientPort, storeDir: join(spec.dir, 'store'), dir: spec.dir });
  const lines = [
    `server_name: ${JSON.stringify(spec.name)}`,
    `listen: "127.0.0.1:${spec.clientPort}"`,
  ];
  if (maxPayloadBytes !== undefined) lines.push(`max_payload: ${maxPayloadBytes}`);
  if (jetstream) lines.push(`jetstream { store_dir: ${JSON.stringify(join(spec.dir, 'store'))} }`);
  if (spec.clusterPort !== undefined) {
    const routes = peers.filter((peer) => peer !== spec).map((peer) => `"nats-route://127.0.0.1:${peer.clusterPort}"`);
    lines.push(
      'cluster {',
      `  name: ${JSON.stringify(clusterName)}`,
      `  listen: "127.0.0.1:${spec.clusterPort}"`,
      `  routes: [${routes.join(', ')}]`,
      '}',
    );
  }
  if (extraConfig !== undefined) lines.push(extraConfig);
  return lines.join('\n') + '\n';
}

function spawnServer(binary: string, spec: ServerSpec): RunningServer {
  // Appending keeps the log of every run of this server in one file, across restarts.
  const logFd = openSync(spec.logFile, 'a');
  let child: ChildProcess;
  try {
    child = spawn(binary, ['-c', spec.configFile], { stdio: ['ignore', logFd, logFd] });
  } finally {
    closeSync(logFd);
  }
  liveChildren.add(child);
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => {
      liveChildren.delete(child);
      resolve();
    });
    child.once('error', () => {
      liveChildren.delete(child);
      resolve();
    });
  });
  return { child, exited };
}

function hasExited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

/** Resolves once the port answers with a NATS INFO line, i.e. our server (not some other process) accepts clients. */
function answersInfo(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connectTcp({ host: '127.0.0.1', port });
    let received = '';
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1_000, () => done(false));
    socket.on('error', () => done(false));
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
      if (received.startsWith('INFO ')) done(true);
    });
    socket.on('end', () => done(false));
  });
}

function logTail(logFile: string, lines = logTailLines): string {
  try {
    return readFileSync(logFile, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

class ServerExitedError extends Error {
  constructor(readonly spec: ServerSpec, readonly portClash: boolean) {
    super(`nats-server ${spec.name} exited while starting; log ${spec.logFile}:\n${logTail(spec.logFile)}`);
  }
}

async function waitUntilServing(spec: ServerSpec, server: RunningServer): Promise<void> {
  const deadline = Date.now() + serveTimeoutMs;
  while (Date.now() < deadline) {
    if (hasExited(server.child)) {
      throw new ServerExitedError(spec, /address already in use/i.test(logTail(spec.logFile)));
    }
    if (await answersInfo(spec.clientPort)) return;
    await sleep(50);
  }
  throw new Error(`nats-server ${spec.name} did not accept clients on port ${spec.clientPort} within ` +
    `${serveTimeoutMs} ms; log ${spec.logFile}:\n${logTail(spec.logFile)}`);
}

async function killServer(server: RunningServer | undefined): Promise<void> {
  if (server === undefined || hasExited(server.child)) return;
  server.child.kill('SIGKILL');
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`nats-server ${server.child.pid} did not exit after SIGKILL`)), killTimeoutMs);
  });
  try {
    await Promise.race([server.exited, timedOut]);
  } finally {
    clearTimeout(timer);
  }
}

// ---- the cluster ----

export interface NatsClusterOptions {
  /** How many servers; 1 starts a lone server with JetStream and no cluster block. */
  readonly servers?: number;
  readonly jetstream?: boolean;
  /** The servers' max_payload; their default (1 MiB) when undefined. */
  readonly maxPayloadBytes?: number;
  /** Configuration text added to each server's (users, accounts, TLS, an operator). */
  readonly extraConfig?: string;
  /**
   * A lone server's whole configuration instead of the one made here (the test's own, e.g. one taken from the docs);
   * dir holds its configuration file, which files it includes are relative to.
   */
  readonly config?: (server: { readonly clientPort: number; readonly storeDir: string; readonly dir: string }) => string;
  /** Credentials and TLS for the harness's own connection (the JetStream readiness check) to servers that require them. */
  readonly clientOptions?: NodeConnectionOptions;
}

export interface NatsCluster {
  /** `nats://127.0.0.1:PORT` per server, in server order. */
  readonly urls: readonly string[];
  /** Each server's `server_name`, as JetStream reports stream leaders and replicas. */
  readonly serverNames: readonly string[];
  /** Each server's log file (stdout and stderr of every run): print it when a test fails. */
  readonly logFiles: readonly string[];
  url(index: number): string;
  /** The running process's id; undefined once it was killed or stopped. */
  pid(index: number): number | undefined;
  /** The index of the server with this `server_name`. */
  indexOf(serverName: string): number;
  /** SIGKILL, like a crash; resolves once the process is gone. */
  kill(index: number): Promise<void>;
  /** SIGSTOP: the server freezes with its connections open, like a long GC pause or a stalled VM. */
  pause(index: number): void;
  /** SIGCONT after pause(). */
  resume(index: number): void;
  /** Starts a killed server again with its config, store dir and ports; resolves once it accepts clients. */
  restart(index: number): Promise<void>;
  /** Resolves once JetStream can place a stream with one replica per running server. */
  waitForJetStream(timeoutMs?: number): Promise<void>;
  /** The last lines of every server's log, for a failing test's output. */
  logTails(lines?: number): string;
  /** Kills every server and removes the temporary root; idempotent, so safe in `after()`. */
  stop(): Promise<void>;
}

class RunningCluster implements NatsCluster {
  readonly urls: string[];
  readonly serverNames: string[];
  readonly logFiles: string[];
  private readonly running: (RunningServer | undefined)[];
  /** Aborted by stop(), so a readiness wait still retrying against killed servers ends at once. */
  private readonly stopping = new AbortController();
  private stopped = false;

  constructor(
    private readonly binary: string,
    private readonly root: string,
    private readonly specs: readonly ServerSpec[],
    private readonly jetstream: boolean,
    private readonly options: NatsClusterOptions,
  ) {
    this.urls = specs.map((spec) => `nats://127.0.0.1:${spec.clientPort}`);
    this.serverNames = specs.map((spec) => spec.name);
    this.logFiles = specs.map((spec) => spec.logFile);
    this.running = specs.map(() => undefined);
    liveRoots.add(root);
  }

  url(index: number): string {
    return this.urls[this.checkIndex(index)]!;
  }

  pid(index: number): number | undefined {
    const server = this.running[this.checkIndex(index)];
    return server === undefined || hasExited(server.child) ? undefined : server.child.pid;
  }

  indexOf(serverName: string): number {
    const index = this.serverNames.indexOf(serverName);
    if (index < 0) throw new Error(`no server named ${serverName} in this cluster`);
    return index;
  }

  async kill(index: number): Promise<void> {
    await killServer(this.running[this.checkIndex(index)]);
  }

  pause(index: number): void {
    this.signal(index, 'SIGSTOP');
  }

  resume(index: number): void {
    this.signal(index, 'SIGCONT');
  }

  async restart(index: number): Promise<void> {
    if (this.stopped) throw new Error('the cluster was stopped');
    const spec = this.specs[this.checkIndex(index)]!;
    const current = this.running[index];
    if (current !== undefined && !hasExited(current.child)) throw new Error(`nats-server ${spec.name} is still running`);
    const server = spawnServer(this.binary, spec);
    this.running[index] = server;
    await waitUntilServing(spec, server);
  }

  /** Starts every server at once: a clustered JetStream server waits for its peers before it serves. */
  async startAll(): Promise<void> {
    for (const [index, spec] of this.specs.entries()) this.running[index] = spawnServer(this.binary, spec);
    await Promise.all(this.specs.map((spec, index) => waitUntilServing(spec, this.running[index]!)));
  }

  /**
   * Rejects when a server exits. A server that lost its cluster port to another process exits only after it
   * opened its client port, so the start-up waits for this too rather than for the JetStream timeout.
   */
  anyExit(): Promise<never> {
    return new Promise<never>((_, reject) => {
      for (const [index, server] of this.running.entries()) {
        const spec = this.specs[index]!;
        void server?.exited.then(() => reject(new ServerExitedError(spec, /address already in use/i.test(logTail(spec.logFile)))));
      }
    });
  }

  async waitForJetStream(timeoutMs = jetstreamReadyTimeoutMs): Promise<void> {
    if (!this.jetstream) return;
    const replicas = this.running.filter((server) => server !== undefined && !hasExited(server.child)).length;
    const nc = await connect({ servers: this.urls, timeout: readyRequestTimeoutMs, maxReconnectAttempts: -1, reconnectTimeWait: 100, ...this.options.clientOptions });
    try {
      // A stream with one replica per server proves the meta leader exists and knows every peer. A lone server
      // needs no election: its answer about the account is enough, and needs no permission to create streams.
      const probe = `harness_ready_${process.pid}`;
      await retryUntil(async () => {
        const jsm = await jetstreamManager(nc, { timeout: readyRequestTimeoutMs });
        if (this.specs.length === 1) return;
        await jsm.streams.add({ name: probe, subjects: [`${probe}.>`], storage: 'memory', num_replicas: replicas });
        await jsm.streams.delete(probe);
      }, { timeoutMs, intervalMs: 200, what: `JetStream on ${this.urls.length} nats-server(s)`, signal: this.stopping.signal });
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      throw new Error(`${message}\nserver logs: ${this.logFiles.join(', ')}\n${this.logTails()}`, { cause: error });
    } finally {
      await nc.close();
    }
  }

  logTails(lines = logTailLines): string {
    return this.specs.map((spec) => `---- ${spec.name} (${spec.logFile}) ----\n${logTail(spec.logFile, lines)}`).join('\n');
  }

  async stop(): Promise<void> {
    await this.stopKeepingLogs();
    rmSync(this.root, { recursive: true, force: true });
  }

  /** Kills every server and removes the stores, keeping the logs a start-up error points at. */
  async stopKeepingLogs(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    liveRoots.delete(this.root);
    this.stopping.abort(new Error('the cluster was stopped'));
    await Promise.all(this.running.map((server) => killServer(server)));
    for (const spec of this.specs) rmSync(join(spec.dir, 'store'), { recursive: true, force: true });
  }

  private signal(index: number, signal: NodeJS.Signals): void {
    const server = this.running[this.checkIndex(index)];
    if (server === undefined || hasExited(server.child)) throw new Error(`nats-server ${this.serverNames[index]} is not running`);
    server.child.kill(signal);
  }

  private checkIndex(index: number): number {
    if (!Number.isInteger(index) || index < 0 || index >= this.specs.length) {
      throw new Error(`server index ${index} is not in 0..${this.specs.length - 1}`);
    }
    return index;
  }
}

function makeSpecs(root: string, servers: number, ports: readonly number[]): ServerSpec[] {
  return Array.from({ length: servers }, (_, index) => {
    const name = `n${index}`;
    const dir = join(root, name);
    mkdirSync(join(dir, 'store'), { recursive: true });
    return {
      name,
      dir,
      configFile: join(dir, 'server.conf'),
      logFile: join(dir, 'server.log'),
      clientPort: ports[index * 2]!,
      clusterPort: servers > 1 ? ports[index * 2 + 1] : undefined,
    };
  });
}

/**
 * Starts `servers` nats-servers forming one cluster (JetStream on by default) and resolves once JetStream can
 * place a stream replicated on all of them. Call `stop()` in `after()`.
 */
export async function startNatsCluster(options: NatsClusterOptions = {}): Promise<NatsCluster> {
  const { servers = 3, jetstream = true } = options;
  if (!Number.isInteger(servers) || servers < 1) throw new Error(`servers must be a positive integer, not ${servers}`);
  if (options.config !== undefined && servers !== 1) throw new Error('a whole configuration is for a lone server');
  const binary = natsServerPath();
  if (binary === undefined) throw new Error(skipReasonFor(undefined, false) || 'nats-server is not installed');
  for (let attempt = 1; ; attempt += 1) {
    const root = mkdtempSync(join(tmpdir(), 'authd-nats-'));
    const specs = makeSpecs(root, servers, await freePorts(servers * 2));
    const clusterName = `authd-test-${process.pid}`;
    for (const spec of specs) writeFileSync(spec.configFile, configText(spec, clusterName, specs, options));
    const cluster = new RunningCluster(binary, root, specs, jetstream, options);
    try {
      await cluster.startAll();
      await Promise.race([cluster.waitForJetStream(), cluster.anyExit()]);
      return cluster;
    } catch (error) {
      const clash = error instanceof ServerExitedError && error.portClash;
      if (clash && attempt < portClashAttemptsMax) {
        await cluster.stop();
        continue;
      }
      await cluster.stopKeepingLogs();
      throw error;
    }
  }
}
