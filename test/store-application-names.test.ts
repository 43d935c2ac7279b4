// The Application name index (issue 26): kept by apply through puts, renames and deletes, rebuilt by a snapshot load, duplicates stored earlier kept.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Application, EntityKind, LogRecord, Op } from '../src/domain/entities.js';
import { DomainError } from '../src/domain/errors.js';
import * as decide from '../src/store/decide.js';
import { applicationNameKey, State } from '../src/store/state.js';
import { StateHarness } from './helpers/state-harness.js';

let seq = 0;

function app(id: string, name: string, createdAt = 1_000): Application {
  return { id, name, description: '', customData: null, status: 'ENABLED', createdAt, modifiedAt: createdAt };
}

function applyOps(state: State, ...ops: Op[]): void {
  const record: LogRecord = { seq: ++seq, at: 2_000 + seq, ops };
  state.apply(record);
}

const put = (value: Application): Op => ({ op: 'put', kind: 'application', value });
const del = (id: string): Op => ({ op: 'del', kind: 'application', id });

function named(state: State, name: string): string[] {
  return [...state.applicationIdsNamed(name)].sort();
}

/** A snapshot's sections copied out of `state` and loaded into a new State, as a restart does. */
function reloaded(state: State): State {
  const source = state.snapshotSource();
  const restored = new State();
  for (const section of source.sections) {
    const values: unknown[] = [];
    const it = section.entries();
    for (let r = it.next(); !r.done; r = it.next()) values.push(structuredClone(r.value));
    restored.loadSection(section.kind as EntityKind, values);
  }
  restored.finishLoad(source.baseSeq);
  return restored;
}

test('names are keyed NFC and lowercased per code point, as email keys fold', () => {
  assert.equal(applicationNameKey('Billing'), applicationNameKey('BILLING'));
  assert.equal(applicationNameKey('Caf\u00e9'), applicationNameKey('CAFE\u0301'));
  assert.notEqual(applicationNameKey('Billing'), applicationNameKey('Billing '));
});

test('apply keeps the index through puts, renames and deletes; replaying a record twice changes nothing', () => {
  const state = new State();
  applyOps(state, put(app('a1', 'Billing')));
  assert.deepEqual(named(state, 'billing'), ['a1']);
  const rename: Op = put({ ...app('a1', 'Invoices'), modifiedAt: 1_500 });
  applyOps(state, rename);
  applyOps(state, rename);
  assert.deepEqual(named(state, 'BILLING'), [], 'the old name is free after a rename');
  assert.deepEqual(named(state, 'invoices'), ['a1']);
  applyOps(state, put(app('a1', 'INVOICES')));
  assert.deepEqual(named(state, 'Invoices'), ['a1'], 'a change of case keeps one entry');
  applyOps(state, put(app('a2', 'Billing')));
  assert.deepEqual(named(state, 'billing'), ['a2']);
  applyOps(state, del('a1'));
  applyOps(state, del('a1'));
  assert.deepEqual(named(state, 'invoices'), [], 'a deleted Application frees its name');
  assert.deepEqual(named(state, 'billing'), ['a2']);
});

test('duplicates stored before names were unique are all kept, each until it is renamed or deleted', () => {
  const state = new State();
  applyOps(state, put(app('a1', 'Twin')), put(app('a2', 'TWIN', 1_001)), put(app('a3', 'twin', 1_002)));
  assert.deepEqual(named(state, 'twin'), ['a1', 'a2', 'a3']);
  applyOps(state, put(app('a2', 'Solo', 1_001)));
  assert.deepEqual(named(state, 'twin'), ['a1', 'a3']);
  applyOps(state, del('a3'));
  assert.deepEqual(named(state, 'twin'), ['a1']);
  assert.deepEqual(named(state, 'solo'), ['a2']);
});

test('a snapshot load rebuilds the index, duplicates included', () => {
  const state = new State();
  applyOps(state, put(app('a1', 'Twin')), put(app('a2', 'twin', 1_001)), put(app('a3', 'Other', 1_002)));
  applyOps(state, put(app('a3', 'Renamed', 1_002)), put(app('a4', 'Gone', 1_003)));
  applyOps(state, del('a4'));
  const restored = reloaded(state);
  assert.deepEqual(named(restored, 'TWIN'), ['a1', 'a2']);
  assert.deepEqual(named(restored, 'renamed'), ['a3']);
  assert.deepEqual(named(restored, 'other'), []);
  assert.deepEqual(named(restored, 'gone'), []);
  // And apply keeps it after the load.
  applyOps(restored, put(app('a1', 'Single')));
  assert.deepEqual(named(restored, 'twin'), ['a2']);
  assert.deepEqual(named(restored, 'single'), ['a1']);
});

test('decide refuses a taken name on create and rename, allows an old duplicate its own name, and counts the base Application', () => {
  const h = new StateHarness();
  h.commit((s, ctx) => decide.bootstrap(s, { email: 'admin@example.com', passwordHash: 'h' }, ctx));
  const refused = (fn: () => unknown): void => assert.throws(fn, (e: unknown) => e instanceof DomainError && e.code === 'duplicate_name' && e.status === 409);
  refused(() => h.commit((s, ctx) => decide.createApplication(s, { name: decide.baseApplicationName.toUpperCase() }, ctx)));
  const billing = h.commit((s, ctx) => decide.createApplication(s, { name: 'Billing' }, ctx));
  const other = h.commit((s, ctx) => decide.createApplication(s, { name: 'Other' }, ctx));
  refused(() => h.commit((s, ctx) => decide.createApplication(s, { name: 'bILLING' }, ctx)));
  refused(() => h.commit((s, ctx) => decide.updateApplication(s, other.id, { name: 'billing' }, ctx)));
  h.commit((s, ctx) => decide.updateApplication(s, billing.id, { name: 'BILLING' }, ctx));
  // An older duplicate, as data written before the rule may hold it.
  h.apply([put(app('legacy', 'billing', 1))]);
  h.commit((s, ctx) => decide.updateApplication(s, 'legacy', { name: 'Billing', description: 'kept' }, ctx));
  refused(() => h.commit((s, ctx) => decide.createApplication(s, { name: 'Billing' }, ctx)));
  h.commit((s, ctx) => decide.updateApplication(s, 'legacy', { name: 'Billing (legacy)' }, ctx));
  assert.deepEqual([...h.state.applicationIdsNamed('billing')], [billing.id]);
});
