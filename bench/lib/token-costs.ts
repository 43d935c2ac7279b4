// The token bench's child process (bench/tokens.ts runs it pinned to one core): the floor of Ed25519 with node:crypto, jose's signing cost, and a client's local verification rate.
//
// `node dist/bench/lib/token-costs.js sign --sample TOKEN --seconds S --out FILE`
// `node dist/bench/lib/token-costs.js verify --base-url URL --tokens FILE --seconds S --in-flight N --out FILE`
//
// A process of its own, so that what it measures shares its core with nothing of the benchmark's: the server
// idles meanwhile and the load generator is not running. CPU is read process-wide (process.cpuUsage), which
// counts the libuv threads WebCrypto runs its jobs on.

import { createPublicKey, generateKeyPairSync, sign, verify, type JsonWebKey, type KeyObject } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { decodeProtectedHeader, importJWK, SignJWT, type JWTPayload } from 'jose';
import { AuthClient } from '../../src/client/index.js';

/** One token to verify and the Application it must be for. */
export interface TokenToVerify {
  readonly token: string;
  readonly audience: string;
}

// Rates and costs are per second of CPU, not of wall time: on a shared machine another process may hold the
// same core for a while, which would lower a wall-clock rate without saying so. Each also gives its share of
// the core (CPU over wall time), 1 when it had the core to itself.

export interface SignCosts {
  /** node:crypto's one-shot Ed25519 sign of a token's signing input, one after another: the floor of issuing a token. */
  readonly nodeSignCpuUs: number;
  readonly nodeSigns: number;
  readonly nodeSignCoreShare: number;
  /** jose's SignJWT with an Ed25519 CryptoKey (what the server does per token), signInFlight at once: CPU per token. */
  readonly joseSignCpuUs: number;
  readonly joseSigns: number;
  readonly joseSignInFlight: number;
  readonly signingInputBytes: number;
}

export interface VerifyCosts {
  readonly tokens: number;
  /** node:crypto's one-shot Ed25519 verify over the same tokens, against the published keys: the floor. */
  readonly nodeVerifyPerCpuS: number;
  /** The typed client's verifyAccessToken on each token once (the first token, which loads jose and the JWKS, aside). */
  readonly firstPassPerCpuS: number;
  /** Then over the same tokens round and round for `seconds`: the headline. */
  readonly clientVerifyPerCpuS: number;
  readonly clientVerifyPerWallS: number;
  readonly clientVerifies: number;
  readonly clientCoreShare: number;
  readonly inFlight: number;
  /** Requests the client made during the measured loop: 0 when its cached JWKS and issuer serve every call. */
  readonly clientRequestsDuringLoop: number;
  readonly seconds: number;
}

/** jose signing runs on the libuv pool: this many at once keep it busy, as the server's concurrent successes do. */
const signInFlight = 16;

function args(argv: readonly string[]): Map<string, string> {
  const out = new Map<string, string>();
  for (let i = 1; i < argv.length; i += 2) {
    const name = argv[i]!;
    const value = argv[i + 1];
    if (!name.startsWith('--') || value === undefined) throw new Error(`bad argument ${name}`);
    out.set(name.slice(2), value);
  }
  return out;
}

function need(a: Map<string, string>, name: string): string {
  const value = a.get(name);
  if (value === undefined) throw new Error(`--${name} is needed`);
  return value;
}

function cpuS(since: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(since);
  return (used.user + used.system) / 1e6;
}

interface Measured { readonly count: number; readonly wallS: number; readonly cpuS: number }

/** Calls op until seconds have passed (the clock read every batch of calls). */
function loopFor(seconds: number, op: (i: number) => void): Measured {
  const batch = 64;
  const started = performance.now();
  const cpuBefore = process.cpuUsage();
  const until = started + seconds * 1000;
  let count = 0;
  while (performance.now() < until) {
    for (let k = 0; k < batch; k++) op(count++);
  }
  return { count, wallS: (performance.now() - started) / 1000, cpuS: cpuS(cpuBefore) };
}

/** The same async operation inFlight at a time, until seconds have passed or (limit) op has been called limit times. */
async function loopForAsync(seconds: number, inFlight: number, op: (i: number) => Promise<unknown>, limit = Infinity): Promise<Measured> {
  const started = performance.now();
  const cpuBefore = process.cpuUsage();
  const until = started + seconds * 1000;
  let next = 0;
  await Promise.all(Array.from({ length: inFlight }, async () => {
    while (next < limit && performance.now() < until) await op(next++);
  }));
  return { count: next, wallS: (performance.now() - started) / 1000, cpuS: cpuS(cpuBefore) };
}

async function signCosts(a: Map<string, string>): Promise<SignCosts> {
  const sample = need(a, 'sample');
  const seconds = Number(need(a, 'seconds'));
  const [head, payload] = sample.split('.') as [string, string];
  const input = Buffer.from(`${head}.${payload}`);
  // A fresh key pair of the same kind: the published keys' private halves stay in the server's data dir.
  const { privateKey } = generateKeyPairSync('ed25519');
  for (let i = 0; i < 1000; i++) sign(null, input, privateKey);
  const node = loopFor(seconds, () => sign(null, input, privateKey));

  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as JWTPayload;
  const joseKey = await importJWK(privateKey.export({ format: 'jwk' }) as JsonWebKey & { kty: string }, 'EdDSA');
  const joseSign = (): Promise<string> => new SignJWT(claims).setProtectedHeader({ alg: 'EdDSA', kid: 'bench', typ: 'JWT' }).sign(joseKey);
  await loopForAsync(Math.min(1, seconds), signInFlight, joseSign);
  const jose = await loopForAsync(seconds, signInFlight, joseSign);
  return {
    nodeSignCpuUs: (node.cpuS * 1e6) / node.count, nodeSigns: node.count, nodeSignCoreShare: node.cpuS / node.wallS,
    joseSignCpuUs: (jose.cpuS * 1e6) / jose.count, joseSigns: jose.count, joseSignInFlight: signInFlight, signingInputBytes: input.length,
  };
}

/** The service's published keys by kid, as node:crypto KeyObjects. */
async function publishedKeys(baseUrl: string): Promise<Map<string, KeyObject>> {
  const res = await fetch(`${baseUrl}/.well-known/jwks.json`);
  const set = await res.json() as { keys: Array<JsonWebKey & { kid: string }> };
  return new Map(set.keys.map((jwk) => [jwk.kid, createPublicKey({ key: jwk, format: 'jwk' })]));
}

async function verifyCosts(a: Map<string, string>): Promise<VerifyCosts> {
  const baseUrl = need(a, 'base-url');
  const seconds = Number(need(a, 'seconds'));
  const inFlight = Number(need(a, 'in-flight'));
  const tokens = JSON.parse(readFileSync(need(a, 'tokens'), 'utf8')) as TokenToVerify[];

  const keys = await publishedKeys(baseUrl);
  const split = tokens.map(({ token }) => {
    const key = keys.get(String(decodeProtectedHeader(token).kid));
    if (key === undefined) throw new Error('a token names a kid the JWKS does not publish');
    const dot = token.lastIndexOf('.');
    return { input: Buffer.from(token.slice(0, dot)), signature: Buffer.from(token.slice(dot + 1), 'base64url'), key };
  });
  if (!split.every((t) => verify(null, t.input, t.key, t.signature))) throw new Error('node:crypto refuses a token');
  const node = loopFor(seconds, (i) => {
    const t = split[i % split.length]!;
    verify(null, t.input, t.key, t.signature);
  });

  let requests = 0;
  const client = new AuthClient({ baseUrl, credentials: null, onResponse: () => { requests++; } });
  const verifyOne = async (i: number): Promise<void> => {
    const t = tokens[i % tokens.length]!;
    const claims = await client.verifyAccessToken(t.token, { audience: t.audience });
    if (claims.aud !== t.audience) throw new Error('a verified token for another Application');
  };
  // The first token loads jose and fetches the issuer and the JWKS; then each of the others once, each of which must verify.
  await verifyOne(0);
  const firstPass = await loopForAsync(Infinity, inFlight, (i) => verifyOne(i + 1), tokens.length - 1);
  const before = requests;
  const measured = await loopForAsync(seconds, inFlight, verifyOne);
  return {
    tokens: tokens.length, nodeVerifyPerCpuS: node.count / node.cpuS, firstPassPerCpuS: firstPass.count / firstPass.cpuS,
    clientVerifyPerCpuS: measured.count / measured.cpuS, clientVerifyPerWallS: measured.count / measured.wallS, clientVerifies: measured.count,
    clientCoreShare: measured.cpuS / measured.wallS, inFlight, clientRequestsDuringLoop: requests - before, seconds,
  };
}

async function main(): Promise<void> {
  const mode = process.argv[2];
  const a = args(process.argv.slice(2));
  const result = mode === 'sign' ? await signCosts(a) : mode === 'verify' ? await verifyCosts(a) : undefined;
  if (result === undefined) throw new Error(`mode must be sign or verify, not ${String(mode)}`);
  writeFileSync(need(a, 'out'), `${JSON.stringify(result)}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`token-costs: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
  process.exit(1);
});
