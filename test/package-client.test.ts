// The package as a user gets it: what `npm pack` ships, and its typed client installed into a strict TypeScript project, type-checked and run against a live server.
//
// Offline on purpose: the tarball is unpacked into the scratch project's node_modules/authd, which is what npm
// does for a dependency; the client needs nothing else at run time, and TypeScript and @types/node come from
// this repository's own node_modules.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { adminEmail, adminPassword, startServer, type ServerProcess } from './helpers/server.js';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const repoRequire = createRequire(join(repoRoot, 'package.json'));
const tscJs = repoRequire.resolve('typescript/bin/tsc');
const typescriptVersion = (repoRequire('typescript/package.json') as { version: string }).version;
const nodeTypesRoot = dirname(dirname(repoRequire.resolve('@types/node/package.json')));
const buildTimeoutMs = 120_000;
const stepTimeoutMs = 60_000;
/** npm pack --json lists every file; tsc's errors, if any, can be long. */
const outputBytesMax = 16 * 1024 * 1024;

interface Run { readonly stdout: string; readonly stderr: string }

function run(file: string, args: readonly string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { cwd: opts.cwd, env: opts.env ?? process.env, timeout: opts.timeoutMs ?? stepTimeoutMs, maxBuffer: outputBytesMax },
      (err, stdout, stderr) => {
        if (err !== null) reject(new Error(`${file} ${args.join(' ')} failed: ${err.message}\n--- stdout ---\n${stdout}\n--- stderr ---\n${stderr}`));
        else resolve({ stdout, stderr });
      });
  });
}

interface PackedFile { readonly path: string; readonly size: number }
interface PackResult { readonly filename: string; readonly size: number; readonly unpackedSize: number; readonly entryCount: number; readonly files: PackedFile[] }

let workDir: string;
let pack: PackResult;
let tarball: string;

before(async () => {
  workDir = mkdtempSync(join(tmpdir(), 'authd-package-test-'));
  // What prepack runs, once: npm pack would build twice (prepack, then prepare). With dist up to date, as after
  // `npm test`'s own tsc, the main build writes nothing, so the tests running beside this one are undisturbed.
  await run('npm', ['run', 'build'], { cwd: repoRoot, timeoutMs: buildTimeoutMs });
  const { stdout } = await run('npm', ['pack', '--json', '--ignore-scripts', '--offline', '--pack-destination', workDir], { cwd: repoRoot });
  const packs = JSON.parse(stdout) as PackResult[];
  assert.equal(packs.length, 1);
  pack = packs[0]!;
  tarball = join(workDir, pack.filename);
});

after(() => {
  if (workDir !== undefined) rmSync(workDir, { recursive: true, force: true });
});

test('npm pack ships the built service, CLI and client, and no tests, benchmarks, sources or source maps', (t) => {
  t.diagnostic(`npm pack: ${pack.filename}, ${pack.entryCount} files, ${pack.size} bytes packed, ${pack.unpackedSize} bytes unpacked`);
  const paths = pack.files.map((f) => f.path);
  for (const expected of [
    'package.json', 'README.md', 'LICENSE', 'docs/authd.service', 'dist/src/main.js', 'dist/src/cli/authctl.js',
    'dist/src/client/index.js', 'dist/src/client/index.d.ts', 'dist/src/client/client.d.ts', 'dist/src/client/types.d.ts',
  ]) {
    assert.ok(paths.includes(expected), `the pack holds ${expected}`);
  }
  const unwanted = paths.filter((p) =>
    /^(test|bench|src|data)\//.test(p) || /^dist\/(test|bench)\//.test(p) || (p.endsWith('.ts') && !p.endsWith('.d.ts')) ||
    p.endsWith('.map') || p.endsWith('.tsbuildinfo') || /(^|\/)tsconfig[^/]*\.json$/.test(p) || p === 'package-lock.json');
  assert.deepEqual(unwanted, [], 'nothing a user does not need');
});

test('the packed client type-checks in a strict project and answers against a live server', async (t) => {
  const project = join(workDir, 'scratch');
  const installed = join(project, 'node_modules', 'authd');
  mkdirSync(installed, { recursive: true });
  await run('tar', ['-xzf', tarball, '-C', installed, '--strip-components=1']);
  assert.ok(readdirSync(join(installed, 'dist', 'src', 'client')).includes('index.d.ts'));
  // The client's one dependency (verifyAccessToken), as npm would install it beside the package.
  cpSync(dirname(repoRequire.resolve('jose/package.json')), join(project, 'node_modules', 'jose'), { recursive: true });

  // erasableSyntaxOnly came with TypeScript 5.8; with an older compiler the other settings still apply.
  const [major = 0, minor = 0] = typescriptVersion.split('.').map(Number);
  const knowsErasableSyntaxOnly = major > 5 || (major === 5 && minor >= 8);
  if (!knowsErasableSyntaxOnly) t.diagnostic(`TypeScript ${typescriptVersion} does not know erasableSyntaxOnly; checked without it`);
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'scratch', private: true, type: 'module' }));
  writeFileSync(join(project, 'tsconfig.json'), JSON.stringify({
    compilerOptions: {
      target: 'ES2022', module: 'nodenext', moduleResolution: 'nodenext', strict: true,
      exactOptionalPropertyTypes: true, noUncheckedIndexedAccess: true, ...(knowsErasableSyntaxOnly ? { erasableSyntaxOnly: true } : {}),
      // The package's declarations are checked too, as a consumer who does not skip them would.
      skipLibCheck: false, noEmitOnError: true, outDir: 'out', typeRoots: [nodeTypesRoot], types: ['node'],
    },
    files: ['main.ts'],
  }, null, 2));
  writeFileSync(join(project, 'main.ts'), scratchProgram);

  const checked = await run(process.execPath, [tscJs, '-p', project]).catch((err: unknown) => {
    throw new Error(`the packed client does not type-check under strict settings: ${err instanceof Error ? err.message : String(err)}`);
  });
  assert.equal(checked.stdout, '');

  const server: ServerProcess = await startServer();
  try {
    const { stdout } = await run(process.execPath, [join(project, 'out', 'main.js')], {
      cwd: project,
      env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', AUTHD_URL: server.baseUrl, AUTHD_USER: adminEmail, AUTHD_PASSWORD: adminPassword },
    });
    const answer = JSON.parse(stdout) as Record<string, unknown>;
    assert.deepEqual(answer, { health: 'ok', authenticated: true, email: adminEmail, refused: [400, 'invalid_id'], tokenFor: adminEmail });
  } finally {
    await server.dispose();
  }
});

/** What a user of the client writes: every value typed through the package's declarations. */
const scratchProgram = `import { AuthClient, AuthError, type AccessTokenClaims, type AuthenticateResult, type ClientOptions, type UserAuthenticated, type UserMinimal } from 'authd';

const baseUrl = process.env['AUTHD_URL'];
const username = process.env['AUTHD_USER'];
const password = process.env['AUTHD_PASSWORD'];
if (baseUrl === undefined || username === undefined || password === undefined) throw new Error('AUTHD_URL, AUTHD_USER and AUTHD_PASSWORD are needed');

const options: ClientOptions = { baseUrl, credentials: { username, password }, timeoutMs: 10_000 };
const client = new AuthClient(options);
const health: { status: string } = await client.health();
const applications = await client.applications.list();
const base = applications[0];
if (base === undefined) throw new Error('no Application');
const result: AuthenticateResult = await client.authenticate({ type: 'username', application: base.id, credential: { username, password } });
const user: UserAuthenticated | undefined = result.user;
const brief: UserMinimal[] = await client.users.list({ minimal: true });
if (brief.length === 0) throw new Error('no User listed');

let refused: [number, string] | undefined;
try {
  await client.users.get('not an id');
} catch (err) {
  if (!(err instanceof AuthError)) throw err;
  refused = [err.status, err.code];
}
// Access tokens: turned on for the base Application, then verified here against the service's JWKS.
await client.applications.update(base.id, { tokens: { enabled: true } });
const withToken: AuthenticateResult = await client.authenticate({ type: 'username', application: base.id, credential: { username, password } });
if (withToken.access_token === undefined) throw new Error('no access_token');
const claims: AccessTokenClaims = await client.verifyAccessToken(withToken.access_token, { audience: base.id });
process.stdout.write(JSON.stringify({ health: health.status, authenticated: result.authenticated, email: user?.email, refused, tokenFor: claims.email }));
`;
