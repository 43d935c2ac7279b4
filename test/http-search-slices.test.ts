// HTTP: searches that take several slices of work (short terms among more users than one slice checks) answer the right users in creation order, inline, streamed and paged.

import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { searchDocsPerSlice, searchResultsInlineMax } from '../src/config/limits.js';
import { authctl } from './helpers/authctl.js';
import { createApplication } from './helpers/http-fixtures.js';
import { okKey, type UserFullJson } from './helpers/http-shapes.js';
import { startServer, type Api, type ServerProcess } from './helpers/server.js';

// One precomputed argon2id hash (password "streaming-pass") for every user: the import hashes nothing.
const importedHash = '$argon2id$v=19$m=1024,t=1,p=1$c3RyZWFtaW5nLXNhbHQ$+3ECS4b+EDX1W9mo1nU7WTH/yr+G5KvHrKlIf4UXx1E';
/** More users than one slice checks, so a term under 3 characters (scanned) takes at least two slices. */
const userCount = searchDocsPerSlice + 5000;
/** A few users, on both sides of the first slice boundary, hold "Zé" in their name; no id or email can. */
const rare = [0, 7, searchDocsPerSlice - 2, searchDocsPerSlice + 1, userCount - 1];
/**
 * Every 29th user holds "q~": more than searchResultsInlineMax of them, the first searchResultsInlineMax + 1
 * only found in the second slice, and some left to find while the answer streams.
 */
const frequentEvery = 29;
const nameOf = (i: number): string => `Bulk ${i}${rare.includes(i) ? ' Zé' : ''}${i % frequentEvery === 0 ? ' q~' : ''}`;

let server: ServerProcess;
let api: Api;

before(async () => {
  assert.ok(Math.ceil(userCount / frequentEvery) > searchResultsInlineMax + 1);
  assert.ok((searchResultsInlineMax + 1) * frequentEvery > searchDocsPerSlice);
  server = await startServer();
  const app = await createApplication(server.api());
  await server.stop();
  // Made by the offline import: tens of thousands of users through the API would take minutes.
  const file = join(server.dirs.root, 'bulk.jsonl');
  const lines = Array.from({ length: userCount }, (_, i) => JSON.stringify({
    kind: 'user', email: `bulk${i}@slices.example`, name: nameOf(i), password_hash: importedHash, applications: [app.id],
  }));
  writeFileSync(file, `${lines.join('\n')}\n`);
  const imported = await authctl(['import', '--data-dir', server.dirs.dataDir, file]);
  assert.equal(imported.code, 0, imported.stderr);
  server = await server.restart();
  api = server.api();
});

after(async () => {
  await server?.dispose();
});

const namesOf = (users: UserFullJson[]): string[] => users.map((u) => u.name);

/** Every page of `limit` for the term, following `next`, as one list. */
async function allPages(term: string, limit: number): Promise<UserFullJson[]> {
  const users: UserFullJson[] = [];
  let cursor = '';
  for (let pages = 0; pages < 1000; pages++) {
    const res = await api.get(`/users/search/${term}?limit=${limit}${cursor}`);
    assert.equal(res.status, 200, res.text);
    const result = (res.json as { service: { result: { users: UserFullJson[]; next?: string } } }).service.result;
    users.push(...result.users);
    if (result.next === undefined) return users;
    assert.equal(result.users.length, limit, 'only the last page may be short');
    cursor = `&cursor=${result.next}`;
  }
  throw new Error('paging did not end');
}

test('a rare 2-character term among more users than one slice checks: the right users, whole and paged', async () => {
  const expected = rare.map(nameOf);
  const whole = await api.get(`/users/search/${encodeURIComponent('ZÉ')}`);
  assert.equal(whole.headers.get('transfer-encoding'), null, 'a few matches are answered in one piece');
  assert.deepEqual(namesOf(okKey<UserFullJson[]>(whole, 'users')), expected);
  for (const limit of [1, 2, 100]) assert.deepEqual(namesOf(await allPages(encodeURIComponent('zé'), limit)), expected, `pages of ${limit}`);
});

test('a short term matching more users than are answered inline is streamed whole, matched on as it streams', async () => {
  const expected = Array.from({ length: userCount }, (_, i) => i).filter((i) => i % frequentEvery === 0).map(nameOf);
  const res = await api.get('/users/search/q~');
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('transfer-encoding'), 'chunked');
  assert.deepEqual(namesOf(okKey<UserFullJson[]>(res, 'users')), expected);
  assert.deepEqual(namesOf(await allPages('q~', 1000)), expected, 'paged');
});

test('a 1-character term no user holds walks every user and answers nothing', async () => {
  assert.deepEqual(okKey<UserFullJson[]>(await api.get(`/users/search/${encodeURIComponent('ü')}`), 'users'), []);
  assert.deepEqual(await allPages(encodeURIComponent('ü'), 10), []);
});
