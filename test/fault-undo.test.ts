// Cut-back undo: records the log could not take are taken back out of memory exactly, indexes included, for every kind of change (regression for issue 5: a failed write must change nothing).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { LogRecord } from '../src/domain/entities.js';
import { DomainError } from '../src/domain/errors.js';
import { Committer, type RecordSink } from '../src/service/committer.js';
import { MicrosClock } from '../src/store/clock.js';
import * as decide from '../src/store/decide.js';
import { newApikeyId, newEntityId } from '../src/store/ids.js';
import { State } from '../src/store/state.js';
import { Rng } from './helpers/fault-storage.js';

/** A sink whose appends stay pending until the test makes them durable or cuts them back. */
class ControlledSink implements RecordSink {
  readonly pending: Array<{ seq: number; resolve: () => void; reject: (err: Error) => void }> = [];
  private listener: ((firstLostSeq: number) => void) | undefined;
  /** Called with each record before it is applied: the state then is the one a cut-back from it must restore. */
  beforeApply: (record: LogRecord) => void = () => undefined;

  append(record: LogRecord): Promise<void> {
    this.beforeApply(record);
    return new Promise((resolve, reject) => this.pending.push({ seq: record.seq, resolve, reject }));
  }

  setLossListener(listener: (firstLostSeq: number) => void): void {
    this.listener = listener;
  }

  durableUpTo(seq: number): void {
    while (this.pending.length > 0 && this.pending[0]!.seq <= seq) this.pending.shift()!.resolve();
  }

  /** What the log does on a failed write: tell the owner synchronously, then reject. */
  cutBackFrom(seq: number): void {
    this.listener?.(seq);
    const lost = this.pending.filter((p) => p.seq >= seq);
    this.pending.splice(this.pending.length - lost.length);
    for (const p of lost) p.reject(new Error('cut back'));
  }
}

/** Everything State answers, entities and indexes alike, as one comparable string. */
function deepFingerprint(state: State): string {
  const byId = <T extends { id: string }>(items: Iterable<T>): T[] => [...items].sort((a, b) => (a.id < b.id ? -1 : 1));
  const ids = (items: readonly { id: string }[]): string[] => items.map((i) => i.id).sort();
  const users = byId(state.allUsers());
  const apps = byId(state.allApplications());
  const groups = byId(state.allGroups());
  const orgs = byId(state.allOrganizations());
  return JSON.stringify({
    lastSeq: state.lastSeq, meta: state.meta ?? null, counts: state.counts(), users, apps, groups, orgs,
    byEmail: users.map((u) => state.userByEmail(u.email.toUpperCase())?.id),
    byKey: users.flatMap((u) => u.apikeys.map((k) => state.userByApikey(k.id)?.id)),
    search: users.map((u) => state.search.search(u.email.slice(0, 6).toLowerCase(), 1000).slice().sort()),
    appIndexes: apps.map((a) => [ids(state.usersOfApplication(a.id)), ids(state.groupsOfApplication(a.id)), state.countUsersOfApplication(a.id)]),
    groupIndexes: groups.map((g) => [ids(state.usersOfGroup(g.id)), state.groupByName(g.application, g.name.toUpperCase())?.id]),
    orgIndexes: orgs.map((o) => [ids(state.usersOfOrganization(o.id)), state.organizationByName(o.name.toUpperCase())?.id]),
  });
}

test('a cut-back undoes every record from the lost seq on, for seeded random changes of every kind, indexes included', async (t) => {
  const seed = Number(process.env['UNDO_SEED'] ?? 5150);
  t.diagnostic(`seed ${seed} (UNDO_SEED=${seed} replays it)`);
  const rng = new Rng(seed);
  const state = new State();
  const sink = new ControlledSink();
  let nonce = 0;
  const committer = new Committer(state, sink, new MicrosClock(), { newId: newEntityId, newApikeyId, newNonce: () => `nonce${nonce++}` });
  const settle = (p: Promise<unknown>): void => void p.catch(() => undefined);
  settle(committer.commit((s, ctx) => decide.bootstrap(s, { email: 'admin@example.com', passwordHash: 'h0' }, ctx)));
  sink.durableUpTo(1);
  /** seq -> the state right before the record with that seq was applied. */
  const before = new Map<number, string>();
  sink.beforeApply = (record) => before.set(record.seq, deepFingerprint(state));

  const pick = <T>(items: Iterable<T>): T | undefined => {
    const all = [...items];
    return all.length === 0 ? undefined : rng.pick(all);
  };
  let n = 0;
  const changes: Array<() => Promise<unknown> | undefined> = [
    () => committer.commit((s, ctx) => decide.createApplication(s, { name: `app ${n++}`, custom_data: { n } }, ctx)),
    () => {
      const app = pick(state.allApplications());
      return app && committer.commit((s, ctx) => decide.createGroup(s, { name: `group ${n++}`, application: app.id }, ctx));
    },
    () => {
      const app = pick(state.allApplications());
      const group = app && pick(state.groupsOfApplication(app.id));
      return app && committer.commit((s, ctx) => decide.createUser(s, {
        email: `user${n++}@example.com`, passwordHash: `h${n}`, applications: [app.id], groups: group ? [group.id] : [],
        custom_data: rng.chance(0.5) ? { company_name: `Company ${rng.int(1, 3)}` } : null,
      }, ctx));
    },
    () => {
      const user = pick(state.allUsers());
      return user && committer.commit((s, ctx) => decide.updateUser(s, user.id, { name: `renamed ${n++}`, email: rng.chance(0.3) ? `moved${n}@example.com` : undefined, status: rng.pick(['ENABLED', 'DISABLED', 'UNVERIFIED'] as const) }, ctx));
    },
    () => {
      const user = pick(state.allUsers());
      return user && committer.commit((s, ctx) => decide.createApikey(s, user.id, { name: `key ${n++}` }, ctx));
    },
    () => {
      const group = pick(state.allGroups());
      if (group === undefined) return undefined;
      return committer.commit((s, ctx) => decide.updateGroup(s, group.id, { status: 'DISABLED' }, ctx))
        .then(() => committer.commit((s) => decide.deleteGroup(s, group.id)));
    },
    () => {
      const group = pick(state.allGroups());
      return group && committer.commit((s) => decide.deleteGroup(s, group.id));
    },
    () => {
      const user = pick([...state.allUsers()].filter((u) => u.status === 'DISABLED'));
      return user && committer.commit((s) => decide.deleteUser(s, user.id));
    },
    () => {
      const app = pick([...state.allApplications()].filter((a) => a.id !== state.meta?.baseApplication));
      if (app === undefined) return undefined;
      return committer.commit((s, ctx) => decide.updateApplication(s, app.id, { status: 'DISABLED' }, ctx))
        .then(() => committer.commit((s) => decide.deleteApplication(s, app.id)));
    },
  ];

  let cutBacks = 0;
  let undone = 0;
  for (let step = 0; step < 800; step++) {
    const change = rng.pick(changes);
    try {
      const p = change();
      if (p !== undefined) settle(p);
    } catch (err) {
      if (!(err instanceof DomainError)) throw err; // a rule refused: nothing was applied
    }
    // Chained changes (disable, then delete) commit once their first record is durable.
    await Promise.resolve();
    const roll = rng.next();
    if (roll < 0.6 && sink.pending.length > 0) {
      sink.durableUpTo(rng.pick(sink.pending).seq);
    } else if (roll < 0.75 && sink.pending.length > 0) {
      const from = rng.pick(sink.pending).seq;
      undone += state.lastSeq - from + 1;
      sink.cutBackFrom(from);
      cutBacks++;
      assert.equal(state.lastSeq, from - 1, 'the state is back before the lost record');
      const expected = before.get(from)!;
      const actual = deepFingerprint(state);
      if (actual !== expected) assert.fail(`step ${step}: after cutting back from seq ${from}: ${firstDifference(JSON.parse(expected), JSON.parse(actual))}`);
    }
    await new Promise((resolve) => setImmediate(resolve));
  }
  t.diagnostic(`${cutBacks} cut-backs undid ${undone} records; ${state.counts().users} users, ${state.counts().groups} groups at the end`);
  assert.ok(cutBacks > 30 && undone > 50);
});

/** Where two fingerprints first differ, briefly. */
function firstDifference(expected: Record<string, unknown>, actual: Record<string, unknown>): string {
  for (const key of Object.keys(expected)) {
    const e = JSON.stringify(expected[key]);
    const a = JSON.stringify(actual[key]);
    if (e === a) continue;
    let at = 0;
    while (at < e.length && e[at] === a[at]) at++;
    return `${key} differs: expected ...${e.slice(Math.max(0, at - 80), at + 120)}... got ...${a.slice(Math.max(0, at - 80), at + 120)}...`;
  }
  return 'no difference';
}
