// `npm run seed -- --users N [--data-dir DIR] [--key-file FILE] [--fixtures FILE] [--seed S] [--force]`: writes a benchmark dataset as one snapshot.

import { resolve } from 'node:path';
import { benchAdminEmail, benchPassword, defaultSeed, passwordHashesDistinct, SeedError, seedDataDir } from './lib/dataset.js';

interface SeedArgs {
  users: number;
  dataDir: string;
  keyFile: string;
  fixturesFile: string | undefined;
  seed: number;
  force: boolean;
}

const usage = 'usage: npm run seed -- --users N [--data-dir ./data] [--key-file ./secrets/server.key] [--fixtures FILE] [--seed N] [--force]';

/** Defaults match the service's own (DATA_DIR, KEY_FILE), so `npm run seed` then `npm start` just works. */
function parseArgs(argv: readonly string[]): SeedArgs {
  const args: SeedArgs = { users: 0, dataDir: './data', keyFile: './secrets/server.key', fixturesFile: undefined, seed: defaultSeed, force: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const eq = arg.indexOf('=');
    const name = eq === -1 ? arg : arg.slice(0, eq);
    if (name === '--force') { args.force = true; continue; }
    const value = eq === -1 ? argv[++i] : arg.slice(eq + 1);
    if (value === undefined) throw new SeedError(`${name} needs a value\n${usage}`);
    switch (name) {
      case '--users': args.users = Number(value.replace(/_/g, '')); break;
      case '--data-dir': args.dataDir = value; break;
      case '--key-file': args.keyFile = value; break;
      case '--fixtures': args.fixturesFile = value; break;
      case '--seed': args.seed = Number(value); break;
      default: throw new SeedError(`unknown argument ${arg}\n${usage}`);
    }
  }
  if (!Number.isSafeInteger(args.users) || args.users < 1) throw new SeedError(`--users must be a positive integer\n${usage}`);
  if (!Number.isSafeInteger(args.seed)) throw new SeedError('--seed must be an integer');
  return args;
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const log = (line: string): void => { process.stdout.write(`seed: ${line}\n`); };
  const s = await seedDataDir({
    users: args.users, dataDir: args.dataDir, keyFile: args.keyFile, force: args.force, seed: args.seed,
    fixturesFile: args.fixturesFile === undefined ? undefined : resolve(args.fixturesFile), log,
  });
  const n = (x: number): string => x.toLocaleString('en-US');
  log(`wrote ${s.snapshotPath} (${(s.snapshotBytes / 1e6).toFixed(1)} MB, base seq ${n(s.baseSeq)})`);
  log(`  ${n(s.users)} users (admin included), ${n(s.organizations)} organizations, ${n(s.applications)} applications, ${n(s.groups)} groups, ${n(s.apikeys)} API keys`);
  log(`  every user's password: ${benchPassword} (${passwordHashesDistinct} real argon2id hashes of it, m=19456 t=2 p=1, shared round-robin); admin: ${benchAdminEmail}`);
  log(`  API key secrets derive from ${resolve(args.keyFile)}; start the service with the same KEY_FILE`);
  log(`  took ${(s.totalMs / 1000).toFixed(1)} s: hash ${(s.hashMs / 1000).toFixed(2)} s, build ${(s.buildMs / 1000).toFixed(1)} s, ` +
    `write ${(s.writeMs / 1000).toFixed(1)} s, fixtures ${(s.fixturesMs / 1000).toFixed(1)} s`);
}

main().catch((err: unknown) => {
  process.stderr.write(`seed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(err instanceof SeedError ? 2 : 1);
});
