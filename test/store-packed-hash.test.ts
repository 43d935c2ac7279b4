// The State holds every User's argon2id hash packed (issue 24): whatever way the User came in (a put, a log replay, a snapshot old or new), and snapshots write it packed.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { packedHashMarker, packPasswordHash, unpackPasswordHash } from '../src/auth/packed-hash.js';
import type { EntityKind, LogRecord, Op, User } from '../src/domain/entities.js';
import { readSnapshotChunks, writeSnapshot } from '../src/persist/snapshot.js';
import { NodeStorage } from '../src/persist/storage.js';
import * as decide from '../src/store/decide.js';
import type { DecideContext, Decision } from '../src/store/decide.js';
import { State } from '../src/store/state.js';
import { tempDir } from './helpers/persist-fixtures.js';

const storage = new NodeStorage();
const adminHash = '$argon2id$v=19$m=19456,t=2,p=1$AAECAwQFBgcICQoLDA0ODw$ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8';
const userHash = '$argon2id$v=19$m=19456,t=2,p=1$f6V/2cU0BrHdWBMrEjIovg$6cJ27nZUV6OEbNRrZRWFO03p8BvxsqNN6+IPG1QDuWg';
const newHash = '$argon2id$v=19$m=65536,t=10,p=16$q+DDG044+UBBztxDgKIIiA$52ghkMUR1aNj8JVfdZd/DtQEY2G7PSh5673jMk12QpU';
const bcryptHash = '$2b$04$BwcHBwcHBwcHBwcHBwcHB.GRdOr5TX2W8nyKcihl.1tBkaOpxTP4y';

/** Decides and applies like the committer, keeping each record as the log would (a copy of the ops). */
class Harness {
  readonly state = new State();
  readonly log: LogRecord[] = [];
  private now = 1_700_000_000_000_000;
  private counter = 0;

  commit<T>(fn: (s: State, ctx: DecideContext) => Decision<T>): { result: T; ops: Op[] } {
    this.now += 1000;
    const next = (): string => `id${String(++this.counter).padStart(6, '0')}`;
    const ctx: DecideContext = { now: this.now, newId: next, newApikeyId: () => `K${String(++this.counter).padStart(24, '0')}`, newNonce: next };
    const decision = fn(this.state, ctx);
    const record: LogRecord = { seq: this.state.lastSeq + 1, at: this.now, ops: decision.ops };
    this.log.push(structuredClone(record));
    this.state.apply(record);
    return { result: decision.result, ops: decision.ops };
  }
}

/** The User an op puts. */
function putValue(op: Op | undefined): User {
  assert.ok(op !== undefined && op.op === 'put' && op.kind === 'user');
  return op.value;
}

/** A State with an admin and two Users, one with an argon2id hash and one with bcrypt. */
function populated(): { h: Harness; userId: string; legacyId: string } {
  const h = new Harness();
  h.commit((s, c) => decide.bootstrap(s, { email: 'admin@example.com', passwordHash: adminHash }, c));
  const app = h.state.meta!.baseApplication;
  const userId = h.commit((s, c) => decide.createUser(s, { email: 'ada@example.com', passwordHash: userHash, applications: [app] }, c)).result.id;
  const legacyId = h.commit((s, c) => decide.createUser(s, { email: 'old@example.com', passwordHash: bcryptHash, applications: [app] }, c)).result.id;
  return { h, userId, legacyId };
}

function usersOf(state: State): User[] {
  return [...state.allUsers()].sort((a, b) => (a.id < b.id ? -1 : 1));
}

test('a User put with a PHC string is held with it packed; indexes hold the same object; the op keeps what it came with', () => {
  const h = new Harness();
  h.commit((s, c) => decide.bootstrap(s, { email: 'admin@example.com', passwordHash: adminHash }, c));
  const app = h.state.meta!.baseApplication;
  const created = h.commit((s, c) => decide.createUser(s, { email: 'ada@example.com', passwordHash: userHash, applications: [app] }, c));
  const held = h.state.user(created.result.id)!;
  assert.equal(held.passwordHash[0], packedHashMarker);
  assert.equal(held.passwordHash, packPasswordHash(userHash));
  assert.equal(unpackPasswordHash(held.passwordHash), userHash);
  assert.equal(h.state.userByEmail('ada@example.com'), held, 'the email index holds the User the Map holds');
  assert.equal(putValue(created.ops[0]).passwordHash, userHash, 'the op (what the log writes) is left as it came');

  // A change made from the held User carries the packed form: the State keeps that very value, no copy.
  const renamed = h.commit((s, c) => decide.updateUser(s, held.id, { name: 'Ada' }, c));
  assert.equal(h.state.user(held.id), putValue(renamed.ops[0]));
  assert.equal(h.state.user(held.id)!.passwordHash, held.passwordHash);

  // rehashPassword compares what the State holds with what was read from it: packed with packed.
  const rehash = decide.rehashPassword(h.state, held.id, h.state.user(held.id)!.passwordHash, newHash);
  assert.notEqual(rehash, undefined, 'the hash read from the State is the current one');
  h.commit(() => rehash!);
  assert.equal(unpackPasswordHash(h.state.user(held.id)!.passwordHash), newHash);
  assert.equal(h.state.user(held.id)!.passwordHash[0], packedHashMarker);

  const legacy = h.commit((s, c) => decide.createUser(s, { email: 'old@example.com', passwordHash: bcryptHash, applications: [app] }, c));
  assert.equal(h.state.user(legacy.result.id), putValue(legacy.ops[0]), 'a bcrypt hash is held as it is, in the op\'s own value');
});

test('a replay of log records that hold PHC strings holds them packed, as the State that wrote them', () => {
  const { h, userId, legacyId } = populated();
  const replayed = new State();
  for (const record of h.log) replayed.apply(structuredClone(record));
  assert.deepEqual(usersOf(replayed), usersOf(h.state));
  assert.equal(replayed.user(userId)!.passwordHash, packPasswordHash(userHash));
  assert.equal(replayed.user(legacyId)!.passwordHash, bcryptHash);
});

async function loadedFrom(path: string): Promise<State> {
  const state = new State();
  const summary = await readSnapshotChunks(storage, path, (kind: EntityKind, values) => state.loadSection(kind, values));
  state.finishLoad(summary.baseSeq);
  return state;
}

test('a snapshot writes the packed form (no PHC string in the file) and a load of it holds it packed', async (t) => {
  const { dir, cleanup } = tempDir();
  t.after(cleanup);
  const { h, userId, legacyId } = populated();
  const written = await writeSnapshot(storage, dir, h.state.snapshotSource());
  const file = readFileSync(written.path);
  assert.equal(file.indexOf('$argon2id$'), -1, 'no argon2id hash is written as a PHC string');
  assert.notEqual(file.indexOf(packPasswordHash(userHash)), -1, 'the packed form is written as it is, one byte per char');
  assert.notEqual(file.indexOf(bcryptHash), -1);
  const loaded = await loadedFrom(written.path);
  assert.deepEqual(usersOf(loaded), usersOf(h.state));
  assert.equal(loaded.user(userId)!.passwordHash, packPasswordHash(userHash));
  assert.equal(loaded.user(legacyId)!.passwordHash, bcryptHash);
});

test('a snapshot written before hashes were packed (PHC strings) loads with them packed', async (t) => {
  const { dir, cleanup } = tempDir();
  t.after(cleanup);
  const { h, userId, legacyId } = populated();
  const source = h.state.snapshotSource();
  // The users section as the code before packing wrote it: each User with its PHC string.
  const old = {
    ...source,
    sections: source.sections.map((section) => section.kind !== 'user' ? section : {
      kind: section.kind,
      entries: () => usersOf(h.state).map((u) => ({ ...u, passwordHash: unpackPasswordHash(u.passwordHash) })).values(),
    }),
  };
  const written = await writeSnapshot(storage, dir, old);
  assert.notEqual(readFileSync(written.path).indexOf(userHash), -1, 'the file holds the PHC string');
  const loaded = await loadedFrom(written.path);
  assert.deepEqual(usersOf(loaded), usersOf(h.state));
  assert.equal(loaded.user(userId)!.passwordHash, packPasswordHash(userHash));
  assert.equal(loaded.userByEmail('ada@example.com'), loaded.user(userId));
  assert.equal(loaded.user(legacyId)!.passwordHash, bcryptHash);
});
