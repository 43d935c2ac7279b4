// Runs the real server as a child process on an ephemeral port with temporary directories, and talks HTTP to it.
//
// Each HTTP test file starts one server in `before` and disposes of it in `after`. Every child is also
// killed when the test process exits (normally or by signal), so no server is ever left running.

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AuthClient } from '../../src/client/index.js';
import { liveChildren, liveRoots } from './children.js';

/** Fast but real argon2id: the suite creates many users and must stay well under its time budget. */
const fastHashingEnv = { ARGON2_MEMORY_KIB: '1024', ARGON2_ITERATIONS: '1', HASH_WORKERS: '2' } as const;

export const adminEmail = 'admin@example.com';
export const adminPassword = 'admin-pass-Zq7!wK2';

const startTimeoutMs = 15_000;
const stopTimeoutMs = 15_000;
/** AUTHD_TEST_MAIN_JS runs another build's dist/src/main.js (an older commit's, to show a bug its tests find). */
const mainJs = process.env['AUTHD_TEST_MAIN_JS'] ?? fileURLToPath(new URL('../../src/main.js', import.meta.url));

// ---- the server process ----

export interface ServerDirs {
  /** Removed by dispose(). */
  readonly root: string;
  readonly dataDir: string;
  /** Kept outside the data directory, as the README asks. */
  readonly keyFile: string;
}

export interface StartOptions {
  /** Extra or overriding environment (e.g. PUBLIC_URL). */
  readonly env?: Readonly<Record<string, string>>;
  /** Restart on these directories instead of fresh ones. */
  readonly dirs?: ServerDirs;
}

export function newServerDirs(): ServerDirs {
  const root = mkdtempSync(join(tmpdir(), 'authd-http-test-'));
  liveRoots.add(root);
  return { root, dataDir: join(root, 'data'), keyFile: join(root, 'secrets', 'server.key') };
}

export class ServerProcess {
  private stdoutText = '';
  private stderrText = '';
  private exitInfo: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  private readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  port = 0;

  private constructor(
    private readonly child: ChildProcess,
    readonly dirs: ServerDirs,
    private readonly env: Readonly<Record<string, string>>,
  ) {
    child.stdout!.setEncoding('utf8');
    child.stderr!.setEncoding('utf8');
    child.stdout!.on('data', (s: string) => { this.stdoutText += s; });
    child.stderr!.on('data', (s: string) => { this.stderrText += s; });
    this.exited = new Promise((resolve) => {
      child.on('exit', (code, signal) => {
        liveChildren.delete(child);
        this.exitInfo = { code, signal };
        resolve(this.exitInfo);
      });
    });
  }

  static async start(opts: StartOptions = {}): Promise<ServerProcess> {
    const dirs = opts.dirs ?? newServerDirs();
    const env: Record<string, string> = {
      PATH: process.env['PATH'] ?? '/usr/bin:/bin',
      HOME: process.env['HOME'] ?? dirs.root,
      PORT: '0',
      HOST: '127.0.0.1',
      DATA_DIR: dirs.dataDir,
      KEY_FILE: dirs.keyFile,
      ADMIN_EMAIL: adminEmail,
      ADMIN_PASSWORD: adminPassword,
      LOG_LEVEL: 'info',
      // The suite runs once per front end (test/run-suite.ts).
      ...(process.env['FRONT_END'] === undefined ? {} : { FRONT_END: process.env['FRONT_END'] }),
      ...fastHashingEnv,
      ...opts.env,
    };
    // cwd is the temporary root so that no default path (./data, ./secrets) can touch the repository.
    const child = spawn(process.execPath, [mainJs], { cwd: dirs.root, env, stdio: ['ignore', 'pipe', 'pipe'] });
    liveChildren.add(child);
    const server = new ServerProcess(child, dirs, env);
    server.port = await server.waitForListening();
    return server;
  }

  /** A new process on the same data directory and key file, with the same environment. */
  async restart(): Promise<ServerProcess> {
    if (this.exitInfo === undefined) throw new Error('restart() needs the previous process to have exited');
    return ServerProcess.start({ dirs: this.dirs, env: this.env });
  }

  /** Where the server answers. */
  get baseUrl(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** What every href must start with: PUBLIC_URL when given, else http://HOST:PORT. */
  get publicUrl(): string {
    return this.env['PUBLIC_URL'] ?? this.baseUrl;
  }

  get running(): boolean {
    return this.exitInfo === undefined;
  }

  /** Everything the process wrote to stdout and stderr so far. */
  output(): string {
    return this.stdoutText + this.stderrText;
  }

  /** The parsed pino lines of stdout (non-JSON lines skipped). */
  logLines(): Record<string, unknown>[] {
    const out: Record<string, unknown>[] = [];
    for (const line of this.stdoutText.split('\n')) {
      if (line.trim() === '') continue;
      try { out.push(JSON.parse(line) as Record<string, unknown>); } catch { /* not a log line */ }
    }
    return out;
  }

  /** The audit lines written so far, after a moment for the last ones to arrive (the server gathers lines for a few milliseconds, and the pipe takes a moment). */
  async auditLines(): Promise<Record<string, unknown>[]> {
    await new Promise((r) => setTimeout(r, 150));
    return this.logLines().filter((l) => l['msg'] === 'audit');
  }

  /** An API client with the first admin's credentials (or others). */
  api(credentials: Credentials | null = { username: adminEmail, password: adminPassword }): Api {
    return new Api(this.baseUrl, credentials);
  }

  /** SIGTERM: the clean shutdown (flush, snapshot). Resolves with the exit code. */
  async stop(): Promise<number | null> {
    if (this.exitInfo !== undefined) return this.exitInfo.code;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), stopTimeoutMs);
    const { code, signal } = await this.exited;
    clearTimeout(timer);
    if (signal === 'SIGKILL') throw new Error(`server did not stop within ${stopTimeoutMs} ms of SIGTERM\n${this.output()}`);
    return code;
  }

  /** SIGKILL: a crash. Resolves once the process is gone. */
  async kill(): Promise<void> {
    if (this.exitInfo !== undefined) return;
    this.child.kill('SIGKILL');
    await this.exited;
  }

  /** SIGSTOP: the process freezes with its sockets open; requests to it wait until resume(). */
  pause(): void {
    if (this.exitInfo === undefined) this.child.kill('SIGSTOP');
  }

  /** SIGCONT after pause(). */
  resume(): void {
    if (this.exitInfo === undefined) this.child.kill('SIGCONT');
  }

  /** Kills the process if it still runs; removes the directories unless told to keep them. */
  async dispose(opts: { keepDirs?: boolean } = {}): Promise<void> {
    await this.kill();
    if (opts.keepDirs !== true) {
      rmSync(this.dirs.root, { recursive: true, force: true });
      liveRoots.delete(this.dirs.root);
    }
  }

  private waitForListening(): Promise<number> {
    return new Promise((resolve, reject) => {
      let seen = 0;
      let pending = '';
      const fail = (why: string): void => {
        cleanup();
        this.child.kill('SIGKILL');
        reject(new Error(`${why}\n--- stdout ---\n${this.stdoutText}\n--- stderr ---\n${this.stderrText}`));
      };
      const onData = (): void => {
        pending += this.stdoutText.slice(seen);
        seen = this.stdoutText.length;
        let nl: number;
        while ((nl = pending.indexOf('\n')) >= 0) {
          const line = pending.slice(0, nl);
          pending = pending.slice(nl + 1);
          let parsed: { msg?: unknown; port?: unknown };
          try { parsed = JSON.parse(line) as typeof parsed; } catch { continue; }
          if (parsed.msg === 'listening' && typeof parsed.port === 'number') {
            cleanup();
            resolve(parsed.port);
            return;
          }
        }
      };
      const onExit = (code: number | null, signal: string | null): void => {
        // Let the last output arrive before reporting it.
        setImmediate(() => fail(`server exited before listening (code ${code}, signal ${signal})`));
      };
      const timer = setTimeout(() => fail(`server did not log "listening" within ${startTimeoutMs} ms`), startTimeoutMs);
      const cleanup = (): void => {
        clearTimeout(timer);
        this.child.stdout!.off('data', onData);
        this.child.off('exit', onExit);
      };
      this.child.stdout!.on('data', onData);
      this.child.on('exit', onExit);
    });
  }
}

/** Starts a server: fresh directories unless `dirs` is given. */
export function startServer(opts: StartOptions = {}): Promise<ServerProcess> {
  return ServerProcess.start(opts);
}

// ---- HTTP client ----

export interface Credentials {
  readonly username: string;
  readonly password: string;
}

/** `Basic base64(utf8(username:password))`. */
export function basicAuth(username: string, password: string): string {
  return `Basic ${Buffer.from(`${username}:${password}`, 'utf8').toString('base64')}`;
}

export interface HttpResult {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  /** The parsed body; undefined when it is not JSON (a test that expects JSON fails on that). */
  readonly json: unknown;
}

export interface RequestOptions {
  /** Serialized as JSON with Content-Type application/json, unless `raw` is given. */
  readonly body?: unknown;
  /** Sent as is; Content-Type only if given in headers. */
  readonly raw?: string | Uint8Array;
  readonly headers?: Readonly<Record<string, string>>;
  /** Overrides the client's credentials for this request; null sends none. */
  readonly credentials?: Credentials | null;
}

/**
 * Requests as the tests write them, sent through the package's typed client (src/client/), so every HTTP
 * test exercises it: `api.client` for typed calls, `api.get/post/...` for exact status and envelope checks.
 */
export class Api {
  /** Every response body this client received, so a test can check that no secret was ever sent back. */
  readonly transcript: string[] = [];
  readonly client: AuthClient;

  constructor(readonly baseUrl: string, readonly credentials: Credentials | null) {
    // Read through `this` on each response, so clients made by as() share one transcript.
    this.client = new AuthClient({ baseUrl, credentials, onResponse: (res) => this.transcript.push(res.text) });
  }

  as(credentials: Credentials | null): Api {
    const other = new Api(this.baseUrl, credentials);
    // Shared, so a file-wide check sees the responses of every client.
    (other as { transcript: string[] }).transcript = this.transcript;
    return other;
  }

  async request(method: string, path: string, opts: RequestOptions = {}): Promise<HttpResult> {
    const res = await this.client.send(method, path, {
      json: opts.body, raw: opts.raw, headers: opts.headers, credentials: opts.credentials,
    });
    return { status: res.status, headers: res.headers, text: res.text, json: res.json };
  }

  get(path: string, opts?: RequestOptions): Promise<HttpResult> { return this.request('GET', path, opts); }
  post(path: string, body?: unknown, opts?: RequestOptions): Promise<HttpResult> { return this.request('POST', path, { ...opts, body }); }
  put(path: string, body?: unknown, opts?: RequestOptions): Promise<HttpResult> { return this.request('PUT', path, { ...opts, body }); }
  delete(path: string, opts?: RequestOptions): Promise<HttpResult> { return this.request('DELETE', path, opts); }
}

// ---- raw HTTP, for what fetch cannot send or cannot read back (oversized bodies the server cuts off) ----

export interface RawResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

/**
 * Sends `head` (request line and headers, without the blank line), then the body chunks one by one, and stops
 * sending as soon as a response arrives. Resolves with the first complete response.
 */
export function rawRequest(port: number, head: string, bodyChunks: readonly Uint8Array[] = []): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let received = Buffer.alloc(0);
    let answered = false;
    let settled = false;
    const settle = (fn: () => void): void => {
      if (settled) return;
      settled = true;
      socket.destroy();
      fn();
    };
    const tryParse = (): RawResponse | undefined => {
      const end = received.indexOf('\r\n\r\n');
      if (end < 0) return undefined;
      answered = true;
      const lines = received.subarray(0, end).toString('latin1').split('\r\n');
      const status = Number(lines[0]!.split(' ')[1]);
      const headers: Record<string, string> = {};
      for (const line of lines.slice(1)) {
        const colon = line.indexOf(':');
        headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      const length = Number(headers['content-length'] ?? NaN);
      const body = received.subarray(end + 4);
      if (Number.isFinite(length) && body.length < length) return undefined;
      return { status, headers, body: body.subarray(0, Number.isFinite(length) ? length : body.length).toString('utf8') };
    };
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const res = tryParse();
      if (res !== undefined) settle(() => resolve(res));
    });
    const onEnd = (err?: Error): void => {
      const res = tryParse();
      if (res !== undefined) settle(() => resolve(res));
      // When the connection was cut without an answer, that is itself the failure the test reports.
      else settle(() => reject(err ?? new Error(`connection closed without a complete response (${received.length} bytes)`)));
    };
    socket.on('end', () => onEnd());
    socket.on('close', () => onEnd());
    socket.on('error', (err) => onEnd(err));
    socket.on('connect', async () => {
      socket.write(`${head}\r\n\r\n`);
      for (const chunk of bodyChunks) {
        if (answered || socket.destroyed) return;
        const flushed = socket.write(chunk);
        if (!flushed) await new Promise<void>((r) => { socket.once('drain', r); socket.once('close', r); });
      }
    });
    setTimeout(() => settle(() => reject(new Error('raw request timed out'))), 15_000).unref();
  });
}

// ---- files at rest ----

/** Every regular file under dir, as bytes, by path. */
export function readAllFiles(dir: string): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  const walk = (d: string): void => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      const st = statSync(p);
      if (st.isDirectory()) walk(p);
      else if (st.isFile()) out.set(p, readFileSync(p));
    }
  };
  walk(dir);
  return out;
}
