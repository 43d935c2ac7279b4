// Issue 23, "Amplification": an unpaged listing of large items is streamed, and rendered a bounded slice per event-loop turn.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { listInlineCharsMax, listSliceCharsMax } from '../src/config/limits.js';
import { joined } from '../src/http/adapter.js';
import * as decide from '../src/store/decide.js';
import { InProcessApp, resultOf } from './helpers/fault-app.js';
import { PowerLossStorage } from './helpers/fault-storage.js';

/** Near the custom_data limit (64 KiB encoded). */
const bulky = { blob: 'y'.repeat(60_000) };
const appCount = 12;
const userCount = 12;
let app: InProcessApp;

before(async () => {
  const storage = new PowerLossStorage();
  await storage.mkdirp('/slices');
  app = await InProcessApp.open({ storage, dir: '/slices' });
  const apps: string[] = [];
  for (let i = 0; i < appCount; i++) {
    apps.push(resultOf<{ application: { id: string } }>(await app.post('/applications/application', { name: `bulky ${i}`, custom_data: bulky })).application.id);
  }
  // Each User's full representation embeds every Application's custom_data: ~720 KB.
  for (let i = 0; i < userCount; i++) {
    await app.committer.commit((s, ctx) => decide.createUser(s, {
      email: `sliced${i}@slices.example`, name: `Sliced ${i}`, passwordHash: 'not-a-hash', applications: apps,
    }, ctx));
  }
});

after(async () => {
  await app.close();
});

/**
 * Reads a streamed answer whole; an empty chunk is the end of an event-loop turn (streamPause). Returns the text
 * and the most characters rendered within one turn.
 */
async function readTurns(path: string): Promise<{ text: string; turnCharsMax: number; turns: number }> {
  const reply = await app.reply('GET', path);
  assert.equal(reply.status, 200);
  assert.ok(reply.stream !== undefined, `${path}: a long listing is streamed, not built as one string`);
  let text = joined(reply.body);
  let turn = 0;
  let turnCharsMax = 0;
  let turns = 1;
  for (let next = reply.stream.next(); next.done !== true; next = reply.stream.next()) {
    if (next.value === '') {
      turns++;
      turn = 0;
      continue;
    }
    text += next.value;
    turn += next.value.length;
    turnCharsMax = Math.max(turnCharsMax, turn);
  }
  return { text, turnCharsMax, turns };
}

test('GET /users without limit renders at most a slice (plus one User) per turn', async () => {
  const { text, turnCharsMax, turns } = await readTurns('/users');
  const users = (JSON.parse(text) as { service: { result: { users: { id: string; applications: unknown[] }[] } } }).service.result.users;
  assert.equal(users.length, userCount + 1, 'every User, the admin too');
  const largest = Math.max(...users.map((u) => JSON.stringify(u).length));
  assert.ok(largest > 600_000, `the Users are large (${largest})`);
  assert.ok(turnCharsMax <= listSliceCharsMax + largest + 1, `${turnCharsMax} characters in one turn`);
  assert.ok(turns > 2, `spread over ${turns} turns`);
});

test('GET /applications without limit is streamed in slices too; a short listing is one string', async () => {
  const { text, turnCharsMax } = await readTurns('/applications');
  const apps = (JSON.parse(text) as { service: { result: { applications: unknown[] } } }).service.result.applications;
  assert.equal(apps.length, appCount + 1);
  assert.ok(turnCharsMax <= listSliceCharsMax + 70_000, `${turnCharsMax} characters in one turn`);
  const short = await app.reply('GET', '/organizations');
  assert.equal(short.stream, undefined, 'a listing under listInlineCharsMax answers at once');
  assert.ok(joined(short.body).length < listInlineCharsMax);
});

test('GET /users?minimal=1 streams no membership at all', async () => {
  const reply = await app.request('GET', '/users', { query: 'minimal=1' });
  const users = (reply.json as { service: { result: { users: Record<string, unknown>[] } } }).service.result.users;
  assert.equal(users.length, userCount + 1);
  for (const u of users) assert.ok(!('applications' in u) && !('groups' in u) && !('apikeys' in u));
  assert.ok(reply.body.length < 512 * (userCount + 1), `${reply.body.length} characters`);
});
