// The benchmark's seeded data directory (bench/lib/dataset.ts) holds what one the service has run on holds, so that its start is a restart.

import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { seedDataDir } from '../bench/lib/dataset.js';
import { ApiKeySecrets } from '../src/auth/apikey-secrets.js';
import { signingAlgs, type Meta } from '../src/domain/entities.js';
import { readKeyFingerprint } from '../src/persist/key-fingerprint.js';
import { readSnapshot } from '../src/persist/snapshot.js';
import { NodeStorage } from '../src/persist/storage.js';
import { Sealer, sealerSubkeyLabel } from '../src/tokens/sealer.js';
import { tempDir } from './helpers/persist-fixtures.js';

test('a seeded directory is private and holds the signing keys and key fingerprint a first start would have made', async (t) => {
  const { dir: root, cleanup } = tempDir('bench-seed-');
  t.after(cleanup);
  const dataDir = join(root, 'data');
  const keyFile = join(root, 'secrets', 'server.key');
  const seeded = await seedDataDir({ users: 20, dataDir, keyFile, force: false });
  assert.equal(statSync(dataDir).mode & 0o777, 0o700);
  const secrets = ApiKeySecrets.load({ keyFile });
  assert.equal(await readKeyFingerprint(new NodeStorage(), dataDir), secrets.fingerprint());
  const snapshot = await readSnapshot(new NodeStorage(), seeded.snapshotPath);
  const meta = snapshot.sections.get('meta')?.[0] as Meta;
  const sealer = new Sealer(secrets.subkey(sealerSubkeyLabel));
  assert.deepEqual(meta.signingKeys?.map((k) => k.alg).sort(), [...signingAlgs].sort());
  for (const key of meta.signingKeys!) {
    assert.ok(sealer.opens(key.sealedPrivate, 'signing-key'), `${key.alg} opens under the server key`);
    assert.equal(key.retiredAt, 0);
    assert.ok(key.createdAt > 0);
  }
});
