// Enumeration by timing, measured outside `npm test`: `npm run test:timing -- --samples 500` sends interleaved authentications of a known account with a wrong secret and of an unknown one, against the real server with production argon2 settings, and reports a Welch t-test per pair (target: |t| < 5).
//
// Options: --samples N per side (default 400), --warmup N (default 30). The limiter is turned off here
// (it would answer later attempts as locked, which is its own, separately tested, behaviour).

import { startServer, adminEmail, adminPassword, basicAuth, type ServerProcess } from '../helpers/server.js';
import { numberOption } from '../helpers/fault-args.js';


const samples = numberOption('samples', 400);
const warmup = numberOption('warmup', 30);

interface Stats { n: number; mean: number; variance: number }

function stats(xs: readonly number[]): Stats {
  const n = xs.length;
  const mean = xs.reduce((a, b) => a + b, 0) / n;
  const variance = xs.reduce((a, b) => a + (b - mean) ** 2, 0) / (n - 1);
  return { n, mean, variance };
}

/** Welch's t statistic: the difference of the means in units of its standard error, unequal variances allowed. */
function welchT(a: Stats, b: Stats): number {
  return (a.mean - b.mean) / Math.sqrt(a.variance / a.n + b.variance / b.n);
}

async function timed(send: () => Promise<Response>): Promise<number> {
  const started = process.hrtime.bigint();
  const res = await send();
  await res.arrayBuffer();
  return Number(process.hrtime.bigint() - started) / 1e6;
}

async function compare(name: string, a: () => Promise<Response>, b: () => Promise<Response>): Promise<string> {
  for (let i = 0; i < warmup; i++) { await a(); await b(); }
  const ta: number[] = [];
  const tb: number[] = [];
  for (let i = 0; i < samples; i++) {
    // Interleaved, in a random order per pair, so drift (GC, CPU frequency, other load) hits both sides alike.
    if (Math.random() < 0.5) { ta.push(await timed(a)); tb.push(await timed(b)); } else { tb.push(await timed(b)); ta.push(await timed(a)); }
  }
  const sa = stats(ta);
  const sb = stats(tb);
  const t = welchT(sa, sb);
  return `${name}: known ${sa.mean.toFixed(3)} ms (sd ${Math.sqrt(sa.variance).toFixed(3)}), unknown ${sb.mean.toFixed(3)} ms (sd ${Math.sqrt(sb.variance).toFixed(3)}), n=${samples} each, |t| = ${Math.abs(t).toFixed(2)} ${Math.abs(t) < 5 ? '(under 5)' : '(OVER 5)'}`;
}

let server: ServerProcess | undefined;
try {
  // Production argon2 parameters (the helper's fast ones would hide a difference in hashing work).
  server = await startServer({ env: {
    ARGON2_MEMORY_KIB: '19456', ARGON2_ITERATIONS: '2', HASH_WORKERS: '1',
    BRUTE_FORCE_FAILURE_FACTOR: '0', BRUTE_FORCE_ADDRESS_FAILURE_FACTOR: '0', BRUTE_FORCE_TARPIT_MS: '0',
  } });
  const admin = basicAuth(adminEmail, adminPassword);
  const base = server.baseUrl;
  const post = (path: string, body: unknown): Promise<Response> => fetch(base + path, { method: 'POST', headers: { authorization: admin, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const app = ((await (await post('/applications/application', { name: 'timing' })).json()) as { service: { result: { application: { id: string } } } }).service.result.application.id;
  const user = ((await (await post('/users/user', { email: 'timing@example.com', password: 'timing-password-1', applications: [app] })).json()) as { service: { result: { user: { id: string } } } }).service.result.user.id;
  const key = ((await (await post(`/users/user/${user}/apikey`, { name: 'k' })).json()) as { service: { result: { apikey: { id: string } } } }).service.result.apikey.id;
  let ip = 0;
  const auth = (type: string, username: string, password: string) => (): Promise<Response> =>
    post('/authenticate', { type, application: app, credential: { username, password }, ip_address: `198.51.100.${ip++ % 250}` });
  const basic = (username: string) => (): Promise<Response> => fetch(`${base}/applications`, { headers: { authorization: basicAuth(username, 'wrong-password-x') } });
  console.log(`timing: ${samples} interleaved samples per side, ${warmup} warm-up pairs, argon2id m=19456 KiB t=2, one hash worker`);
  console.log(await compare('POST /authenticate username', auth('username', 'timing@example.com', 'wrong-password-x'), auth('username', 'nobody@example.com', 'wrong-password-x')));
  console.log(await compare('POST /authenticate apikey', auth('apikey', key, 'A'.repeat(43)), auth('apikey', 'ZZZZZZZZZZZZZZZZZZZZZZZZZ', 'A'.repeat(43))));
  console.log(await compare('Basic caller', basic(adminEmail), basic('nobody@example.com')));
} finally {
  await server?.dispose();
}
