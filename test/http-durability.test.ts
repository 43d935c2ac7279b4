// HTTP: durability of the real process — SIGTERM and restart keep everything; SIGKILL during concurrent writes loses no
// acknowledged write; the data directory and the logs never hold a plaintext password or API Key secret.

import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { after, before, test } from 'node:test';
import {
  authenticate, createApikey, createApplication, createGroup, createUser, getGroup, getUser,
} from './helpers/http-fixtures.js';
import { fails, ok, okKey, type ApikeyJson, type GroupJson, type Json } from './helpers/http-shapes.js';
import {
  adminEmail, adminPassword, readAllFiles, startServer, type Api, type HttpResult, type ServerProcess,
} from './helpers/server.js';

/** Fixed, so hrefs are the same before and after a restart (the port is not). */
const publicUrl = 'https://auth.example.test';

let server: ServerProcess;
/** stdout + stderr of every process this file ran. */
const outputs: string[] = [];
/** Every plaintext secret given to or received from the server. */
const secrets = new Set<string>([adminPassword]);

/** Small, so that snapshots are taken while the write streams below run, and recovery is snapshot + log replay. */
const snapshotEveryRecords = 50;

before(async () => {
  server = await startServer({ env: { PUBLIC_URL: publicUrl, SNAPSHOT_EVERY_RECORDS: String(snapshotEveryRecords) } });
});

after(async () => {
  await server?.dispose();
});

async function restart(): Promise<Api> {
  outputs.push(server.output());
  server = await server.restart();
  return server.api();
}

function byId<T extends { id: string }>(items: T[]): T[] {
  return [...items].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

interface Seeded {
  appIds: string[]; groupIds: string[]; userIds: string[]; keys: { userId: string; keyId: string }[];
}

/** Everything a client can read about the seeded entities, listings sorted (their order is not promised). */
async function readEverything(api: Api, seeded: Seeded): Promise<Json> {
  const out: Json = {
    applications: byId(okKey<{ id: string }[]>(await api.get('/applications'), 'applications')),
    groups: byId(okKey<{ id: string }[]>(await api.get('/groups'), 'groups')),
    users: byId(okKey<{ id: string }[]>(await api.get('/users'), 'users')),
  };
  for (const id of seeded.appIds) {
    out[`app ${id}`] = ok(await api.get(`/applications/application/${id}`));
    out[`app ${id} users`] = byId(okKey<{ id: string }[]>(await api.get(`/applications/application/${id}/users`), 'users'));
    out[`app ${id} groups`] = byId(okKey<{ id: string }[]>(await api.get(`/applications/application/${id}/groups`), 'groups'));
  }
  for (const id of seeded.groupIds) {
    out[`group ${id}`] = ok(await api.get(`/groups/group/${id}`));
    out[`group ${id} users`] = byId(okKey<{ id: string }[]>(await api.get(`/groups/group/${id}/users`), 'users'));
  }
  for (const id of seeded.userIds) {
    out[`user ${id}`] = ok(await api.get(`/users/user/${id}`));
    out[`search ${id}`] = ok(await api.get(`/users/search/${id}`));
  }
  for (const { userId, keyId } of seeded.keys) out[`key ${keyId}`] = ok(await api.get(`/users/user/${userId}/apikey/${keyId}`));
  return out;
}

test('everything acknowledged before a SIGTERM is there after a restart, unchanged', async () => {
  let api = server.api();
  const app = await createApplication(api, { name: 'Durable', custom_data: { nested: { list: [1, 'two', { three: 3 }] }, unicode: 'héllo ✓ \u{1F600}' } });
  ok(await api.put(`/applications/application/${app.id}`, { description: 'updated before restart' }));
  const disabledApp = await createApplication(api);
  ok(await api.put(`/applications/application/${disabledApp.id}`, { status: 'DISABLED' }));
  const group = await createGroup(api, app.id, { custom_data: { classify_limit: 5, _no_encrypt: true } });
  const doomedGroup = await createGroup(api, app.id);
  ok(await api.put(`/groups/group/${doomedGroup.id}`, { status: 'DISABLED' }));
  ok(await api.delete(`/groups/group/${doomedGroup.id}`));

  secrets.add('durable-password-1');
  const user = await createUser(api, [app.id], { password: 'durable-password-1', custom_data: { company_name: 'Durable Co' } });
  ok(await api.put(`/users/user/${user.id}`, { status: 'ENABLED', groups: [group.id], name: 'Renamed Before Restart' }));
  const key = await createApikey(api, user.id, { name: 'durable key' });
  const disabledKey = await createApikey(api, user.id, { status: 'DISABLED' });
  secrets.add(key.secret).add(disabledKey.secret);
  secrets.add('doomed-password-2');
  const doomedUser = await createUser(api, [app.id], { password: 'doomed-password-2' });
  ok(await api.put(`/users/user/${doomedUser.id}`, { status: 'DISABLED' }));
  ok(await api.delete(`/users/user/${doomedUser.id}`));

  const seeded: Seeded = {
    appIds: [app.id, disabledApp.id], groupIds: [group.id], userIds: [user.id],
    keys: [{ userId: user.id, keyId: key.id }, { userId: user.id, keyId: disabledKey.id }],
  };
  const before = await readEverything(api, seeded);

  assert.equal(await server.stop(), 0, 'SIGTERM is a clean exit');
  api = await restart();

  assert.deepEqual(await readEverything(api, seeded), before, 'every read answers as before the restart');
  fails(await api.get(`/groups/group/${doomedGroup.id}`), 404, 'not_found');
  fails(await api.get(`/users/user/${doomedUser.id}`), 404, 'not_found');
  assert.equal((await authenticate(api, app.id, 'username', user.email, 'durable-password-1')).authenticated, true, 'the password survives');
  assert.equal((await authenticate(api, app.id, 'username', user.email, 'wrong-password')).authenticated, false);
  assert.equal((await authenticate(api, app.id, 'apikey', key.id, key.secret)).authenticated, true, 'the API Key secret survives');
  assert.equal((await authenticate(api, app.id, 'apikey', disabledKey.id, disabledKey.secret)).authenticated, false);
  const again = okKey<ApikeyJson>(await api.put(`/users/user/${user.id}/apikey/${key.id}`, {}), 'apikey');
  assert.equal(again.secret, key.secret, 'the update answers the same secret after a restart');
  // Writes still work after recovery, and new timestamps do not go back in time.
  const renamed = okKey<{ modified_at: string }>(await api.put(`/applications/application/${app.id}`, { name: 'Durable 2' }), 'application');
  assert.ok(renamed.modified_at > (before[`app ${app.id}`] as { application: { modified_at: string } }).application.modified_at);
});

interface StreamOutcome {
  /** Writes answered 200, whenever the answer came. */
  acked: { id: string; name: string }[];
  /** Answers other than 200 (and other than `tolerated` once the stop began). */
  unexpected: string[];
  inFlightAtStop: number;
}

/**
 * `loops` concurrent writers create Groups one after another; once `stopAfterAcks` writes are acknowledged, `stop`
 * is called on the server while the others are still in flight, and the writers end as their connections fail.
 */
async function streamGroupWrites(
  api: Api, applicationId: string, opts: { loops: number; stopAfterAcks: number; stop: () => Promise<unknown>; tolerated?: number[] },
): Promise<StreamOutcome> {
  const outcome: StreamOutcome = { acked: [], unexpected: [], inFlightAtStop: 0 };
  let stopping: Promise<unknown> | undefined;
  let inFlight = 0;
  const writer = async (loop: number): Promise<void> => {
    for (let i = 0; stopping === undefined; i++) {
      const name = `stream-${applicationId.slice(0, 6)}-${loop}-${i}`;
      let res;
      inFlight++;
      try {
        res = await api.post('/groups/group', { name, application: applicationId, custom_data: { loop, i } });
      } catch {
        return; // the connection died with the server: this write was never acknowledged
      } finally {
        inFlight--;
      }
      if (res.status === 200) {
        const group = okKey<GroupJson>(res, 'group');
        outcome.acked.push({ id: group.id, name: group.name });
        if (outcome.acked.length >= opts.stopAfterAcks && stopping === undefined) {
          outcome.inFlightAtStop = inFlight;
          stopping = opts.stop();
        }
      } else {
        if (stopping === undefined || !(opts.tolerated ?? []).includes(res.status)) {
          outcome.unexpected.push(`${res.status} ${res.text.slice(0, 200)}`);
        }
        return;
      }
    }
  };
  await Promise.all(Array.from({ length: opts.loops }, (_, i) => writer(i)));
  await stopping;
  return outcome;
}

/** Every acknowledged Group reads back by id with its name, and is listed under its Application. */
async function assertAllPresent(api: Api, applicationId: string, outcome: StreamOutcome, loops: number, what: string): Promise<number> {
  const missing: string[] = [];
  for (const { id, name } of outcome.acked) {
    const res = await api.get(`/groups/group/${id}`);
    if (res.status !== 200) missing.push(`${name} (${id}): ${res.status}`);
    else assert.equal(okKey<GroupJson>(res, 'group').name, name);
  }
  assert.deepEqual(missing, [], `${missing.length} of ${outcome.acked.length} acknowledged writes are missing after ${what}`);
  const listed = new Set(okKey<GroupJson[]>(await api.get(`/applications/application/${applicationId}/groups`), 'groups').map((g) => g.id));
  for (const { id } of outcome.acked) assert.ok(listed.has(id), `acknowledged group ${id} is listed under its Application`);
  // Unacknowledged writes may or may not be there; nothing else may be.
  assert.ok(listed.size >= outcome.acked.length && listed.size <= outcome.acked.length + loops,
    `${listed.size} groups for ${outcome.acked.length} acknowledged writes`);
  return listed.size;
}

test('a SIGKILL during a stream of concurrent writes loses no acknowledged write', async (t) => {
  let api = server.api();
  const app = await createApplication(api, { name: 'crash target' });
  const loops = 8;
  // Enough that the kill lands among many requests in flight, few enough to keep the suite fast.
  const outcome = await streamGroupWrites(api, app.id, { loops, stopAfterAcks: 160, stop: () => server.kill() });
  assert.deepEqual(outcome.unexpected, [], 'every write before the kill was answered 200');
  assert.ok(outcome.acked.length >= 160);

  const snapshotsDuringStream = server.logLines().filter((l) => l['msg'] === 'snapshot written').length;
  api = await restart();
  const present = await assertAllPresent(api, app.id, outcome, loops, 'the SIGKILL');
  t.diagnostic(`${snapshotsDuringStream} snapshots were taken while that process ran`);
  t.diagnostic(`${outcome.acked.length} writes acknowledged around the SIGKILL, ${outcome.inFlightAtStop} in flight at it; ${present} present after restart`);
  // The service takes writes again, and names taken before the crash are still taken.
  await createGroup(api, app.id, { name: 'after the crash' });
  fails(await api.post('/groups/group', { name: outcome.acked[0]!.name, application: app.id }), 409, 'duplicate_name');
});

test('a SIGKILL among concurrent creates, renames, disables and deletes: recovery shows each acknowledged change', async (t) => {
  let api = server.api();
  const app = await createApplication(api, { name: 'mixed crash target' });
  const loops = 8;
  const stopAfterAcks = 200;
  type GroupState = { name: string; status: string } | 'deleted';
  /** Per Group: its state after the last acknowledged change. */
  const confirmed = new Map<string, GroupState>();
  /** Per Group: the change in flight when the server died, which may or may not have become durable. */
  const unconfirmed = new Map<string, GroupState>();
  const unexpected: string[] = [];
  let acks = 0;
  let killing: Promise<void> | undefined;

  /** The 200 answer, or undefined when the server died first (or answered otherwise, which is recorded). */
  const attempt = async (send: () => Promise<HttpResult>): Promise<HttpResult | undefined> => {
    let res: HttpResult;
    try { res = await send(); } catch { return undefined; }
    if (res.status !== 200) {
      unexpected.push(`${res.status} ${res.text.slice(0, 200)}`);
      return undefined;
    }
    acks++;
    if (acks >= stopAfterAcks && killing === undefined) killing = server.kill();
    return res;
  };
  const change = async (id: string, next: GroupState, send: () => Promise<HttpResult>): Promise<boolean> => {
    unconfirmed.set(id, next);
    if (await attempt(send) === undefined) return false;
    unconfirmed.delete(id);
    confirmed.set(id, next);
    return true;
  };
  const writer = async (loop: number): Promise<void> => {
    for (let i = 0; killing === undefined; i++) {
      const name = `mixed-${loop}-${i}`;
      const created = await attempt(() => api.post('/groups/group', { name, application: app.id }));
      if (created === undefined) return;
      const id = okKey<GroupJson>(created, 'group').id;
      let state = { name, status: 'ENABLED' };
      confirmed.set(id, state);
      if (i % 2 === 0) {
        state = { ...state, name: `${name}-renamed` };
        if (!await change(id, state, () => api.put(`/groups/group/${id}`, { name: state.name }))) return;
      }
      if (i % 3 === 0) {
        state = { ...state, status: 'DISABLED' };
        if (!await change(id, state, () => api.put(`/groups/group/${id}`, { status: 'DISABLED' }))) return;
        if (!await change(id, 'deleted', () => api.delete(`/groups/group/${id}`))) return;
      }
    }
  };
  await Promise.all(Array.from({ length: loops }, (_, i) => writer(i)));
  await killing;
  assert.deepEqual(unexpected, [], 'every change before the kill was answered 200');

  api = await restart();
  const wrong: string[] = [];
  for (const [id, expected] of confirmed) {
    const res = await api.get(`/groups/group/${id}`);
    const seen: GroupState = res.status === 404 ? 'deleted' : (({ name, status }) => ({ name, status }))(okKey<GroupJson>(res, 'group'));
    const allowed = [expected, ...(unconfirmed.has(id) ? [unconfirmed.get(id)!] : [])];
    if (!allowed.some((a) => JSON.stringify(a) === JSON.stringify(seen))) {
      wrong.push(`${id}: after restart ${JSON.stringify(seen)}, acknowledged ${JSON.stringify(expected)}`);
    }
  }
  assert.deepEqual(wrong, [], 'each Group is in its last acknowledged state (or the one change in flight at the kill)');
  t.diagnostic(`${acks} changes acknowledged to ${confirmed.size} Groups; ${unconfirmed.size} in flight at the SIGKILL`);
});

test('a SIGTERM during a stream of writes exits 0 and keeps every acknowledged write', async (t) => {
  let api = server.api();
  const app = await createApplication(api, { name: 'shutdown target' });
  const loops = 8;
  let exitCode: number | null | undefined;
  // A request that arrives during the shutdown may be refused (503) rather than served.
  const outcome = await streamGroupWrites(api, app.id, {
    loops, stopAfterAcks: 80, tolerated: [503], stop: async () => { exitCode = await server.stop(); },
  });
  assert.equal(exitCode, 0, 'SIGTERM is a clean exit, even with requests in flight');
  assert.deepEqual(outcome.unexpected, [], 'every write before the SIGTERM was answered 200');

  api = await restart();
  const present = await assertAllPresent(api, app.id, outcome, loops, 'the SIGTERM');
  t.diagnostic(`${outcome.acked.length} writes acknowledged around the SIGTERM, ${outcome.inFlightAtStop} in flight at it; ${present} present after restart`);
});

test('a second process refuses the data directory while the first one runs', async () => {
  await assert.rejects(startServer({ dirs: server.dirs, env: { PUBLIC_URL: publicUrl } }), /exited before listening/);
  // The first one is unharmed.
  assert.ok(server.running);
  ok(await server.api().get('/applications'));
});

test('the last acknowledged write before a SIGKILL survives, with nothing after it', async () => {
  let api = server.api();
  const app = await createApplication(api);
  secrets.add('before-kill-pw-1');
  const user = await createUser(api, [app.id], { password: 'before-kill-pw-1' });
  secrets.add('after-change-pw-2');
  ok(await api.put(`/users/user/${user.id}`, { password: 'after-change-pw-2', custom_data: { last: 'write' } }));
  await server.kill();

  api = await restart();
  assert.deepEqual((await getUser(api, user.id)).custom_data, { last: 'write' });
  assert.equal((await authenticate(api, app.id, 'username', user.email, 'after-change-pw-2')).authenticated, true);
  assert.equal((await authenticate(api, app.id, 'username', user.email, 'before-kill-pw-1')).authenticated, false);
  const group = await createGroup(api, app.id);
  await server.kill();
  api = await restart();
  assert.equal((await getGroup(api, group.id)).name, group.name);
});

test('password hashes are held packed: no snapshot holds a PHC string, and a User authenticates after a restart from a snapshot and from log replay (issue 24)', async () => {
  let api = server.api();
  const app = await createApplication(api);
  secrets.add('packed-hash-pw-1');
  const user = await createUser(api, [app.id], { password: 'packed-hash-pw-1' });
  assert.equal(await server.stop(), 0);
  const snapshots = readdirSync(server.dirs.dataDir).filter((name) => name.startsWith('snapshot-'));
  assert.ok(snapshots.length > 0, 'a clean stop wrote a snapshot');
  for (const name of snapshots) {
    assert.equal(readFileSync(join(server.dirs.dataDir, name)).indexOf('$argon2id$'), -1, `${name} holds an argon2id PHC string, not the packed form`);
  }
  api = await restart();
  assert.equal((await authenticate(api, app.id, 'username', user.email, 'packed-hash-pw-1')).authenticated, true, 'from the snapshot');
  assert.equal((await authenticate(api, app.id, 'username', user.email, 'packed-hash-pw-2')).authenticated, false);

  // Records after the snapshot hold the PHC strings the hash workers made; replay packs them.
  secrets.add('packed-hash-pw-2').add('packed-hash-pw-3');
  ok(await api.put(`/users/user/${user.id}`, { password: 'packed-hash-pw-2' }));
  const other = await createUser(api, [app.id], { password: 'packed-hash-pw-3' });
  await server.kill();
  api = await restart();
  assert.equal((await authenticate(api, app.id, 'username', user.email, 'packed-hash-pw-2')).authenticated, true, 'a changed password, from log replay');
  assert.equal((await authenticate(api, app.id, 'username', user.email, 'packed-hash-pw-1')).authenticated, false);
  assert.equal((await authenticate(api, app.id, 'username', other.email, 'packed-hash-pw-3')).authenticated, true, 'a created User, from log replay');
  // No answer shows a hash, packed or not.
  const shown = JSON.stringify(await getUser(api, user.id));
  assert.ok(!shown.includes('argon2') && !shown.includes('\\u0001') && !/hash/i.test(shown), shown);
});

test('the data directory never holds a plaintext password or API Key secret, in the log or in snapshots', async () => {
  const check = (when: string): void => {
    const files = readAllFiles(server.dirs.dataDir);
    // A plaintext search means something only if the files hold text as it was sent (not compressed or encrypted).
    assert.ok([...files.values()].some((bytes) => bytes.includes(Buffer.from(adminEmail))), `${when}: the data files hold the admin's email as is`);
    for (const [path, bytes] of files) {
      for (const secret of secrets) {
        assert.equal(bytes.indexOf(Buffer.from(secret, 'utf8')), -1,
          `${when}: ${relative(server.dirs.dataDir, path)} holds the plaintext ${JSON.stringify(secret.slice(0, 8))}...`);
      }
    }
  };
  check('while running (log records)');
  assert.equal(await server.stop(), 0);
  check('after a clean stop (snapshot)');
  assert.ok(!server.dirs.keyFile.startsWith(server.dirs.dataDir), 'the server key lives outside the data directory');
});

test('no process printed a plaintext password or API Key secret', () => {
  const all = [...outputs, server.output()].join('\n');
  assert.ok(all.includes('"msg":"listening"'), 'the output was captured');
  for (const secret of secrets) assert.ok(!all.includes(secret), `the output holds ${JSON.stringify(secret.slice(0, 8))}...`);
});
