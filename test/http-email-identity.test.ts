// HTTP: email identity (issue 23, part 3): NFC and NFD spellings are one account, look-alikes and invisible characters are refused.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  authenticate, baseApplicationId, createApplication, createUser, defaultUserPassword, unique,
} from './helpers/http-fixtures.js';
import { fails, failsOnField, ok, okKey, type ApplicationJson, type UserFullJson } from './helpers/http-shapes.js';
import { RecordingLogger } from './helpers/persist-fixtures.js';
import { startServer, type Api, type ServerProcess } from './helpers/server.js';
import { openPersistence } from '../src/persist/persistence.js';
import { State } from '../src/store/state.js';

let server: ServerProcess;
let api: Api;
let app: ApplicationJson;

before(async () => {
  server = await startServer();
  api = server.api();
  app = await createApplication(api);
});

after(async () => {
  await server?.dispose();
});

/** `é` composed (NFC) and decomposed (e + U+0301, NFD): one address to a reader. */
function spellings(prefix: string): { nfc: string; nfd: string } {
  const local = unique(prefix);
  return { nfc: `jos\u00e9-${local}@example.com`, nfd: `jose\u0301-${local}@example.com` };
}

function create(email: string, extra: Record<string, unknown> = {}): ReturnType<Api['post']> {
  return api.post('/users/user', { email, password: defaultUserPassword, applications: [app.id], ...extra });
}

describe('NFC and NFD spellings of one address', () => {
  test('are one account: the second create answers 409 duplicate_email, either way round', async () => {
    const a = spellings('a');
    okKey<UserFullJson>(await create(a.nfc), 'user');
    fails(await create(a.nfd), 409, 'duplicate_email');
    const b = spellings('b');
    okKey<UserFullJson>(await create(b.nfd), 'user');
    fails(await create(b.nfc), 409, 'duplicate_email');
    fails(await create(b.nfc.toUpperCase()), 409, 'duplicate_email');
  });

  test('an email given in NFD is stored and shown in NFC', async () => {
    const { nfc, nfd } = spellings('c');
    const user = okKey<UserFullJson>(await create(nfd), 'user');
    assert.equal(user.email, nfc);
    assert.equal(user.username, nfc);
  });

  test('an update to another User\'s address in the other spelling is refused', async () => {
    const { nfc, nfd } = spellings('d');
    await createUser(api, [app.id], { email: nfc });
    const other = await createUser(api, [app.id]);
    fails(await api.put(`/users/user/${other.id}`, { email: nfd }), 409, 'duplicate_email');
  });

  test('POST /authenticate with the NFD spelling finds the User stored in NFC', async () => {
    const { nfc, nfd } = spellings('e');
    const user = await createUser(api, [app.id], { email: nfc });
    const result = await authenticate(api, app.id, 'username', nfd, defaultUserPassword);
    assert.equal(result.authenticated, true);
    assert.equal(result.user?.id, user.id);
  });

  test('Basic credentials of an administrator work in the other spelling', async () => {
    const { nfc, nfd } = spellings('f');
    const password = 'admin-nfd-pass-7Q!';
    await createUser(api, [await baseApplicationId(api)], { email: nfc, password });
    ok(await server.api({ username: nfd, password }).get('/applications'));
    ok(await server.api({ username: nfc.toUpperCase(), password }).get('/applications'));
  });

  test('a search in either spelling finds the User', async () => {
    const { nfc, nfd } = spellings('g');
    const user = await createUser(api, [app.id], { email: nfd });
    for (const term of [nfc, nfd]) {
      const found = okKey<UserFullJson[]>(await api.get(`/users/search/${encodeURIComponent(term)}`), 'users');
      assert.deepEqual(found.map((u) => u.id), [user.id], JSON.stringify(term));
    }
  });
});

describe('characters that imitate ASCII', () => {
  test('the Kelvin sign is refused (400 naming email), and signs in as nobody', async () => {
    const local = unique('kate');
    const ascii = await createUser(api, [app.id], { email: `k${local}@example.com` });
    failsOnField(await create(`\u212a${local}@example.com`), 'email');
    failsOnField(await create(`\u212a${unique('kate')}@example.com`), 'email');
    failsOnField(await api.put(`/users/user/${ascii.id}`, { email: `\u212a${local}@example.com` }), 'email');
    assert.equal((await authenticate(api, app.id, 'username', `\u212a${local}@example.com`, defaultUserPassword)).authenticated, false,
      'the Kelvin spelling is not the ASCII account');
    assert.equal((await authenticate(api, app.id, 'username', `K${local}@example.com`, defaultUserPassword)).authenticated, true);
  });

  test('dotted capital I, dotless i and fullwidth letters are refused with 400 naming email', async () => {
    for (const email of [`\u0130${unique('x')}@example.com`, `I\u0307${unique('x')}@example.com`, `\u0131${unique('x')}@example.com`, `\uff41${unique('x')}@example.com`]) {
      failsOnField(await create(email), 'email');
    }
  });
});

describe('invisible and control characters', () => {
  test('zero-width, bidi and control characters are refused with 400 naming email, on create and on update', async () => {
    const user = await createUser(api, [app.id]);
    const refused = ['\u200b', '\u200c', '\u200d', '\u2060', '\ufeff', '\u202a', '\u202e', '\u2066', '\u2069', '\u200e', '\u200f', '\u061c', '\u0085', '\u00a0'];
    for (const ch of refused) {
      const inside = `ja${ch}ne-${unique('z')}@example.com`;
      const leading = `${ch}jane-${unique('z')}@example.com`;
      for (const email of [inside, leading]) {
        const error = failsOnField(await create(email), 'email');
        assert.ok(error.message.includes(`U+${ch.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`), error.message);
      }
      failsOnField(await api.put(`/users/user/${user.id}`, { email: inside }), 'email');
    }
  });

  test('ASCII spaces around an address are still trimmed', async () => {
    const email = `${unique('spaced')}@example.com`;
    const user = okKey<UserFullJson>(await create(`  ${email}\t`), 'user');
    assert.equal(user.email, email);
  });
});

describe('data written before the email rules', () => {
  test('two Users whose addresses now share a key both load; sign-in finds the older; a warning at start names them', async () => {
    const own = await startServer();
    try {
      const ownApi = own.api();
      const ownApp = await createApplication(ownApi);
      const { nfc, nfd } = spellings('legacy');
      const older = await createUser(ownApi, [ownApp.id], { email: nfc });
      assert.equal(await own.stop(), 0);

      // What an earlier version could write: the NFD spelling as a second User, with the same password.
      const { state, persistence } = await openPersistence({ dir: own.dirs.dataDir, createState: () => new State(), logger: new RecordingLogger() });
      const stored = state.user(older.id)!;
      const newerId = `${older.id.startsWith('N') ? 'M' : 'N'}${older.id.slice(1)}`;
      const newer = { ...stored, id: newerId, email: nfd, createdAt: state.lastAt + 1, modifiedAt: state.lastAt + 1 };
      await persistence.append({ seq: state.lastSeq + 1, at: state.lastAt + 1, ops: [{ op: 'put', kind: 'user', value: newer }] });
      await persistence.close();

      const again = await own.restart();
      try {
        const api2 = again.api();
        assert.equal(okKey<UserFullJson>(await api2.get(`/users/user/${older.id}`), 'user').email, nfc);
        assert.equal(okKey<UserFullJson>(await api2.get(`/users/user/${newerId}`), 'user').email, nfd, 'shown as stored');
        for (const spelling of [nfc, nfd]) {
          const result = await authenticate(api2, ownApp.id, 'username', spelling, defaultUserPassword);
          assert.equal(result.user?.id, older.id, `${JSON.stringify(spelling)} finds the older User`);
        }
        const warning = again.logLines().find((l) => typeof l['msg'] === 'string' && (l['msg'] as string).startsWith('Users sharing one email key'));
        assert.ok(warning !== undefined, 'a warning at start');
        assert.deepEqual(warning['userIds'], [[older.id, newerId]]);
        // Either may keep its address (in either spelling) on an update.
        ok(await api2.put(`/users/user/${newerId}`, { email: nfd, name: 'kept its email' }));
        ok(await api2.put(`/users/user/${older.id}`, { email: nfd }));
      } finally {
        await again.dispose();
      }
    } finally {
      await own.dispose();
    }
  });
});
