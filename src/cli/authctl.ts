#!/usr/bin/env node
// authctl, the operator's command line: dispatches to the commands of src/cli/online.ts, src/cli/offline.ts and src/cli/cluster.ts; exit 0 ok, 1 failure, 2 usage.

import { realpathSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { AuthError } from '../client/client.js';
import { packageVersion } from '../config/package-version.js';
import {
  CommandError, exitFailure, exitOk, exitUsage, parse, processOutput, UsageError, type Command, type Output,
} from './command.js';
import { clusterCommands } from './cluster.js';
import { offlineCommands } from './offline.js';
import { onlineCommands } from './online.js';

const commands: readonly Command[] = [...onlineCommands, ...offlineCommands, ...clusterCommands];

function overview(): string {
  const width = Math.max(...commands.map((c) => c.name.length));
  return [
    'authctl: administer an authd service',
    '',
    'usage: authctl <command> [options]      authctl <command> --help      authctl --version',
    '',
    'Against a running server (--url, --user, --password or AUTHCTL_URL, AUTHCTL_USER, AUTHCTL_PASSWORD):',
    ...onlineCommands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    'On a data directory (--data-dir or DATA_DIR):',
    ...offlineCommands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    'On a cluster\'s NATS servers (--nats or CLUSTER_NATS_SERVERS):',
    ...clusterCommands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    'Exit status: 0 done, 1 failed, 2 wrong usage.',
  ].join('\n');
}

/** The command named by the first one or two words of argv, and the arguments after them. */
function find(argv: readonly string[]): { command: Command | undefined; rest: string[] } {
  for (const words of [2, 1]) {
    const name = argv.slice(0, words).join(' ');
    const command = commands.find((c) => c.name === name);
    if (command !== undefined) return { command, rest: argv.slice(words) };
  }
  return { command: undefined, rest: [] };
}

export async function runAuthctl(argv: readonly string[], io: Output = processOutput): Promise<number> {
  if (argv[0] === '--version') {
    const version = packageVersion();
    if (version === undefined) {
      io.err('authctl: no version in the package.json above this program');
      return exitFailure;
    }
    io.out(`authctl ${version}`);
    return exitOk;
  }
  if (argv.length === 0 || argv[0] === '--help' || argv[0] === '-h' || argv[0] === 'help') {
    io.out(overview());
    return argv.length === 0 ? exitUsage : exitOk;
  }
  const { command, rest } = find(argv);
  if (command === undefined) {
    const group = commands.filter((c) => c.name.startsWith(`${argv[0]} `));
    if (group.length > 0 && (argv[1] === undefined || argv[1] === '--help' || argv[1] === '-h')) {
      io.out([`authctl ${argv[0]} <action>:`, ...group.map((c) => `  ${c.name}  ${c.summary}`)].join('\n'));
      return argv[1] === undefined ? exitUsage : exitOk;
    }
    io.err(`authctl: unknown command "${argv.slice(0, group.length > 0 ? 2 : 1).join(' ')}"; see authctl --help`);
    return exitUsage;
  }
  try {
    const { values, positionals, help } = parse(command, rest);
    if (help) {
      io.out(`${command.summary}\n\nusage: ${command.help}`);
      return exitOk;
    }
    return await command.run(values, positionals, io);
  } catch (err) {
    if (err instanceof UsageError) {
      io.err(`authctl ${command.name}: ${err.message}; see authctl ${command.name} --help`);
      return exitUsage;
    }
    if (err instanceof AuthError) {
      io.err(`authctl ${command.name}: ${err.status === 0 ? '' : `the server refused (${err.status} ${err.code}): `}${err.message}`);
      return exitFailure;
    }
    if (err instanceof CommandError) {
      io.err(`authctl ${command.name}: ${err.message}`);
      return exitFailure;
    }
    io.err(`authctl ${command.name}: unexpected failure: ${err instanceof Error ? err.stack ?? err.message : String(err)}`);
    return exitFailure;
  }
}

/** Run only as the program itself (directly or through the npm bin link), not when imported. */
function isMain(): boolean {
  const script = process.argv[1];
  if (script === undefined) return false;
  try {
    return import.meta.url === pathToFileURL(realpathSync(script)).href;
  } catch {
    return false;
  }
}

if (isMain()) {
  runAuthctl(process.argv.slice(2)).then(
    (code) => { process.exitCode = code; },
    (err: unknown) => { process.stderr.write(`authctl: ${String(err)}\n`); process.exitCode = exitFailure; },
  );
}
