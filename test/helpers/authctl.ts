// Runs the built authctl as a child process, as an operator would, and hands back its exit code and output.

import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { adminEmail, adminPassword, type ServerProcess } from './server.js';

const authctlJs = fileURLToPath(new URL('../../src/cli/authctl.js', import.meta.url));
const runTimeoutMs = 30_000;

export interface CliResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface CliOptions {
  readonly env?: Readonly<Record<string, string>>;
  /** Written to standard input, which is then closed. */
  readonly stdin?: string;
}

/** Fast argon2id, like the test servers', for reset-admin-password. */
const fastHashingEnv = { ARGON2_MEMORY_KIB: '1024', ARGON2_ITERATIONS: '1' };

export function authctl(args: readonly string[], opts: CliOptions = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [authctlJs, ...args], {
      env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', ...fastHashingEnv, ...opts.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (s: string) => { stdout += s; });
    child.stderr.setEncoding('utf8').on('data', (s: string) => { stderr += s; });
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`authctl ${args.join(' ')} did not finish\n${stdout}\n${stderr}`)); }, runTimeoutMs);
    child.on('error', reject);
    child.on('close', (code) => { clearTimeout(timer); resolve({ code, stdout, stderr }); });
    child.stdin.end(opts.stdin ?? '');
  });
}

/** AUTHCTL_URL, AUTHCTL_USER and AUTHCTL_PASSWORD for the first admin of this server. */
export function adminEnv(server: ServerProcess): Record<string, string> {
  return { AUTHCTL_URL: server.baseUrl, AUTHCTL_USER: adminEmail, AUTHCTL_PASSWORD: adminPassword };
}

/** The command names `authctl --help` lists. */
export function commandNames(overview: string): string[] {
  return overview.split('\n').filter((l) => /^ {2}\S/.test(l)).map((l) => l.trim().split(/\s{2,}/)[0]!);
}
