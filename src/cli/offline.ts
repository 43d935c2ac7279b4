// authctl commands on a data directory: reset-admin-password, import and rotate-key (stopped server, through the persistence layer), verify and export (read-only).

import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream, renameSync, rmSync, type WriteStream } from 'node:fs';
import { ApiKeySecrets, writeNewKeyFile } from '../auth/apikey-secrets.js';
import { HashPool } from '../auth/hash-pool.js';
import { ConfigError, loadConfig, settings, type FsyncPolicy } from '../config/config.js';
import { apikeyNonceBytes, importRecordsPerFlush, passwordBytesMax, passwordCharsMin, privateFileMode } from '../config/limits.js';
import { DomainError } from '../domain/errors.js';
import { keyFingerprintPath, writeKeyFingerprint } from '../persist/key-fingerprint.js';
import { acquireLock, LockError, LockUnavailableError } from '../persist/lock.js';
import { openPersistence, type Persistence } from '../persist/persistence.js';
import type { PersistLogger } from '../persist/replayable.js';
import { NodeStorage } from '../persist/storage.js';
import { Committer } from '../service/committer.js';
import { MicrosClock } from '../store/clock.js';
import * as decide from '../store/decide.js';
import { newApikeyId, newEntityId } from '../store/ids.js';
import { State } from '../store/state.js';
import {
  CommandError, readStdin, stringOption, UsageError, type Command, type Options, type Output, type Values,
} from './command.js';
import { loadReadOnly, requireDataDir, verifyDataDir } from './datadir.js';
import { decideImportLines, exportLines, ImportError, importLines, type ImportOutcome } from './transfer.js';

const dataDirOption: Options = { 'data-dir': { type: 'string' } };
const dataDirHelp = '  --data-dir DIR     the data directory (DATA_DIR; default ./data)';

function dataDir(values: Values): string {
  return stringOption(values, 'data-dir') ?? process.env['DATA_DIR'] ?? settings.DATA_DIR.default;
}

/** Persistence's log lines, for an operator at a terminal: warnings and errors only, as plain text. */
function stderrLogger(io: Output): PersistLogger {
  const line = (level: string) => (obj: object, msg?: string): void => io.err(`${level}: ${msg ?? ''} ${JSON.stringify(obj)}`);
  return { info: () => undefined, warn: line('warning'), error: line('error') };
}

/** Takes the directory's lock (refusing while a server runs on it) and recovers its state, as a start does. */
async function openStopped(dir: string, io: Output, fsync: FsyncPolicy): Promise<{ state: State; persistence: Persistence }> {
  try {
    // No snapshot while records are being added: the one at close covers them.
    return await openPersistence({
      dir, fsync, createState: () => new State(), logger: stderrLogger(io), snapshotEveryRecords: Number.MAX_SAFE_INTEGER, snapshotEverySeconds: 1e9,
    });
  } catch (err) {
    if (err instanceof LockError) throw new CommandError(`${err.message}. Stop the server first (this command needs the directory to itself).`, { cause: err });
    if (err instanceof LockUnavailableError) throw new CommandError(err.message, { cause: err });
    throw err;
  }
}

function domainFailure(err: unknown, where = ''): never {
  if (err instanceof DomainError) throw new CommandError(`${where}${err.message} (${err.code})`, { cause: err });
  throw err;
}

async function newPassword(values: Values, io: Output): Promise<{ password: string; generated: boolean }> {
  let password: string | undefined;
  if (values['password-stdin'] === true) password = await readStdin();
  else password = process.env['AUTHCTL_NEW_PASSWORD'];
  const generated = password === undefined || password === '';
  if (generated) password = randomBytes(18).toString('base64url');
  if ([...password!].length < passwordCharsMin || Buffer.byteLength(password!) > passwordBytesMax) {
    throw new UsageError(`the new password must be ${passwordCharsMin} characters to ${passwordBytesMax} bytes long`);
  }
  if (!generated) io.err('using the password given');
  return { password: password!, generated };
}

const resetAdminPassword: Command = {
  name: 'reset-admin-password', summary: 'set a new password for an administrator (server stopped)',
  help: `authctl reset-admin-password [--data-dir DIR] [--email EMAIL] [--password-stdin]

Offline, on a stopped server's data directory: takes its lock, writes one log record through the
persistence layer (durable before this command exits) and a snapshot, then releases the lock.
The User is also ENABLED and put back in the base Application if it had left either; put back,
its API Keys are DISABLED and get new secrets and no roles, as for any User joining it.

${dataDirHelp}
  --email EMAIL      the administrator (default: the oldest User of the base Application)
  --password-stdin   read the new password from standard input (or set AUTHCTL_NEW_PASSWORD);
                     without either, a strong password is generated and printed once
Hashing uses ARGON2_MEMORY_KIB, ARGON2_ITERATIONS and ARGON2_PARALLELISM like the server.`,
  options: { ...dataDirOption, email: { type: 'string' }, 'password-stdin': { type: 'boolean' } },
  async run(values, _p, io) {
    const dir = dataDir(values);
    requireDataDir(dir);
    let argon2;
    try {
      argon2 = loadConfig(process.env, []).argon2;
    } catch (err) {
      if (err instanceof ConfigError) throw new UsageError(err.message);
      throw err;
    }
    const { password, generated } = await newPassword(values, io);
    const pool = new HashPool({ workers: 1, queueMax: 4, argon2 });
    let passwordHash: string;
    try {
      passwordHash = await pool.hashPassword(password);
    } finally {
      await pool.close();
    }
    const { state, persistence } = await openStopped(dir, io, 'always');
    try {
      const clock = new MicrosClock();
      clock.notBefore(state.lastAt);
      // Nonces as the server makes them (ApiKeySecrets.newNonce): a User put back in the base Application has its API Keys renewed.
      const newNonce = (): string => randomBytes(apikeyNonceBytes).toString('base64url');
      const committer = new Committer(state, persistence, clock, { newId: newEntityId, newApikeyId, newNonce });
      const email = stringOption(values, 'email');
      let outcome: { user: { id: string; email: string }; changes: string[] };
      try {
        // commit() decides synchronously: a refusal may be thrown before any promise exists.
        outcome = await committer.commit((s, ctx) => decide.resetAdminPassword(s, email, passwordHash, ctx));
      } catch (err) {
        domainFailure(err);
      }
      const { user, changes } = outcome;
      io.out(`reset ${user.email} (${user.id}): ${changes.join(', ')}; written as record ${state.lastSeq} in ${dir}`);
      if (generated) io.out(`new password: ${password}`);
    } finally {
      await persistence.close();
    }
    return 0;
  },
};

const verify: Command = {
  name: 'verify', summary: 'check every snapshot and log record of a data directory',
  help: `authctl verify [--data-dir DIR]

Reads every snapshot and every log record, checking frames, checksums, entity counts and that
sequence numbers run on without gaps, then rebuilds the state as a start would and prints its counts.
Changes nothing and needs no lock (it can run beside a server). Exits 1 when anything is damaged,
naming the file and byte offset.

${dataDirHelp}`,
  options: dataDirOption,
  async run(values, _p, io) {
    const problems = await verifyDataDir(dataDir(values), io);
    return problems === 0 ? 0 : 1;
  },
};

async function writeLine(stream: WriteStream, line: string): Promise<void> {
  if (!stream.write(`${line}\n`)) await new Promise<void>((resolve, reject) => { stream.once('drain', resolve); stream.once('error', reject); });
}

const exportCommand: Command = {
  name: 'export', summary: 'write every entity of a data directory as JSON lines (hashes included)',
  help: `authctl export [--data-dir DIR] [--out FILE]

Reads the data directory without changing it (a running server's too: the export is then the state
as of its last complete record) and writes a header line and one JSON object per entity: meta,
organizations, applications, groups, users. Users carry their password hashes and API Keys their
nonces, so keep the file as secret as the data directory (--out creates it with mode 0600).

${dataDirHelp}
  --out FILE         write here (atomically: FILE.tmp, then renamed) instead of standard output`,
  options: { ...dataDirOption, out: { type: 'string' } },
  async run(values, _p, io) {
    const state = await loadReadOnly(dataDir(values));
    const out = stringOption(values, 'out');
    const lines = exportLines(state, new Date());
    if (out === undefined) {
      for (const line of lines) io.out(line);
      return 0;
    }
    const tmp = `${out}.tmp`;
    const stream = createWriteStream(tmp, { mode: privateFileMode });
    try {
      for (const line of lines) await writeLine(stream, line);
      await new Promise<void>((resolve, reject) => stream.end((err?: Error | null) => (err ? reject(err) : resolve())));
      renameSync(tmp, out);
    } catch (err) {
      stream.destroy();
      rmSync(tmp, { force: true });
      throw new CommandError(`cannot write ${out}: ${(err as Error).message}`, { cause: err });
    }
    const c = state.counts();
    io.err(`exported ${c.organizations} organizations, ${c.applications} applications, ${c.groups} groups, ${c.users} users to ${out}`);
    return 0;
  },
};

async function* inputLines(file: string): AsyncGenerator<string> {
  const input = file === '-' ? process.stdin : createReadStream(file);
  try {
    yield* importLines(input);
  } catch (err) {
    if (err instanceof ImportError) throw err;
    throw new CommandError(`cannot read ${file}: ${(err as Error).message}`, { cause: err });
  }
}

/** Decides every line of `file` against a scratch copy of the directory's state, so a bad line anywhere leaves the directory untouched. */
async function decideImport(dir: string, file: string, clock: MicrosClock, baseSeq: number): Promise<ImportOutcome> {
  const scratch = await loadReadOnly(dir);
  if (scratch.lastSeq !== baseSeq) throw new Error(`invariant: the scratch state is at seq ${scratch.lastSeq}, the directory at ${baseSeq}`);
  clock.notBefore(scratch.lastAt);
  try {
    return await decideImportLines(scratch, inputLines(file), () => clock.now(), newEntityId);
  } catch (err) {
    if (!(err instanceof ImportError)) throw err;
    const label = file === '-' ? 'standard input' : file;
    throw new CommandError(`${label}${err.line === undefined ? '' : ` line ${err.line}`}: ${err.message}`, { cause: err });
  }
}

const importCommand: Command = {
  name: 'import', summary: 'add the entities of an export (or of JSON lines from another system) to a stopped server\'s data directory',
  help: `authctl import [--data-dir DIR] FILE

Offline, on a stopped server's data directory (created if missing): checks every line of FILE
(- for standard input) against the directory's state with the rules of the API (references, unique
emails and names, limits, password hash formats), and only if all pass writes them through the
persistence layer and takes a snapshot. Entities keep their ids and times, so importing the same
file twice changes nothing; an entity whose id exists is replaced. A line with an id is an entity as
it was stored, so it comes back as the API left it: a User with no Application, an Organization named
from a long company_name, an address stored before the current email rules (kept exactly as written).

Restore: import an export into an empty directory; its meta line makes its base Application and
default Organization those of the directory. A directory that has its own keeps them, and the file's
become ordinary entities. API Keys keep working only under the same server key (KEY_FILE).

Lines from another system: {"kind":"user","email":...,"password_hash":"$2b$...","applications":[...]}
may leave out id, times, status (UNVERIFIED) and organization (the default one); bcrypt hashes are
replaced by argon2id at each User's next successful authentication.

${dataDirHelp}`,
  options: dataDirOption,
  positionalsMax: 1,
  async run(values, positionals, io) {
    const file = positionals[0];
    if (file === undefined) throw new UsageError('FILE is required (- for standard input)');
    const dir = dataDir(values);
    // Written without an fdatasync per batch: close() syncs everything once before it returns.
    const { state, persistence } = await openStopped(dir, io, 'off');
    try {
      const clock = new MicrosClock();
      const { records, counts, meta } = await decideImport(dir, file, clock, state.lastSeq);
      for (let i = 0; i < records.length; i++) {
        // Append and apply in one turn, as the committer does, so lastSeq and the log stay in step.
        const durable = persistence.append(records[i]!);
        state.apply(records[i]!);
        if ((i + 1) % importRecordsPerFlush === 0 || i === records.length - 1) await durable;
      }
      const summary = Object.entries(counts).map(([k, n]) => `${n} ${k}s`).join(', ');
      const metaNote = meta === 'set' ? '; base Application and default Organization taken from the file' : meta === 'kept' ? '; the directory kept its own base Application' : '';
      io.out(`imported ${summary} into ${dir} as ${records.length} records${metaNote}`);
      if (state.meta === undefined) io.out('note: the directory has no base Application yet; the server creates one and a first admin at its first start');
    } finally {
      await persistence.close();
    }
    return 0;
  },
};

const rotateKey: Command = {
  name: 'rotate-key', summary: 'replace the server key (every API Key secret changes; server stopped)',
  help: `authctl rotate-key [--data-dir DIR] [--key-file FILE]

Offline, on a stopped server's data directory: takes its lock, writes 32 new random bytes to the key
file (mode 0600, replacing it atomically) and records the new key's fingerprint in the directory, so
that the server starts with the new key and refuses any other. Use it to replace a key, or when the
key the data was written with is lost.

Every API Key's secret is derived from the server key, so every one changes: the old secrets stop
authenticating, and each key's new secret is in the answer of a PUT to it
(PUT /users/user/{userid}/apikey/{apikeyid}).

Secrets sealed under the old key no longer open: the server makes new access-token signing keys at its
next start (the old public keys stay published until the tokens they signed expire), and each Application
signing HS256 tokens needs a new secret (POST /applications/application/{appid}/jwt-secret).

${dataDirHelp}
  --key-file FILE    the key file to write (KEY_FILE; default ./secrets/server.key)`,
  options: { ...dataDirOption, 'key-file': { type: 'string' } },
  async run(values, _p, io) {
    const dir = dataDir(values);
    requireDataDir(dir);
    const keyFile = stringOption(values, 'key-file') ?? process.env['KEY_FILE'] ?? settings.KEY_FILE.default;
    const storage = new NodeStorage();
    let lock;
    try {
      lock = await acquireLock(storage, dir);
    } catch (err) {
      if (err instanceof LockError) throw new CommandError(`${err.message}. Stop the server first (this command needs the directory to itself).`, { cause: err });
      if (err instanceof LockUnavailableError) throw new CommandError(err.message, { cause: err });
      throw err;
    }
    let fingerprint: string;
    try {
      // Key first, then fingerprint: a crash between leaves a start refused (a different key), and running this again completes it.
      fingerprint = ApiKeySecrets.fromKey(writeNewKeyFile(keyFile, 'replace'), `key file ${keyFile}`).fingerprint();
      await writeKeyFingerprint(storage, dir, fingerprint);
    } finally {
      await lock.release();
    }
    io.out(`wrote a new server key to ${keyFile} (fingerprint ${fingerprint}) and recorded it in ${keyFingerprintPath(dir)}`);
    io.out('every API Key secret has changed: the old ones no longer authenticate; each key\'s new secret is in the answer of a PUT to it');
    if (process.env['SERVER_KEY'] !== undefined) io.err('note: SERVER_KEY is set; the server uses it instead of KEY_FILE and will refuse to start until it is unset or holds the new key');
    return 0;
  },
};

export const offlineCommands: Command[] = [resetAdminPassword, verify, exportCommand, importCommand, rotateKey];
