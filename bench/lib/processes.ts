// Child processes of the benchmark (the real server, the ceiling server, the seed and micro runs, perf): started, watched, and never left behind.

import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, fstatSync, openSync, readFileSync, readSync, rmSync } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

/** The tail of a child's output kept for the error message when it dies. */
const outputTailChars = 8192;
const healthPollIntervalMs = 25;
/** A child that logs to a file: how often the file is read while someone waits for a line of it. */
const logPollIntervalMs = 25;
const logReadBytes = 64 * 1024;
const healthRequestTimeoutMs = 1000;
const stopGraceMs = 20_000;

const live = new Set<ChildProcess>();
const cleanups: Array<() => void> = [];

/** Kills every live child at once: used on exit, error and signals, when there is no time to be polite. */
export function killAllChildren(): void {
  for (const child of live) {
    try { child.kill('SIGKILL'); } catch { /* already gone */ }
  }
  live.clear();
  for (const fn of cleanups.splice(0)) {
    try { fn(); } catch { /* best effort */ }
  }
}

/** Removed on exit whatever happens (after the children that may hold it are dead). */
export function removeOnExit(path: string): void {
  cleanups.push(() => rmSync(path, { recursive: true, force: true }));
}

process.on('exit', killAllChildren);
for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143], ['SIGHUP', 129]] as const) {
  process.once(signal, () => {
    process.stderr.write(`\nbench: ${signal}: stopping every child process\n`);
    killAllChildren();
    process.exit(code);
  });
}

export function distPath(relative: string): string {
  return fileURLToPath(new URL(`../../${relative}`, import.meta.url));
}

/** A port the kernel just handed out; the tiny window before the child binds it is acceptable for a benchmark. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export interface ExitInfo {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/** Text that arrives in chunks, handed on a whole line at a time; reset() drops a partial line. */
class Lines {
  private pending = '';
  constructor(private readonly onLine: (line: string) => void) {}

  push(chunk: string): void {
    this.pending += chunk;
    let nl: number;
    while ((nl = this.pending.indexOf('\n')) !== -1) {
      this.onLine(this.pending.slice(0, nl));
      this.pending = this.pending.slice(nl + 1);
    }
  }

  reset(): void {
    this.pending = '';
  }
}

/** A started child: its pid, its output (pino lines parsed when they are JSON), and how to stop it. */
export class Child {
  readonly exited: Promise<ExitInfo>;
  exit: ExitInfo | undefined;
  private tail = '';
  private readonly waiters: Array<{ test: (line: Record<string, unknown>) => boolean; resolve: (line: Record<string, unknown>) => void }> = [];
  readonly spawnedAt = performance.now();
  /** Of a child whose stdout is logFile: how far it has been read, and the timer reading it while someone waits. */
  private readonly logRead = { offset: 0, lines: new Lines((line) => this.onLine(line)), decoder: new StringDecoder('utf8'), timer: undefined as NodeJS.Timeout | undefined };

  constructor(readonly name: string, readonly child: ChildProcess, private readonly logFile?: string) {
    live.add(child);
    this.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        live.delete(child);
        this.exit = { code, signal };
        resolve(this.exit);
      });
    });
    // Always drained: a full pipe would block the child's logger and skew what we measure. This process is
    // the load generator: lines are split and parsed only while someone waits for one, otherwise only a tail is kept.
    for (const stream of [child.stdout, child.stderr]) {
      const lines = new Lines((line) => this.onLine(line));
      stream?.setEncoding('utf8');
      stream?.on('data', (chunk: string) => {
        this.tail = this.tail.length + chunk.length > outputTailChars * 2 ? (this.tail + chunk).slice(-outputTailChars) : this.tail + chunk;
        if (this.waiters.length === 0) lines.reset();
        else lines.push(chunk);
      });
    }
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  get alive(): boolean {
    return this.exit === undefined;
  }

  output(): string {
    if (this.logFile === undefined) return this.tail.slice(-outputTailChars);
    let logTail = '';
    try {
      const fd = openSync(this.logFile, 'r');
      try {
        const buf = Buffer.alloc(outputTailChars);
        const n = readSync(fd, buf, 0, buf.length, Math.max(0, fstatSync(fd).size - buf.length));
        logTail = buf.toString('utf8', 0, n);
      } finally {
        closeSync(fd);
      }
    } catch { /* not there */ }
    return `${logTail}${this.tail}`.slice(-outputTailChars);
  }

  /** Resolves with the first JSON log line from now on that passes test: register before the line can appear. */
  logged(test: (line: Record<string, unknown>) => boolean): Promise<Record<string, unknown>> {
    if (this.logFile !== undefined) this.logRead.timer ??= setInterval(() => this.readLog(), logPollIntervalMs).unref();
    return new Promise((resolve) => this.waiters.push({ test, resolve }));
  }

  /** The log file's new lines, to the waiters; reading stops when none waits. */
  private readLog(): void {
    const read = this.logRead;
    const buf = Buffer.allocUnsafe(logReadBytes);
    try {
      const fd = openSync(this.logFile!, 'r');
      try {
        for (let n; this.waiters.length > 0 && (n = readSync(fd, buf, 0, buf.length, read.offset)) > 0;) {
          read.offset += n;
          read.lines.push(read.decoder.write(buf.subarray(0, n)));
        }
      } finally {
        closeSync(fd);
      }
    } catch { /* not there yet */ }
    if (this.waiters.length === 0 || !this.alive) {
      clearInterval(read.timer);
      read.timer = undefined;
    }
  }

  /** At once, for a child whose data is thrown away (a graceful stop would first write a snapshot of everything). */
  async kill(): Promise<ExitInfo> {
    if (this.exit !== undefined) return this.exit;
    this.child.kill('SIGKILL');
    return this.exited;
  }

  /** SIGTERM, then SIGKILL after the grace time. */
  async stop(graceMs = stopGraceMs): Promise<ExitInfo> {
    if (this.exit !== undefined) return this.exit;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
    const info = await this.exited;
    clearTimeout(timer);
    return info;
  }

  private onLine(line: string): void {
    if (!line.startsWith('{') || this.waiters.length === 0) return;
    let parsed: Record<string, unknown>;
    try {
      parsed = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return;
    }
    for (let i = this.waiters.length - 1; i >= 0; i--) {
      const waiter = this.waiters[i]!;
      if (waiter.test(parsed)) {
        this.waiters.splice(i, 1);
        waiter.resolve(parsed);
      }
    }
  }
}

/**
 * logFile: the child's stdout goes there instead of to this process. The real server logs an audit line
 * per authentication (~12 MB a second in A and B); through a pipe this process, the load generator, read
 * and decoded all of it, CPU per request that the ceiling's requests do not cost it.
 */
export function startChild(name: string, script: string, args: readonly string[], env: Readonly<Record<string, string>>, logFile?: string): Child {
  const stdout = logFile === undefined ? 'pipe' : openSync(logFile, 'w');
  try {
    const child = spawn(process.execPath, [script, ...args], {
      env: { ...process.env, ...env },
      stdio: ['ignore', stdout, 'pipe'],
    });
    return new Child(name, child, logFile);
  } finally {
    // The child has its own copy.
    if (typeof stdout === 'number') closeSync(stdout);
  }
}

/** Runs a node script to completion, echoing its output with a prefix; rejects on a non-zero exit. */
export async function runToCompletion(name: string, script: string, args: readonly string[], echo: (line: string) => void): Promise<void> {
  const child = spawn(process.execPath, [script, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  live.add(child);
  for (const stream of [child.stdout, child.stderr]) {
    const lines = new Lines(echo);
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => lines.push(chunk));
  }
  const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
  live.delete(child);
  if (code !== 0) throw new Error(`${name} exited with code ${String(code)}`);
}

/** Polls GET /health until it answers 200; rejects if the child dies first or the time runs out. */
export async function waitHealthy(child: Child, port: number, timeoutMs: number): Promise<number> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    if (!child.alive) throw new Error(`${child.name} exited (${JSON.stringify(child.exit)}) before answering /health:\n${child.output()}`);
    try {
      const res = await fetch(`http://127.0.0.1:${port}/health`, { signal: AbortSignal.timeout(healthRequestTimeoutMs) });
      await res.arrayBuffer();
      if (res.status === 200) return performance.now();
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, healthPollIntervalMs));
  }
  throw new Error(`${child.name} did not answer /health within ${timeoutMs} ms:\n${child.output()}`);
}

/** A field of /proc/<pid>/status in bytes (VmRSS: resident now; VmHWM: the peak so far). Linux only; NaN elsewhere. */
export function procStatusBytes(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  try {
    const text = readFileSync(`/proc/${pid}/status`, 'utf8');
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text);
    return m === null ? Number.NaN : Number(m[1]) * 1024;
  } catch {
    return Number.NaN;
  }
}

/** Clock ticks per second of /proc's CPU times: USER_HZ, 100 on every Linux architecture Node runs on. */
const procTicksPerSec = 100;

/**
 * CPU seconds (user + system) a process has used, or one of its threads (tid; the main thread's tid
 * is the pid). Linux only; NaN elsewhere.
 */
export function procCpuSeconds(pid: number, tid?: number): number {
  try {
    const text = readFileSync(tid === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`, 'utf8');
    // The command name may hold spaces and parentheses: fields are counted after its closing one.
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / procTicksPerSec;
  } catch {
    return Number.NaN;
  }
}

/**
 * Counts fdatasync calls of a process with `perf stat` on the syscall tracepoint, which costs the
 * traced process next to nothing (unlike strace). Undefined when perf is missing or not permitted.
 */
export class SyscallCounter {
  private constructor(private readonly child: ChildProcess, private readonly done: Promise<string>) {}

  static async start(pid: number, tracepoint: string): Promise<SyscallCounter | undefined> {
    let child: ChildProcess;
    try {
      child = spawn('perf', ['stat', '-x', ',', '-e', tracepoint, '-p', String(pid)], { stdio: ['ignore', 'ignore', 'pipe'] });
    } catch {
      return undefined;
    }
    live.add(child);
    let text = '';
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (chunk: string) => { text += chunk; });
    const done = new Promise<string>((resolve) => {
      child.once('error', () => resolve(''));
      child.once('exit', () => { live.delete(child); resolve(text); });
    });
    // perf needs a moment to attach; an early exit means it cannot run here.
    const early = await Promise.race([done.then(() => true), new Promise<false>((r) => setTimeout(() => r(false), 300))]);
    return early ? undefined : new SyscallCounter(child, done);
  }

  /** Stops counting; the count, or undefined if perf printed none. */
  async stop(): Promise<number | undefined> {
    this.child.kill('SIGINT');
    const text = await this.done;
    const line = text.split('\n').find((l) => /^\d+,/.test(l));
    return line === undefined ? undefined : Number(line.split(',')[0]);
  }
}
