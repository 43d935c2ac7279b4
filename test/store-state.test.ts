// The state machine: decide/apply rules, index consistency against brute force, replay and fuzzy-snapshot convergence.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { EntityKind, LogRecord } from '../src/domain/entities.js';
import { DomainError } from '../src/domain/errors.js';
import * as decide from '../src/store/decide.js';
import type { DecideContext, Decision } from '../src/store/decide.js';
import { State } from '../src/store/state.js';
import { undoOps } from '../src/service/undo.js';
import { prng } from './helpers/prng.js';


class Harness {
  readonly state = new State();
  readonly log: LogRecord[] = [];
  private now = 1_700_000_000_000_000;
  private counter = 0;

  ctx(): DecideContext {
    this.now += 1000;
    const next = (prefix: string) => () => `${prefix}${String(++this.counter).padStart(6, '0')}`;
    return { now: this.now, newId: next('id'), newApikeyId: () => `K${String(++this.counter).padStart(24, '0')}`, newNonce: next('n') };
  }

  commit<T>(fn: (s: State, ctx: DecideContext) => Decision<T>): T {
    const decision = fn(this.state, this.ctx());
    if (decision.ops.length > 0) {
      const record: LogRecord = { seq: this.state.lastSeq + 1, at: this.now, ops: structuredClone(decision.ops) };
      this.log.push(record);
      this.state.apply(record);
    }
    return decision.result;
  }
}

function boot(h: Harness): void {
  h.commit((s, ctx) => decide.bootstrap(s, { email: 'admin@example.com', passwordHash: 'h' }, ctx));
}

/** A canonical dump of everything observable, to compare states built in different ways. */
function dump(state: State): unknown {
  const users = [...state.allUsers()].sort((a, b) => (a.id < b.id ? -1 : 1));
  return {
    meta: state.meta,
    applications: [...state.allApplications()].sort((a, b) => (a.id < b.id ? -1 : 1)),
    groups: [...state.allGroups()].sort((a, b) => (a.id < b.id ? -1 : 1)),
    organizations: [...state.allOrganizations()].sort((a, b) => (a.id < b.id ? -1 : 1)),
    users,
    byApp: [...state.allApplications()].map((a) => [a.id, state.usersOfApplication(a.id).map((u) => u.id).sort()]),
    byGroup: [...state.allGroups()].map((g) => [g.id, state.usersOfGroup(g.id).map((u) => u.id).sort()]),
    byEmail: users.map((u) => state.userByEmail(u.email.toUpperCase())?.id),
    byKey: users.flatMap((u) => u.apikeys.map((k) => state.userByApikey(k.id)?.id)),
  };
}

/** Every index answers what a scan over the entities answers. */
function checkIndexes(state: State): void {
  const users = [...state.allUsers()];
  for (const app of state.allApplications()) {
    const scan = users.filter((u) => u.applications.includes(app.id)).map((u) => u.id).sort();
    assert.deepEqual(state.usersOfApplication(app.id).map((u) => u.id).sort(), scan, `usersOfApplication ${app.id}`);
    const groups = [...state.allGroups()].filter((g) => g.application === app.id).map((g) => g.id).sort();
    assert.deepEqual(state.groupsOfApplication(app.id).map((g) => g.id).sort(), groups, `groupsOfApplication ${app.id}`);
  }
  for (const group of state.allGroups()) {
    const scan = users.filter((u) => u.groups.includes(group.id)).map((u) => u.id).sort();
    assert.deepEqual(state.usersOfGroup(group.id).map((u) => u.id).sort(), scan, `usersOfGroup ${group.id}`);
    assert.equal(state.groupByName(group.application, group.name.toUpperCase())?.id, group.id);
  }
  for (const user of users) {
    assert.equal(state.userByEmail(user.email)?.id, user.id);
    for (const key of user.apikeys) assert.equal(state.userByApikey(key.id)?.id, user.id);
    for (const g of user.groups) {
      assert.ok(state.group(g) !== undefined, 'membership of a deleted group survived');
      // Issue 23: a User is never in a Group of an Application it is not (or no longer) associated with.
      assert.ok(user.applications.includes(state.group(g)!.application), `${user.id} is in Group ${g} outside its Applications`);
    }
    assert.ok(state.organization(user.organization) !== undefined, 'user without organization');
    const term = user.email.slice(1, 5).toLowerCase();
    assert.ok(state.search.search(term, Infinity).includes(user.id), `search "${term}" misses ${user.id}`);
  }
}

function pick<T>(rand: () => number, items: readonly T[]): T | undefined {
  return items.length === 0 ? undefined : items[Math.floor(rand() * items.length)];
}

/** One random command; refusals (DomainError) are part of the game and change nothing. */
function randomStep(h: Harness, rand: () => number): void {
  const s = h.state;
  const apps = [...s.allApplications()];
  const groups = [...s.allGroups()];
  const users = [...s.allUsers()];
  const names = ['alpha', 'Beta', 'gamma', 'ALPHA', 'delta'];
  const roll = Math.floor(rand() * 14);
  const before = JSON.stringify(dump(s));
  try {
    switch (roll) {
      case 0: h.commit((st, c) => decide.createApplication(st, { name: pick(rand, names)! }, c)); break;
      case 1: {
        const app = pick(rand, apps);
        if (app) h.commit((st, c) => decide.updateApplication(st, app.id, { status: rand() < 0.5 ? 'DISABLED' : 'ENABLED' }, c));
        break;
      }
      case 2: { const app = pick(rand, apps); if (app) h.commit((st) => decide.deleteApplication(st, app.id)); break; }
      case 3: {
        const app = pick(rand, apps);
        if (app) h.commit((st, c) => decide.createGroup(st, { name: pick(rand, names)!, application: app.id }, c));
        break;
      }
      case 4: {
        const g = pick(rand, groups);
        if (g) h.commit((st, c) => decide.updateGroup(st, g.id, rand() < 0.5 ? { status: 'DISABLED' } : { name: pick(rand, names)! }, c));
        break;
      }
      case 5: { const g = pick(rand, groups); if (g) h.commit((st) => decide.deleteGroup(st, g.id)); break; }
      case 6: case 7: {
        const app = pick(rand, apps);
        // Mostly a Group of that Application; now and then any Group, which is refused when it is another's.
        const g = pick(rand, rand() < 0.7 ? groups.filter((x) => x.application === app?.id) : groups);
        if (app) {
          const email = `u${Math.floor(rand() * 40)}@Example.com`;
          const custom = rand() < 0.5 ? { company_name: pick(rand, ['Acme', 'acme', 'Initech'])! } : null;
          h.commit((st, c) => decide.createUser(st, {
            email, passwordHash: 'h', applications: [app.id], groups: g ? [g.id] : [], custom_data: custom,
          }, c));
        }
        break;
      }
      case 8: {
        const u = pick(rand, users);
        const app = pick(rand, apps);
        // Mostly a Group of an Application the User has or joins here; now and then any Group.
        const mine = groups.filter((x) => x.application === app?.id || u?.applications.includes(x.application) === true);
        const g = pick(rand, rand() < 0.7 ? mine : groups);
        if (u) h.commit((st, c) => decide.updateUser(st, u.id, {
          status: pick(rand, ['UNVERIFIED', 'ENABLED', 'DISABLED'] as const),
          groups: g ? [g.id] : undefined, applications: app ? [app.id] : undefined,
          email: rand() < 0.3 ? `u${Math.floor(rand() * 40)}@example.com` : undefined,
        }, c));
        break;
      }
      case 9: { const u = pick(rand, users); if (u) h.commit((st) => decide.deleteUser(st, u.id)); break; }
      case 10: { const u = pick(rand, users); if (u) h.commit((st, c) => decide.createApikey(st, u.id, { name: 'k' }, c)); break; }
      case 11: {
        const u = pick(rand, users.filter((x) => x.apikeys.length > 0));
        const k = u && pick(rand, u.apikeys);
        if (u && k) h.commit((st, c) => decide.updateApikey(st, u.id, k.id, { status: rand() < 0.6 ? 'DISABLED' : 'ENABLED' }, c));
        break;
      }
      case 12: {
        const u = pick(rand, users.filter((x) => x.apikeys.length > 0));
        const k = u && pick(rand, u.apikeys);
        if (u && k) h.commit((st, c) => decide.deleteApikey(st, u.id, k.id, c));
        break;
      }
      case 13: {
        const u = pick(rand, users);
        if (u && u.groups.length > 0 && rand() < 0.5) h.commit((st, c) => decide.removeUserGroup(st, u.id, u.groups[0]!, c));
        else if (u && u.applications.length > 0) h.commit((st, c) => decide.removeUserApplication(st, u.id, u.applications[0]!, c));
        break;
      }
    }
  } catch (err) {
    if (!(err instanceof DomainError)) throw err;
    assert.equal(JSON.stringify(dump(s)), before, `refused command ${roll} changed state`);
  }
}

test('random command sequences keep every index equal to a scan, and replay gives the same state', () => {
  const seeds = [1, 2, 3, 42, 1234];
  for (const seed of seeds) {
    const rand = prng(seed);
    const h = new Harness();
    boot(h);
    try {
      for (let i = 0; i < 400; i++) {
        randomStep(h, rand);
        if (i % 50 === 0) checkIndexes(h.state);
      }
      checkIndexes(h.state);
      const replayed = new State();
      for (const r of h.log) replayed.apply(structuredClone(r));
      assert.deepEqual(dump(replayed), dump(h.state));
      // Idempotence: applying every record a second time changes nothing.
      for (const r of h.log) replayed.apply(structuredClone(r));
      assert.deepEqual(dump(replayed), dump(h.state));
    } catch (err) {
      console.error(`seed ${seed} failed`);
      throw err;
    }
  }
});

test('a fuzzy snapshot (entities copied while records keep applying) plus replay from its base converges, with the indexes a load leaves built between records', () => {
  for (const seed of [7, 8, 9]) {
    const rand = prng(seed);
    const h = new Harness();
    boot(h);
    for (let i = 0; i < 200; i++) randomStep(h, rand);
    const source = h.state.snapshotSource();
    const copied = new Map<EntityKind, unknown[]>();
    // Copy one section, then change the state, then copy the next: what a chunked snapshot sees.
    for (const section of source.sections) {
      const values: unknown[] = [];
      const it = section.entries();
      for (let r = it.next(); !r.done; r = it.next()) values.push(structuredClone(r.value));
      copied.set(section.kind, values);
      for (let i = 0; i < 20; i++) randomStep(h, rand);
    }
    const restored = new State();
    for (const [kind, values] of copied) restored.loadSection(kind, values);
    restored.finishLoad(source.baseSeq);
    // The memberships and postings the load left are built a few Users at a time between the records.
    for (const r of h.log) {
      if (r.seq <= source.baseSeq) continue;
      restored.apply(structuredClone(r));
      if (rand() < 0.5) restored.indexStep(1 + Math.floor(rand() * 3), 1 + Math.floor(rand() * 5));
    }
    try {
      assert.deepEqual(dump(restored), dump(h.state));
      checkIndexes(restored);
    } catch (err) {
      console.error(`seed ${seed} failed`);
      throw err;
    }
  }
});

test('delete rules: Application needs DISABLED, no Users and no Groups; Group needs DISABLED; base Application is protected', () => {
  const h = new Harness();
  boot(h);
  const base = h.state.meta!.baseApplication;
  assert.throws(() => h.commit((s) => decide.deleteApplication(s, base)), { code: 'base_application_protected' });
  assert.throws(() => h.commit((s, c) => decide.updateApplication(s, base, { status: 'DISABLED' }, c)), { code: 'base_application_protected' });
  const app = h.commit((s, c) => decide.createApplication(s, { name: 'a' }, c));
  assert.throws(() => h.commit((s) => decide.deleteApplication(s, app.id)), (e: DomainError) => e.code === 'delete_refused' && (e.result as { deleted: boolean }).deleted === false);
  const user = h.commit((s, c) => decide.createUser(s, { email: 'x@y.io', passwordHash: 'h', applications: [app.id] }, c));
  h.commit((s, c) => decide.updateApplication(s, app.id, { status: 'DISABLED' }, c));
  assert.throws(() => h.commit((s) => decide.deleteApplication(s, app.id)), /associated/);
  h.commit((s, c) => decide.removeUserApplication(s, user.id, app.id, c));
  // Issue 23: its Groups, ENABLED or DISABLED, are deleted one by one first, each under its own rule.
  const enabled = h.commit((s, c) => decide.createGroup(s, { name: 'g', application: app.id }, c));
  const disabled = h.commit((s, c) => decide.createGroup(s, { name: 'h', application: app.id }, c));
  h.commit((s, c) => decide.updateGroup(s, disabled.id, { status: 'DISABLED' }, c));
  const refused = (e: DomainError): boolean => e.code === 'delete_refused' && /Groups must be deleted/.test(e.message)
    && (e.result as { deleted: boolean }).deleted === false;
  assert.throws(() => h.commit((s) => decide.deleteApplication(s, app.id)), refused);
  h.commit((s) => decide.deleteGroup(s, disabled.id));
  assert.throws(() => h.commit((s) => decide.deleteApplication(s, app.id)), refused, 'an ENABLED Group is not deleted behind its rule');
  assert.ok(h.state.group(enabled.id) !== undefined);
  h.commit((s, c) => decide.updateGroup(s, enabled.id, { status: 'DISABLED' }, c));
  h.commit((s) => decide.deleteGroup(s, enabled.id));
  assert.equal(h.commit((s) => decide.deleteApplication(s, app.id)), true);
});

test('leaving an Application leaves its Groups, in one record that replays to the same User (issue 23)', () => {
  const h = new Harness();
  boot(h);
  const a = h.commit((s, c) => decide.createApplication(s, { name: 'a' }, c));
  const b = h.commit((s, c) => decide.createApplication(s, { name: 'b' }, c));
  const ga = h.commit((s, c) => decide.createGroup(s, { name: 'ga', application: a.id }, c));
  const gb = h.commit((s, c) => decide.createGroup(s, { name: 'gb', application: b.id }, c));
  const user = h.commit((s, c) => decide.createUser(s, { email: 'x@y.io', passwordHash: 'h', applications: [a.id, b.id], groups: [ga.id, gb.id] }, c));
  h.commit((s, c) => decide.removeUserApplication(s, user.id, a.id, c));
  assert.deepEqual(h.state.user(user.id)!.applications, [b.id]);
  assert.deepEqual(h.state.user(user.id)!.groups, [gb.id]);
  assert.deepEqual(h.state.usersOfGroup(ga.id), []);
  const record = h.log.at(-1)!;
  assert.deepEqual(record.ops.map((o) => `${o.op} ${o.kind}`), ['put user'], 'the whole User, not a "remove" intent');
  const replayed = new State();
  for (const r of [...h.log, record]) replayed.apply(structuredClone(r));
  assert.deepEqual(dump(replayed), dump(h.state));
  checkIndexes(replayed);
});

test('a User joins a Group only with its Application: create and update refuse others with invalid_field groups (issue 23)', () => {
  const h = new Harness();
  boot(h);
  const a = h.commit((s, c) => decide.createApplication(s, { name: 'a' }, c));
  const b = h.commit((s, c) => decide.createApplication(s, { name: 'b' }, c));
  const gb = h.commit((s, c) => decide.createGroup(s, { name: 'gb', application: b.id }, c));
  const onGroups = (e: DomainError): boolean => e.code === 'invalid_field' && e.message.startsWith('groups:');
  assert.throws(() => h.commit((s, c) => decide.createUser(s, { email: 'x@y.io', passwordHash: 'h', applications: [a.id], groups: [gb.id] }, c)), onGroups);
  const user = h.commit((s, c) => decide.createUser(s, { email: 'x@y.io', passwordHash: 'h', applications: [a.id] }, c));
  const before = JSON.stringify(dump(h.state));
  assert.throws(() => h.commit((s, c) => decide.updateUser(s, user.id, { groups: [gb.id] }, c)), onGroups);
  assert.equal(JSON.stringify(dump(h.state)), before, 'a refused update changes nothing');
  // The Application and its Group in one update is consistent, so it is taken.
  const joined = h.commit((s, c) => decide.updateUser(s, user.id, { applications: [b.id], groups: [gb.id] }, c));
  assert.deepEqual(joined.groups, [gb.id]);
});

test('a User stored before the rule, in a Group of an Application it left, loads, replays and can still be updated', () => {
  const h = new Harness();
  boot(h);
  const a = h.commit((s, c) => decide.createApplication(s, { name: 'a' }, c));
  const b = h.commit((s, c) => decide.createApplication(s, { name: 'b' }, c));
  const gb = h.commit((s, c) => decide.createGroup(s, { name: 'gb', application: b.id }, c));
  const user = h.commit((s, c) => decide.createUser(s, { email: 'x@y.io', passwordHash: 'h', applications: [a.id] }, c));
  // What the old removeUserApplication wrote: the User out of b but still in b's Group.
  const stale = { ...h.state.user(user.id)!, groups: [gb.id] };
  h.log.push({ seq: h.state.lastSeq + 1, at: 1_700_000_100_000_000, ops: [{ op: 'put', kind: 'user', value: stale }] });
  h.state.apply(structuredClone(h.log.at(-1)!));
  assert.deepEqual(h.state.usersOfGroup(gb.id).map((u) => u.id), [user.id], 'left as it was');
  const replayed = new State();
  for (const r of h.log) replayed.apply(structuredClone(r));
  assert.deepEqual(dump(replayed), dump(h.state));
  const renamed = h.commit((s, c) => decide.updateUser(s, user.id, { name: 'renamed' }, c));
  assert.deepEqual(renamed.groups, [gb.id], 'an unrelated update neither refuses nor drops it');
  assert.equal(h.commit((s) => decide.importUser(s, renamed)).id, user.id, 'an export of it imports');
});

test('group names are unique within an Application, case-insensitively, on create and rename', () => {
  const h = new Harness();
  boot(h);
  const a = h.commit((s, c) => decide.createApplication(s, { name: 'a' }, c));
  const b = h.commit((s, c) => decide.createApplication(s, { name: 'b' }, c));
  h.commit((s, c) => decide.createGroup(s, { name: 'Admins', application: a.id }, c));
  assert.throws(() => h.commit((s, c) => decide.createGroup(s, { name: 'admins', application: a.id }, c)), { code: 'duplicate_name' });
  h.commit((s, c) => decide.createGroup(s, { name: 'admins', application: b.id }, c));
  const other = h.commit((s, c) => decide.createGroup(s, { name: 'Users', application: a.id }, c));
  assert.throws(() => h.commit((s, c) => decide.updateGroup(s, other.id, { name: 'ADMINS' }, c)), { code: 'duplicate_name' });
  h.commit((s, c) => decide.updateGroup(s, other.id, { name: 'users' }, c));
});

test('a User joins the Organization named by id, else by company_name (created once), else the default', () => {
  const h = new Harness();
  boot(h);
  const app = h.commit((s, c) => decide.createApplication(s, { name: 'a' }, c));
  const u1 = h.commit((s, c) => decide.createUser(s, { email: 'a@x.io', passwordHash: 'h', applications: [app.id], custom_data: { company_name: 'Acme' } }, c));
  const u2 = h.commit((s, c) => decide.createUser(s, { email: 'b@x.io', passwordHash: 'h', applications: [app.id], custom_data: { company_name: 'Acme' } }, c));
  const u3 = h.commit((s, c) => decide.createUser(s, { email: 'c@x.io', passwordHash: 'h', applications: [app.id] }, c));
  assert.equal(u1.organization, u2.organization);
  assert.equal(h.state.organization(u1.organization)!.name, 'Acme');
  assert.equal(u3.organization, h.state.meta!.defaultOrganization);
  const u4 = h.commit((s, c) => decide.createUser(s, { email: 'd@x.io', passwordHash: 'h', applications: [app.id], organization: u1.organization }, c));
  assert.equal(u4.organization, u1.organization);
  assert.throws(() => h.commit((s, c) => decide.createUser(s, { email: 'e@x.io', passwordHash: 'h', applications: [app.id], organization: 'nope' }, c)), { code: 'unknown_reference' });
  assert.throws(() => h.commit((s, c) => decide.createUser(s, { email: 'A@X.IO', passwordHash: 'h', applications: [app.id] }, c)), { code: 'duplicate_email' });
});

test('every update moves modified_at and keeps created_at', () => {
  const h = new Harness();
  boot(h);
  const app = h.commit((s, c) => decide.createApplication(s, { name: 'a' }, c));
  const updated = h.commit((s, c) => decide.updateApplication(s, app.id, { description: 'd' }, c));
  assert.equal(updated.createdAt, app.createdAt);
  assert.ok(updated.modifiedAt > app.modifiedAt);
});

test('version moves on with every op applied, and an undo, applied under the seq it cut back, moves it on too', () => {
  const h = new Harness();
  boot(h);
  const app = h.commit((s, c) => decide.createApplication(s, { name: 'a' }, c));
  const before = h.state.user(h.commit((s, c) => decide.createUser(s, { email: 'v@y.io', passwordHash: 'h1', applications: [app.id] }, c)).id)!;
  const version = h.state.version;
  const seq = h.state.lastSeq;
  const ops = decide.updateUser(h.state, before.id, { passwordHash: 'h2' }, h.ctx()).ops;
  const undo = undoOps(h.state, ops);
  h.state.apply({ seq: seq + 1, at: 1, ops });
  assert.equal(h.state.version, version + ops.length);
  assert.notEqual(h.state.user(before.id), before);
  // The write failed and was cut back: the old User comes back, lastSeq goes back, the version does not.
  h.state.apply({ seq, at: 1, ops: undo });
  assert.equal(h.state.user(before.id), before);
  assert.equal(h.state.lastSeq, seq);
  assert.equal(h.state.version, version + ops.length + undo.length);
});
