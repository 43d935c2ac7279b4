// Issue 23: `authctl export` then `authctl import`, as processes on real data directories, carry what the HTTP API
// accepted: an Organization named from a long company_name, a User that left its last Application, unicode at limits.

import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { nameCharsMax } from '../src/config/limits.js';
import { authctl } from './helpers/authctl.js';
import { createApikey, createApplication, createGroup, createUser } from './helpers/http-fixtures.js';
import { newServerDirs, startServer, type ServerDirs, type ServerProcess } from './helpers/server.js';

let server: ServerProcess;
const scratch: ServerDirs[] = [];
/** Past the Organization name limit, with spaces the API trims and a separator JSON writes unescaped. */
const longCompany = `  Ωmega \u2028 ${'Holdings 😀 '.repeat(40)}GmbH `;

before(async () => {
  server = await startServer();
  const api = server.api();
  const c = api.client;
  const app = await createApplication(api, { custom_data: { tier: 'gold', 'ключ': ['\u2029', 1e308, null] } });
  const other = await createApplication(api, { name: `${'Å'.repeat(nameCharsMax - 1)}😀` });
  const group = await createGroup(api, app.id, { custom_data: { nested: { deeper: [{}] } } });
  // Left its only Application: a User with none.
  const leaver = await createUser(api, [app.id], { custom_data: { company_name: longCompany }, name: 'e\u0301 Leaver' });
  await createApikey(api, leaver.id, { name: 'key of a user with no application' });
  await c.users.removeApplication(leaver.id, app.id);
  // The same company, case aside: the same Organization.
  const colleague = await createUser(api, [app.id, other.id], { custom_data: { company_name: longCompany.toUpperCase() }, groups: [group.id] });
  await c.users.removeApplication(colleague.id, app.id);
  await c.groups.update(group.id, { status: 'DISABLED' });
  const disabledKey = await createApikey(api, colleague.id);
  await c.apikeys.disable(colleague.id, disabledKey.id);
  await c.organizations.create({ name: `Ünïcode ${'ß'.repeat(nameCharsMax - 8)}`, custom_data: null });
  await server.stop();
});

after(async () => {
  await server?.dispose();
  for (const d of scratch) rmSync(d.root, { recursive: true, force: true });
});

function entityLines(file: string): string[] {
  return readFileSync(file, 'utf8').trimEnd().split('\n').slice(1).sort();
}

test('authctl export -> import into an empty data dir -> export gives the same lines', async () => {
  const target = newServerDirs();
  scratch.push(target);
  const first = join(target.root, 'first.jsonl');
  const second = join(target.root, 'second.jsonl');

  const exported = await authctl(['export', '--data-dir', server.dirs.dataDir, '--out', first]);
  assert.equal(exported.code, 0, exported.stderr);
  const lines = entityLines(first).map((l) => JSON.parse(l) as Record<string, unknown>);
  const longOrg = lines.find((l) => l['kind'] === 'organization' && [...(l['name'] as string)].length > nameCharsMax);
  assert.ok(longOrg !== undefined, 'the export holds the Organization named from the long company_name');
  assert.equal(longOrg['name'], longCompany.trim());
  assert.ok(lines.some((l) => l['kind'] === 'user' && (l['applications'] as unknown[]).length === 0), 'the export holds a User with no Application');

  const imported = await authctl(['import', '--data-dir', target.dataDir, first]);
  assert.equal(imported.code, 0, `import refused what export wrote: ${imported.stderr}`);
  assert.match(imported.stdout, /imported 3 organizations, 3 applications, 1 groups, 3 users .*base Application and default Organization taken from the file/);
  const verified = await authctl(['verify', '--data-dir', target.dataDir]);
  assert.equal(verified.code, 0, verified.stdout + verified.stderr);

  const again = await authctl(['export', '--data-dir', target.dataDir, '--out', second]);
  assert.equal(again.code, 0, again.stderr);
  assert.deepEqual(entityLines(second), entityLines(first), 'every entity, id, time, hash, nonce and membership as it was');
});
