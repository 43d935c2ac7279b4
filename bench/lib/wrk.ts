// The load generator for the production-like rows: wrk replaying pre-generated requests from a file, with the CPU the generator and the server used while it ran.
//
// autocannon spends about a core of this process's CPU at ~40,000 requests a second, so on a 2-core
// machine it, not the server, sets the pace and every ratio drifts toward 1. wrk with a Lua script that
// returns ready-made request bytes costs a fraction of that per request. Each row says how busy the
// generator was, so a row measured at the generator's speed can be told apart.

import { spawn, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runLoad, type LoadResult } from './load.js';
import { procCpuSeconds } from './processes.js';
import type { CpuShare } from './report.js';

/** One wrk thread: on 2 cores the server keeps the other core. */
const wrkThreads = 1;
const wrkTimeoutS = 30;
/** /proc/<pid>/stat counts CPU in clock ticks; USER_HZ is 100 on every Linux this runs on (getconf CLK_TCK). */
const clockTicksPerS = 100;
const resultMarker = 'WRK_RESULT ';

/** One request as the generator sends it; Host and Content-Length are added when it is written out. */
export interface GenRequest {
  readonly method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: string;
}

export type GenLoadResult = LoadResult & { readonly cpu: CpuShare };

/**
 * The wrk script: reads length-prefixed raw requests at init, hands them out in turn from a start given as a
 * fraction of the file (each thread from its own offset past it), and prints one JSON line of totals and
 * latency (microseconds) when done.
 */
const luaScript = `
local requests = {}
local count = 0
local at = 0
local threads = 0
function setup(thread)
  thread:set("offset", threads)
  threads = threads + 1
end
function init(args)
  local f = assert(io.open(args[1], "rb"))
  local data = f:read("*a")
  f:close()
  local pos = 1
  while pos <= #data do
    local nl = string.find(data, "\\n", pos, true)
    local len = tonumber(string.sub(data, pos, nl - 1))
    count = count + 1
    requests[count] = string.sub(data, nl + 1, nl + len)
    pos = nl + 1 + len
  end
  at = (math.floor(count * (tonumber(args[2]) or 0)) + (offset or 0) * 7919) % count
end
function request()
  at = at + 1
  if at > count then at = 1 end
  return requests[at]
end
function done(summary, latency, _)
  local e = summary.errors
  io.write(string.format('${resultMarker}{"requests":%d,"durationUs":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,"p50Us":%.0f,"p99Us":%.0f,"maxUs":%.0f}\\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(99), latency.max))
end
`;

/**
 * The request as bytes on the wire, preceded by its length and a newline (the script's file format). The
 * Host carries no port, so one file serves authd and the ceiling alike.
 */
function rawRequest(r: GenRequest): Buffer {
  const body = r.body === undefined ? undefined : Buffer.from(r.body);
  let head = `${r.method} ${r.path} HTTP/1.1\r\nHost: 127.0.0.1\r\n`;
  for (const [name, value] of Object.entries(r.headers)) head += `${name}: ${value}\r\n`;
  if (body !== undefined) head += `Content-Length: ${body.length}\r\n`;
  const raw = Buffer.concat([Buffer.from(`${head}\r\n`), body ?? Buffer.alloc(0)]);
  return Buffer.concat([Buffer.from(`${raw.length}\n`), raw]);
}

function wrkRuns(): boolean {
  const probe = spawnSync('wrk', ['-v'], { encoding: 'utf8' });
  return probe.error === undefined && `${probe.stdout}${probe.stderr}`.includes('wrk');
}

/**
 * Whether wrk runs here, installing it from Debian when missing (the benchmark runs as root on a Debian
 * host); false, after a loud warning, when it cannot be had, and the caller falls back to autocannon.
 */
export function ensureWrk(log: (line: string) => void): boolean {
  if (wrkRuns()) return true;
  log('wrk not found; installing it with apt-get (Debian package wrk)');
  const update = spawnSync('apt-get', ['update'], { encoding: 'utf8' });
  const install = update.status === 0 ? spawnSync('apt-get', ['install', '-y', 'wrk'], { encoding: 'utf8' }) : update;
  if (install.status === 0 && wrkRuns()) return true;
  const why = install.error?.message ?? `${install.stderr ?? ''}`.trim().split('\n').slice(-1)[0] ?? 'unknown';
  log('!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!');
  log(`WARNING: wrk is not available (${why}); the production-like rows fall back to autocannon,`);
  log('WARNING: which runs in this process and may be the bottleneck: read their generator CPU column.');
  log('!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!');
  return false;
}

export interface Generator {
  /** Writes the requests once; the returned name is what run() takes. */
  prepare(name: string, requests: readonly GenRequest[]): string;
  /** startAt: where in the file to begin, as a fraction of it (a warm-up and the measured run that follows begin apart). */
  run(file: string, port: number, serverPid: number, connections: number, durationS: number, startAt: number): Promise<GenLoadResult>;
  readonly kind: string;
}

interface WrkTotals {
  requests: number; durationUs: number; connect: number; read: number; write: number; status: number; timeout: number;
  p50Us: number; p99Us: number; maxUs: number;
}

function fromWrk(t: WrkTotals, cpu: CpuShare): GenLoadResult {
  const durationS = t.durationUs / 1e6;
  const ok = t.requests - t.status;
  const summary = { count: ok, p50Ms: t.p50Us / 1000, p99Ms: t.p99Us / 1000, maxMs: t.maxUs / 1000 };
  return {
    durationS, reqPerSec: ok / durationS, ok: summary,
    // wrk's latency record does not tell statuses apart: the failed count is exact, its latencies are the whole run's.
    failed: { ...summary, count: t.status },
    statusCounts: t.status > 0 ? { '2xx': ok, 'non-2xx': t.status } : { '2xx': ok },
    errors: t.connect + t.read + t.write, timeouts: t.timeout, cpu,
  };
}

export function wrkGenerator(dir: string): Generator {
  const script = join(dir, 'replay.lua');
  writeFileSync(script, luaScript);
  return {
    kind: 'wrk',
    prepare(name, requests) {
      const file = join(dir, `${name}.requests`);
      writeFileSync(file, Buffer.concat(requests.map(rawRequest)));
      return file;
    },
    run(file, port, serverPid, connections, durationS, startAt) {
      const args = ['-t', String(wrkThreads), '-c', String(connections), '-d', `${durationS}s`, '--timeout', `${wrkTimeoutS}s`,
        '-s', script, `http://127.0.0.1:${port}`, '--', file, String(startAt)];
      // The shell waits for wrk, so its own cutime/cstime then hold exactly wrk's CPU, read before the shell exits.
      const child = spawn('sh', ['-c', 'wrk "$@"; rc=$?; echo; echo "SHELL_STAT $(cat /proc/$$/stat)"; exit $rc', 'sh', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
      const serverBefore = procCpuSeconds(serverPid);
      const startedMs = performance.now();
      let out = '';
      let err = '';
      child.stdout.on('data', (c: Buffer) => { out += c.toString(); });
      child.stderr.on('data', (c: Buffer) => { err += c.toString(); });
      return new Promise((resolve, reject) => {
        child.once('error', reject);
        child.once('close', (code) => {
          const wallS = (performance.now() - startedMs) / 1000;
          const serverShare = (procCpuSeconds(serverPid) - serverBefore) / wallS;
          const line = out.split('\n').find((l) => l.startsWith(resultMarker));
          const shell = out.split('\n').find((l) => l.startsWith('SHELL_STAT '));
          if (code !== 0 || line === undefined || shell === undefined) {
            reject(new Error(`wrk failed (exit ${code}): ${(err || out).trim().split('\n').slice(-3).join(' / ')}`));
            return;
          }
          const totals = JSON.parse(line.slice(resultMarker.length)) as WrkTotals;
          const stat = shell.slice('SHELL_STAT '.length);
          const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
          const wrkTicks = Number(fields[13]) + Number(fields[14]);
          resolve(fromWrk(totals, { generator: 'wrk', generatorShare: wrkTicks / clockTicksPerS / (totals.durationUs / 1e6), serverShare }));
        });
      });
    },
  };
}

/** The fallback: autocannon in this process, its CPU read from process.cpuUsage() over the run. */
export function autocannonGenerator(): Generator {
  const prepared = new Map<string, readonly GenRequest[]>();
  return {
    kind: 'autocannon',
    prepare(name, requests) {
      prepared.set(name, requests);
      return name;
    },
    async run(name, port, serverPid, connections, durationS, startAt) {
      const all = prepared.get(name) ?? [];
      const from = Math.floor(all.length * startAt);
      const requests = [...all.slice(from), ...all.slice(0, from)];
      const serverBefore = procCpuSeconds(serverPid);
      const selfBefore = process.cpuUsage();
      const startedMs = performance.now();
      const load = await runLoad({
        port, connections, durationS,
        requests: requests.map((r) => ({ method: r.method, path: r.path, headers: { ...r.headers }, ...(r.body === undefined ? {} : { body: r.body }) })),
      });
      const wallS = (performance.now() - startedMs) / 1000;
      const self = process.cpuUsage(selfBefore);
      return {
        ...load,
        cpu: { generator: 'autocannon', generatorShare: (self.user + self.system) / 1e6 / wallS, serverShare: (procCpuSeconds(serverPid) - serverBefore) / wallS },
      };
    },
  };
}

