// A search answer streamed while users are deleted: the deleted are skipped, the rest arrive in creation order, one valid envelope.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { searchResultsInlineMax } from '../src/config/limits.js';
import { joined } from '../src/http/adapter.js';
import * as decide from '../src/store/decide.js';
import { InProcessApp, resultOf } from './helpers/fault-app.js';
import { PowerLossStorage } from './helpers/fault-storage.js';

const userCount = searchResultsInlineMax + 300;
let app: InProcessApp;
/** The ids of the users made for this test, in creation order. */
const made: string[] = [];

before(async () => {
  const storage = new PowerLossStorage();
  await storage.mkdirp('/stream');
  app = await InProcessApp.open({ storage, dir: '/stream' });
  const appId = resultOf<{ application: { id: string } }>(await app.post('/applications/application', { name: 'stream app' })).application.id;
  // Straight through the committer: no password hashing for a thousand users.
  for (let i = 0; i < userCount; i += 100) {
    const batch = await Promise.all(Array.from({ length: Math.min(100, userCount - i) }, (_, j) => app.committer.commit((s, ctx) => decide.createUser(s, {
      email: `streamed${i + j}@deletes.example`, name: `Streamed ${i + j}`, passwordHash: 'not-a-hash', applications: [appId],
    }, ctx))));
    made.push(...batch.map((u) => u.id));
  }
});

after(async () => {
  await app.close();
});

async function deleteUser(id: string): Promise<void> {
  await app.committer.commit((s, ctx) => decide.updateUser(s, id, { status: 'DISABLED' }, ctx));
  await app.committer.commit((s) => decide.deleteUser(s, id));
}

test('users deleted while a search streams are skipped, whether found before the stream began or after', async () => {
  const reply = await app.reply('GET', '/users/search/deletes.example');
  assert.equal(reply.status, 200);
  const stream = reply.stream;
  assert.ok(stream !== undefined, 'more matches than fit inline are streamed');
  let text = joined(reply.body);
  const first = stream.next();
  assert.equal(first.done, false);
  text += first.value;
  const rendered = (text.match(/"email":"streamed\d+@/g) ?? []).length;
  assert.ok(rendered > 0 && rendered < 200, `the first chunk holds a few users (${rendered})`);
  // Some already found but not rendered yet, and some the search has not reached yet.
  const doomed = [...made.slice(rendered + 10, rendered + 40), ...made.slice(searchResultsInlineMax + 50, searchResultsInlineMax + 80)];
  for (const id of doomed) await deleteUser(id);
  for (let next = stream.next(); next.done !== true; next = stream.next()) text += next.value;
  const users = (JSON.parse(text) as { service: { result: { users: { id: string }[] } } }).service.result.users;
  assert.deepEqual(users.map((u) => u.id), made.filter((id) => !doomed.includes(id)));
});
