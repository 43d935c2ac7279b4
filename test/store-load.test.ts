// Snapshot loading into State (issue 3): chunk-by-chunk loads index each User once, by its newest copy, share empty lists, and survive a real snapshot's round trip.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Application, EntityKind, LogRecord, Organization, User } from '../src/domain/entities.js';
import { readSnapshotChunks, writeSnapshot } from '../src/persist/snapshot.js';
import { NodeStorage } from '../src/persist/storage.js';
import { State } from '../src/store/state.js';
import { tempDir } from './helpers/persist-fixtures.js';

const at = 1_700_000_000_000_000;

function org(id: string): Organization {
  return { id, name: `org ${id}`, description: '', customData: null, status: 'ENABLED', createdAt: at, modifiedAt: at };
}

function app(id: string, createdAt: number): Application {
  return { id, name: `app ${id}`, description: '', customData: { tier: 'gold' }, status: 'ENABLED', createdAt, modifiedAt: createdAt };
}

function user(id: string, n: number, extra: Partial<User> = {}): User {
  return {
    id, email: `user${n}@example.com`, name: `User ${n}`, status: 'ENABLED', customData: { plan: 'free', company_name: 'Acme Widgets Ltd' },
    passwordHash: 'h', organization: 'org1', applications: ['app1'], groups: [], apikeys: [], createdAt: at + n, modifiedAt: at + n, ...extra,
  };
}

/** What the snapshot decoder hands over: fresh copies, never the caller's objects. */
function decoded<T>(values: readonly T[]): T[] {
  return values.map((v) => structuredClone(v));
}

function put(seq: number, kind: 'organization' | 'application' | 'user', value: Organization | Application | User): LogRecord {
  return { seq, at: at + seq, ops: [{ op: 'put', kind, value } as LogRecord['ops'][number]] };
}

function delUser(seq: number, id: string): LogRecord {
  return { seq, at: at + seq, ops: [{ op: 'del', kind: 'user', id }] };
}

/** A State's sections as a snapshot would hold them. */
function sectionsOf(state: State): Array<[EntityKind, unknown[]]> {
  return state.snapshotSource().sections.map((s): [EntityKind, unknown[]] => {
    const values: unknown[] = [];
    const it = s.entries();
    for (let r = it.next(); r.done !== true; r = it.next()) values.push(r.value);
    return [s.kind, values];
  });
}

function loadInChunks(sections: ReadonlyArray<[EntityKind, unknown[]]>, baseSeq: number): State {
  const state = new State();
  for (const [kind, values] of sections) {
    for (let i = 0; i < values.length; i += 2) state.loadSection(kind, decoded(values.slice(i, i + 2)));
  }
  state.finishLoad(baseSeq);
  return state;
}

test('a User a fuzzy snapshot holds twice is indexed once, by its later (newer) copy', () => {
  const apps = [app('app1', at), app('app2', at + 1)];
  const users = [user('u1', 1), user('u2', 2), user('u3', 3)];
  const newer = user('u2', 2, { email: 'renamed@example.com', applications: ['app2'], modifiedAt: at + 99 });
  const state = loadInChunks([['organization', [org('org1')]], ['application', apps], ['user', [...users, user('u4', 4), newer]]], 7);

  assert.equal(state.lastSeq, 7);
  assert.equal(state.counts().users, 4);
  assert.equal(state.userByEmail('user2@example.com'), undefined, 'the older copy left no email behind');
  assert.equal(state.userByEmail('RENAMED@example.com')?.modifiedAt, at + 99);
  assert.deepEqual(state.usersOfApplication('app1').map((u) => u.id), ['u1', 'u3', 'u4']);
  assert.deepEqual(state.usersOfApplication('app2').map((u) => u.id), ['u2']);
  assert.equal(state.countUsersOfOrganization('org1'), 4);
  assert.deepEqual(state.pageUsers(undefined, 10).items.map((u) => u.id), ['u1', 'u2', 'u3', 'u4']);
  while (state.search.building) state.search.buildStep(1000);
  assert.deepEqual(state.search.search('renamed', 10), ['u2']);
  assert.deepEqual(state.search.search('user2@', 10), []);
});

test('a loaded state answers like the state it was taken from, and records apply on top of it', () => {
  const live = new State();
  let seq = 0;
  live.apply(put(++seq, 'organization', org('org1')));
  live.apply(put(++seq, 'application', app('app1', at)));
  for (let n = 1; n <= 9; n++) live.apply(put(++seq, 'user', user(`u${n}`, n, n % 3 === 0 ? { apikeys: [{ id: `K${n}`, name: 'k', description: '', status: 'ENABLED', nonce: 'n', createdAt: at, modifiedAt: at }] } : {})));
  const loaded = loadInChunks(sectionsOf(live), seq);
  for (const u of live.allUsers()) assert.deepEqual(loaded.user(u.id), u);
  assert.equal(loaded.userByApikey('K6')?.id, 'u6');
  assert.deepEqual(loaded.usersOfApplication('app1').map((u) => u.id), live.usersOfApplication('app1').map((u) => u.id));

  const next = put(++seq, 'user', user('u5', 5, { email: 'five@example.com', applications: [] }));
  live.apply(next);
  loaded.apply(structuredClone(next));
  assert.equal(loaded.userByEmail('user5@example.com'), undefined);
  assert.equal(loaded.userByEmail('five@example.com')?.id, 'u5');
  assert.deepEqual(loaded.usersOfApplication('app1').map((u) => u.id), live.usersOfApplication('app1').map((u) => u.id));
});

test('loaded Users share one frozen empty list for what they lack, with their values unchanged', () => {
  const users = [user('u1', 1), user('u2', 2, { customData: null })];
  const state = loadInChunks([['organization', [org('org1')]], ['application', [app('app1', at)]], ['user', users]], 3);
  const [a, b] = [state.user('u1')!, state.user('u2')!];
  assert.deepEqual([a, b], users);
  assert.equal(a.apikeys, b.apikeys);
  assert.equal(a.groups, b.groups);
  assert.ok(Object.isFrozen(a.apikeys));
});

test('loadSection is refused once the load ended, by finishLoad or by a record', () => {
  const finished = new State();
  finished.finishLoad(0);
  assert.throws(() => finished.loadSection('user', [user('u1', 1)]), /after the load ended/);
  const applied = new State();
  applied.loadSection('organization', [org('org1')]);
  applied.apply(put(1, 'user', user('u1', 1)));
  assert.throws(() => applied.loadSection('user', [user('u2', 2)]), /after the load ended/);
});

test('a State written to a real snapshot (string dictionary and all) and loaded back answers the same, and its search follows changes made before the build', async (t) => {
  const { dir, cleanup } = tempDir('store-load-');
  t.after(cleanup);
  const live = new State();
  let seq = 0;
  live.apply(put(++seq, 'organization', org('org1')));
  live.apply(put(++seq, 'application', app('app1', at)));
  live.apply({ seq: ++seq, at: at + seq, ops: [{ op: 'put', kind: 'group', value: { id: 'grp1', name: 'Admins', description: '', customData: { tier: 'gold' }, status: 'ENABLED', application: 'app1', createdAt: at, modifiedAt: at } }] });
  for (let n = 1; n <= 40; n++) {
    const apikeys = n % 4 === 0 ? [{ id: `K${n}`, name: 'k', description: '', status: 'ENABLED' as const, nonce: 'n', createdAt: at, modifiedAt: at }] : [];
    live.apply(put(++seq, 'user', user(`u${n}`, n, { groups: n % 2 === 0 ? ['grp1'] : [], apikeys })));
  }
  const written = await writeSnapshot(new NodeStorage(), dir, live.snapshotSource());
  const loaded = new State();
  await readSnapshotChunks(new NodeStorage(), written.path, (kind, values) => loaded.loadSection(kind, values));
  loaded.finishLoad(written.baseSeq);
  assert.deepEqual(loaded.group('grp1'), live.group('grp1'));
  assert.deepEqual(loaded.application('app1'), live.application('app1'));
  assert.deepEqual(loaded.organization('org1'), live.organization('org1'));
  for (const u of live.allUsers()) assert.deepEqual(loaded.user(u.id), u);
  assert.deepEqual(loaded.usersOfGroup('grp1').map((u) => u.id), live.usersOfGroup('grp1').map((u) => u.id));

  // Before the search build runs: a change, a delete, and a delete then a create of the same id, applied to both.
  const changes = [
    put(++seq, 'user', user('u3', 3, { name: 'Renamed Zebra' })),
    delUser(++seq, 'u5'),
    delUser(++seq, 'u7'),
    put(++seq, 'user', user('u7', 7, { name: 'Back Again Zebra', createdAt: at + 1000 })),
  ];
  for (const change of changes) {
    live.apply(change);
    loaded.apply(structuredClone(change));
  }
  const ids = (state: State, term: string): string[] => state.search.search(term, Infinity);
  for (const term of ['zebra', 'user', 'user5', 'renamed', 'back again']) assert.deepEqual(ids(loaded, term), ids(live, term), `before the build: ${term}`);
  while (loaded.search.buildStep(7));
  for (const term of ['zebra', 'user', 'user5', 'renamed', 'back again']) assert.deepEqual(ids(loaded, term), ids(live, term), `after the build: ${term}`);
  assert.deepEqual(ids(loaded, 'zebra'), ['u3', 'u7']);
});

/** Every membership answer, in the order the State gives it. */
function memberships(state: State): unknown {
  return {
    apps: ['app1', 'app2'].map((id) => [state.usersOfApplication(id).map((u) => u.id), state.countUsersOfApplication(id), state.pageUsersOfApplication(id, undefined, 100).items.map((u) => u.id)]),
    group: [state.usersOfGroup('grp1').map((u) => u.id), state.pageUsersOfGroup('grp1', undefined, 100).items.map((u) => u.id)],
    orgs: ['org1', 'org2'].map((id) => [state.usersOfOrganization(id).map((u) => u.id), state.countUsersOfOrganization(id), state.pageUsersOfOrganization(id, undefined, 100).items.map((u) => u.id)]),
  };
}

test('memberships a load leaves to indexStep follow changes to Users the walk has and has not reached, and a read or an import finishes the walk first', () => {
  const live = new State();
  let seq = 0;
  const group = { id: 'grp1', name: 'G', description: '', customData: {}, status: 'ENABLED' as const, application: 'app1', createdAt: at, modifiedAt: at };
  live.apply(put(++seq, 'organization', org('org1')));
  live.apply(put(++seq, 'organization', org('org2')));
  live.apply(put(++seq, 'application', app('app1', at)));
  live.apply(put(++seq, 'application', app('app2', at + 1)));
  live.apply({ seq: ++seq, at: at + seq, ops: [{ op: 'put', kind: 'group', value: group }] });
  for (let n = 1; n <= 20; n++) live.apply(put(++seq, 'user', user(`u${n}`, n, { groups: n % 2 === 0 ? ['grp1'] : [] })));
  const sections = sectionsOf(live);
  const baseSeq = seq;
  const load = (): State => {
    const state = loadInChunks(sections, baseSeq);
    assert.equal(state.indexingMembers, true);
    state.indexStep(5, 7); // the walk has reached u5
    return state;
  };
  const both = (states: State[], record: LogRecord): void => {
    live.apply(record);
    for (const state of states) state.apply(structuredClone(record));
  };

  const read = load();
  assert.deepEqual(memberships(read), memberships(live), 'a read before the walk is done');
  assert.equal(read.indexingMembers, false);

  const walked = load();
  const imported = load();
  const states = [walked, imported];
  both(states, put(++seq, 'user', user('u3', 3, { applications: ['app2'], groups: [] }))); // reached
  both(states, put(++seq, 'user', user('u12', 12, { applications: ['app2'], organization: 'org2' }))); // not reached
  both(states, delUser(++seq, 'u4'));
  both(states, delUser(++seq, 'u15'));
  both(states, put(++seq, 'user', user('u21', 21, { applications: ['app2'] }))); // new, after every loaded User
  both(states, put(++seq, 'user', user('u0', -5, { groups: ['grp1'], organization: 'org2' }))); // new, before the walk's place
  both(states, put(++seq, 'user', user('u16', 16, { applications: ['app1', 'app2'], groups: [] }))); // not reached
  both(states, delUser(++seq, 'u16'));
  for (const state of states) assert.equal(state.indexingMembers, true, 'none of these needed the walk finished');
  while (walked.indexStep(3, 7));
  assert.equal(walked.indexingMembers, false);
  assert.deepEqual(memberships(walked), memberships(live));

  // An import moving a User the walk has not reached to before its place would be missed (or counted twice the other way).
  both([imported], put(++seq, 'user', user('u9', -9, { applications: ['app2'] })));
  assert.equal(imported.indexingMembers, false);
  assert.deepEqual(memberships(imported), memberships(live));
});
