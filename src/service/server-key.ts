// Which server key a start may use: the one its data directory was written with, told by the recorded fingerprint before any data is touched.
//
// A key is generated only for a directory that holds no data and no fingerprint. A missing key file or a
// different key beside existing data is refused: accepting it would silently turn every API Key secret
// into a wrong one. A directory an older version wrote has data but no fingerprint: the key given now is
// recorded (that is the upgrade). Changing the key on purpose is `authctl rotate-key`.

import { ApiKeySecrets, readKeyFile, writeNewKeyFile } from '../auth/apikey-secrets.js';
import { ConfigError } from '../config/config.js';
import { holdsData, KeyFingerprintError, readKeyFingerprint, writeKeyFingerprint } from '../persist/key-fingerprint.js';
import type { PersistLogger } from '../persist/replayable.js';
import { NodeStorage, type Storage } from '../persist/storage.js';

export interface ServerKeyOptions {
  readonly dataDir: string;
  readonly keyFile: string;
  /** SERVER_KEY: the key by value, instead of keyFile. */
  readonly keyValue: string | undefined;
  readonly logger: PersistLogger;
  readonly storage?: Storage;
}

/** The server key for this data directory, with its fingerprint recorded; a ConfigError if it is missing or not the data's. */
export async function loadServerKey(opts: ServerKeyOptions): Promise<ApiKeySecrets> {
  const storage = opts.storage ?? new NodeStorage();
  const { dataDir } = opts;
  const recorded = await recordedFingerprint(storage, dataDir);
  const hasData = await holdsData(storage, dataDir);
  const secrets = loadOrCreate(opts, recorded, hasData);
  const fingerprint = secrets.fingerprint();
  if (recorded === undefined) {
    await writeKeyFingerprint(storage, dataDir, fingerprint);
    if (hasData) opts.logger.warn({ dataDir, fingerprint }, 'the data directory had no server key fingerprint (an older version wrote it); recorded this key\'s');
    return secrets;
  }
  if (recorded !== fingerprint) {
    const source = opts.keyValue !== undefined ? 'SERVER_KEY' : `KEY_FILE ${opts.keyFile}`;
    throw new ConfigError(
      `the server key (${source}) has fingerprint ${fingerprint}, but the data in ${dataDir} was written with a key of fingerprint ${recorded}; ` +
      `restore that key, or rotate with ${rotateHint(opts)}`,
    );
  }
  return secrets;
}

function loadOrCreate(opts: ServerKeyOptions, recorded: string | undefined, hasData: boolean): ApiKeySecrets {
  if (opts.keyValue !== undefined) return ApiKeySecrets.fromValue(opts.keyValue);
  const source = `API key server key file ${opts.keyFile}`;
  const key = readKeyFile(opts.keyFile);
  if (key !== undefined) return ApiKeySecrets.fromKey(key, source);
  if (recorded !== undefined) {
    throw new ConfigError(
      `KEY_FILE ${opts.keyFile} is missing; the data in ${opts.dataDir} was written with a key of fingerprint ${recorded}; ` +
      `restore the key file, or rotate with ${rotateHint(opts)}`,
    );
  }
  if (hasData) {
    throw new ConfigError(
      `KEY_FILE ${opts.keyFile} is missing, and ${opts.dataDir} holds data written with some other key (before key fingerprints were recorded); ` +
      `restore the key file, or rotate with ${rotateHint(opts)}`,
    );
  }
  return ApiKeySecrets.fromKey(writeNewKeyFile(opts.keyFile), source);
}

async function recordedFingerprint(storage: Storage, dataDir: string): Promise<string | undefined> {
  try {
    return await readKeyFingerprint(storage, dataDir);
  } catch (err) {
    if (err instanceof KeyFingerprintError) throw new ConfigError(`${err.message}; restore it from a backup of the data directory, or rotate with authctl rotate-key`);
    throw err;
  }
}

function rotateHint(opts: ServerKeyOptions): string {
  return `\`authctl rotate-key --data-dir ${opts.dataDir} --key-file ${opts.keyFile}\` (which changes every API Key secret)`;
}
