// Email identity in the store (issue 23, part 3): one NFC, case-folded key per address, no ASCII look-alikes, and old data that shares a key still loads.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { emailCharacterProblem, emailKey, foldText, normalizeEmail } from '../src/domain/email.js';
import type { EntityKind, LogRecord, Organization, User, Application } from '../src/domain/entities.js';
import { DomainError } from '../src/domain/errors.js';
import * as decide from '../src/store/decide.js';
import { State } from '../src/store/state.js';

const at = 1_700_000_000_000_000;
const nfc = 'jos\u00e9@example.com';
const nfd = 'jose\u0301@example.com';

function org(id: string): Organization {
  return { id, name: `org ${id}`, description: '', customData: null, status: 'ENABLED', createdAt: at, modifiedAt: at };
}

function app(id: string): Application {
  return { id, name: `app ${id}`, description: '', customData: null, status: 'ENABLED', createdAt: at, modifiedAt: at };
}

function user(id: string, email: string, createdAt: number): User {
  return {
    id, email, name: id, status: 'ENABLED', customData: null, passwordHash: 'h', organization: 'org1',
    applications: ['app1'], groups: [], apikeys: [], createdAt, modifiedAt: createdAt,
  };
}

function put(seq: number, kind: 'organization' | 'application' | 'user', value: Organization | Application | User): LogRecord {
  return { seq, at: at + seq, ops: [{ op: 'put', kind, value } as LogRecord['ops'][number]] };
}

function delUser(seq: number, id: string): LogRecord {
  return { seq, at: at + seq, ops: [{ op: 'del', kind: 'user', id }] };
}

/** A log written before addresses were stored NFC: the NFD spelling first (newer), the NFC one after it (older). */
function legacyLog(): LogRecord[] {
  return [
    put(1, 'organization', org('org1')), put(2, 'application', app('app1')),
    put(3, 'user', user('newer', nfd, at + 20)), put(4, 'user', user('older', nfc.toUpperCase(), at + 10)),
  ];
}

test('emailKey: NFC and NFD spellings and ASCII case are one key; non-ASCII letters fold per code point', () => {
  assert.equal(emailKey(nfc), emailKey(nfd));
  assert.equal(emailKey('JOS\u00c9@Example.COM'), emailKey(nfd));
  assert.equal(emailKey('Jane@Example.com'), 'jane@example.com');
  assert.equal(normalizeEmail(nfd), nfc);
  // Greek capital sigma folds to sigma whatever follows it (no final-sigma context rule).
  assert.equal(emailKey('\u03a3\u03a3@example.com'), '\u03c3\u03c3@example.com');
  assert.equal(foldText(`${nfd}\u0000Name`), `${nfc}\u0000name`);
});

test('emailKey: a character that imitates ASCII never shares a key with the ASCII address', () => {
  const pairs: Array<[string, string]> = [
    ['\u212aate@example.com', 'kate@example.com'], ['kate@example.\u212aom', 'kate@example.com'], ['ad\u0131min@example.com', 'ADIMIN@example.com'],
    ['admin@\ufb01rm.com', 'admin@firm.com'], ['\u017fam@example.com', 'sam@example.com'], ['\uff41dmin@example.com', 'admin@example.com'],
  ];
  for (const [imitation, ascii] of pairs) {
    assert.notEqual(emailKey(imitation), emailKey(ascii), imitation);
    assert.equal(emailKey(imitation), emailKey(imitation), 'a legacy address still matches itself');
  }
  // I + combining dot above composes (NFC) to U+0130, which lowercases to i + dot: refused, and not keyed as i.
  assert.notEqual(emailKey('I\u0307@example.com'), emailKey('i@example.com'));
  assert.notEqual(emailKey('I\u0307@example.com'), emailKey('i\u0307@example.com'));
});

test('emailCharacterProblem: refuses invisible, bidi, control and imitating characters, names the code point', () => {
  const refused: Array<[string, string]> = [
    ['ja\u200bne@example.com', 'U+200B'], ['ja\u200cne@example.com', 'U+200C'], ['ja\u200dne@example.com', 'U+200D'],
    ['ja\u2060ne@example.com', 'U+2060'], ['\ufeffjane@example.com', 'U+FEFF'], ['\u202ejane@example.com', 'U+202E'],
    ['ja\u202ane@example.com', 'U+202A'], ['ja\u2066ne@example.com', 'U+2066'], ['ja\u2069ne@example.com', 'U+2069'],
    ['ja\u200ene@example.com', 'U+200E'], ['ja\u200fne@example.com', 'U+200F'], ['ja\u061cne@example.com', 'U+061C'],
    ['ja\u0085ne@example.com', 'U+0085'], ['ja\u0001ne@example.com', 'U+0001'], ['ja\u00a0ne@example.com', 'U+00A0'],
    ['\u212aate@example.com', 'U+212A'], ['I\u0307@example.com', 'U+0130'], ['\u0130@example.com', 'U+0130'],
    ['ad\u0131min@example.com', 'U+0131'], ['\uff41dmin@example.com', 'U+FF41'],
  ];
  for (const [email, codePoint] of refused) {
    const problem = emailCharacterProblem(email);
    assert.ok(problem !== undefined && problem.includes(codePoint), `${JSON.stringify(email)}: ${problem}`);
  }
  for (const email of [nfc, nfd, 'JOS\u00c9@example.com', '\u00e5se@example.com', '\u212bse@example.com', 'm\u00fcller@b\u00fccher.de', 'plain@example.com']) {
    assert.equal(emailCharacterProblem(email), undefined, JSON.stringify(email));
  }
});

test('State: an NFC-stored User is found by its NFD spelling and by case', () => {
  const state = new State();
  for (const record of legacyLog().slice(0, 2)) state.apply(record);
  state.apply(put(3, 'user', user('u1', nfc, at + 1)));
  assert.equal(state.userByEmail(nfd)?.id, 'u1');
  assert.equal(state.userByEmail('JOSE\u0301@EXAMPLE.COM')?.id, 'u1');
  assert.equal(state.userByEmail('jos\u00e9@example.com')?.id, 'u1');
});

test('State: old Users that share a key under the new rule replay without throwing; the oldest is found; a warning can list them', () => {
  const state = new State();
  for (const record of legacyLog()) state.apply(record);
  assert.equal(state.user('newer')?.email, nfd, 'both still load, as stored');
  assert.equal(state.user('older')?.email, nfc.toUpperCase());
  assert.equal(state.userByEmail(nfc)?.id, 'older', 'the older one is found, though it was applied later');
  assert.equal(state.userByEmail(nfd)?.id, 'older');
  assert.deepEqual(state.sharedEmailKeys(), [{ key: emailKey(nfc), userIds: ['older', 'newer'] }]);

  // Either may keep its own email on update; neither may take a key another holds.
  const ctx = { now: at + 100, newId: () => 'x1', newApikeyId: () => 'K1', newNonce: () => 'n1' };
  assert.doesNotThrow(() => decide.updateUser(state, 'newer', { email: nfd, name: 'renamed' }, ctx));
  state.apply(put(5, 'user', user('third', 'third@example.com', at + 30)));
  assert.throws(() => decide.updateUser(state, 'third', { email: nfd }, ctx), (e: unknown) => e instanceof DomainError && e.code === 'duplicate_email');
  assert.throws(() => decide.createUser(state, { email: nfc, passwordHash: 'h', applications: ['app1'] }, ctx),
    (e: unknown) => e instanceof DomainError && e.code === 'duplicate_email');

  // When the older one goes, the newer one takes the key; when it changes its email, the key is free.
  state.apply(delUser(6, 'older'));
  assert.equal(state.userByEmail(nfc)?.id, 'newer');
  assert.deepEqual(state.sharedEmailKeys(), []);
  state.apply(put(7, 'user', { ...user('newer', 'other@example.com', at + 20) }));
  assert.equal(state.userByEmail(nfc), undefined);
  assert.equal(state.userByEmail('OTHER@example.com')?.id, 'newer');
});

test('State: a snapshot load of Users sharing a key indexes the oldest, in whatever order they come', () => {
  for (const order of [['newer', 'older'], ['older', 'newer']]) {
    const state = new State();
    const users = { newer: user('newer', nfd, at + 20), older: user('older', nfc, at + 10) } as Record<string, User>;
    const sections: Array<[EntityKind, unknown[]]> = [
      ['organization', [org('org1')]], ['application', [app('app1')]], ['user', order.map((id) => structuredClone(users[id]!))],
    ];
    for (const [kind, values] of sections) state.loadSection(kind, values);
    state.finishLoad(4);
    assert.equal(state.userByEmail(nfd)?.id, 'older', order.join(','));
    assert.equal(state.sharedEmailKeys().length, 1);
  }
});

test('State: a legacy look-alike address matches itself only, never the ASCII address it imitates', () => {
  const state = new State();
  for (const record of legacyLog().slice(0, 2)) state.apply(record);
  state.apply(put(3, 'user', user('ascii', 'kate@example.com', at + 1)));
  state.apply(put(4, 'user', user('kelvin', '\u212aate@example.com', at + 2)));
  assert.equal(state.userByEmail('Kate@example.com')?.id, 'ascii');
  assert.equal(state.userByEmail('\u212aate@example.com')?.id, 'kelvin');
  assert.deepEqual(state.sharedEmailKeys(), []);
});

test('decide stores an email in NFC', () => {
  const state = new State();
  for (const record of legacyLog().slice(0, 2)) state.apply(record);
  const ctx = { now: at + 100, newId: () => 'x1', newApikeyId: () => 'K1', newNonce: () => 'n1' };
  state.apply({ seq: 3, at: at + 3, ops: [{ op: 'put', kind: 'meta', value: { baseApplication: 'app1', defaultOrganization: 'org1' } }] });
  const created = decide.createUser(state, { email: nfd, passwordHash: 'h', applications: ['app1'] }, ctx);
  assert.equal(created.result.email, nfc);
});
