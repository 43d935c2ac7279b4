// Issue 42, finding 5 (third bullet): permission rules that depend on state are checked again where the change is decided, not only before an await; deterministic, with a hash held back by the test and a cluster conflict made by it.

import { randomBytes } from 'node:crypto';
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { HashPool } from '../src/auth/hash-pool.js';
import { ClusterCommitter, type StreamWriter } from '../src/cluster/cluster-committer.js';
import type { Replica } from '../src/cluster/replica.js';
import { WrongLastSequenceError } from '../src/cluster/stream-log.js';
import type { HttpRequest } from '../src/http/adapter.js';
import { createPipeline } from '../src/http/pipeline.js';
import { Renderer } from '../src/http/render.js';
import type { RouteDeps } from '../src/http/route.js';
import { routeTable } from '../src/http/routes/index.js';
import { MicrosClock } from '../src/store/clock.js';
import * as decide from '../src/store/decide.js';
import { newApikeyId, newEntityId } from '../src/store/ids.js';
import { errorCodeOf, InProcessApp, resultOf } from './helpers/fault-app.js';
import { PowerLossStorage } from './helpers/fault-storage.js';
import { StateHarness } from './helpers/state-harness.js';

const argon2 = { memoryKiB: 1024, iterations: 1, parallelism: 1 };

/** A real pool whose hash of a chosen password is held back until the test lets it go: a request waits there, between its guard and its commit. */
class HeldPool extends HashPool {
  private readonly held = new Map<string, { reached: () => void; released: Promise<void> }>();

  /** `reached` settles once a request asks for this password's hash; the hash is answered only after `release()`. */
  holdHash(password: string): { reached: Promise<void>; release: () => void } {
    let reached!: () => void;
    let release!: () => void;
    const reachedP = new Promise<void>((r) => { reached = r; });
    const released = new Promise<void>((r) => { release = r; });
    this.held.set(password, { reached, released });
    return { reached: reachedP, release };
  }

  override async hashPassword(password: string): Promise<string> {
    const gate = this.held.get(password);
    gate?.reached();
    const hash = await super.hashPassword(password);
    if (gate !== undefined) await gate.released;
    return hash;
  }
}

describe('in-process, a request held at its password hash', () => {
  let pool: HeldPool;
  let app: InProcessApp;
  let base: string;
  let endApp: string;
  let users = 0;

  before(async () => {
    pool = new HeldPool({ workers: 1, queueMax: 64, argon2 });
    const storage = new PowerLossStorage();
    await storage.mkdirp('/decide-again');
    app = await InProcessApp.open({ storage, dir: '/decide-again', pool, argon2 });
    base = app.state.meta!.baseApplication;
    endApp = resultOf<{ application: { id: string } }>(await app.post('/applications/application', { name: 'end users' })).application.id;
  });

  after(async () => {
    await app.close();
    await pool.close();
  });

  async function user(applications: string[], extra: Record<string, unknown> = {}): Promise<{ id: string; auth: { username: string; password: string } }> {
    const auth = { username: `held-${++users}@example.com`, password: `held-pass-${users}` };
    const id = resultOf<{ user: { id: string } }>(await app.post('/users/user', { email: auth.username, password: auth.password, applications, ...extra })).user.id;
    return { id, auth };
  }

  async function passes(auth: { username: string; password: string }, application: string): Promise<boolean> {
    const res = resultOf<{ authenticated: boolean }>(await app.post('/authenticate', { type: 'username', application, credential: auth }));
    return res.authenticated;
  }

  test('issue 42: a manager\'s password change that races an admin\'s promotion of its target does not land on a base User', async () => {
    const manager = await user([base], { roles: ['manager'] });
    const target = await user([endApp]);
    const { reached, release } = pool.holdHash('manager-racing-1');
    const racing = app.put(`/users/user/${target.id}`, { password: 'manager-racing-1' }, { auth: manager.auth });
    await reached;
    // Between the manager's guard and its commit, an admin adds the target to the base Application.
    resultOf(await app.put(`/users/user/${target.id}`, { applications: [base], password: 'admin-chose-1' }));
    release();
    const res = await racing;
    assert.equal(res.status, 403, res.body);
    assert.equal(errorCodeOf(res), 'forbidden');
    assert.equal(await passes({ username: target.auth.username, password: 'admin-chose-1' }, base), true, 'the admin\'s password stands');
    assert.equal(await passes({ username: target.auth.username, password: 'manager-racing-1' }, base), false);
  });

  const callerChanges: Array<{ what: string; status: number; code: string; change: (caller: { id: string; keyId?: string }) => Promise<unknown>; byKey?: boolean }> = [
    { what: 'demoted to auditor', status: 403, code: 'forbidden', change: (c) => app.put(`/users/user/${c.id}`, { roles: ['auditor'] }) },
    { what: 'disabled', status: 401, code: 'unauthorized', change: (c) => app.put(`/users/user/${c.id}`, { status: 'DISABLED' }) },
    { what: 'removed from the base Application', status: 401, code: 'unauthorized', change: (c) => app.delete(`/users/user/${c.id}/application/${base}`) },
    { what: 'given a new password', status: 401, code: 'unauthorized', change: (c) => app.put(`/users/user/${c.id}`, { password: 'admin-replaced-it' }) },
    { what: 'with its API Key disabled', status: 401, code: 'unauthorized', byKey: true, change: (c) => app.put(`/users/user/${c.id}/apikey/${c.keyId!}`, { status: 'DISABLED' }) },
  ];
  for (const { what, status, code, change, byKey } of callerChanges) {
    test(`issue 42: a manager ${what} while its request awaited a hash changes nothing (${status} ${code})`, async () => {
      const manager = await user([base, endApp], { roles: ['manager'] });
      const key = byKey === true ? resultOf<{ apikey: { id: string; secret: string } }>(await app.post(`/users/user/${manager.id}/apikey`, {})).apikey : undefined;
      const auth = key === undefined ? manager.auth : { username: key.id, password: key.secret };
      const target = await user([endApp]);
      const password = `racing-${what.length}-${status}`;
      const { reached, release } = pool.holdHash(password);
      const racing = app.put(`/users/user/${target.id}`, { password }, { auth });
      await reached;
      const changed = (await change({ id: manager.id, keyId: key?.id })) as { status: number; body: string };
      assert.equal(changed.status, 200, changed.body);
      release();
      const res = await racing;
      assert.equal(res.status, status, res.body);
      assert.equal(errorCodeOf(res), code);
      assert.equal(await passes(target.auth, endApp), true, 'the target keeps its password');
      assert.equal(await passes({ username: target.auth.username, password }, endApp), false);
    });
  }
});

describe('cluster mode, a change decided again after another node wrote first', () => {
  /** The node's state, a manager, an end user, and a pipeline over a ClusterCommitter whose first publish meets another node's write. */
  function cluster(otherNode: (h: StateHarness, ids: { manager: string; target: string; base: string }) => void): {
    send: (path: string, body: unknown) => Promise<number>; publishes: () => number; h: StateHarness; target: string;
  } {
    const h = new StateHarness();
    h.commit((s, ctx) => decide.bootstrap(s, { email: 'admin@example.com', passwordHash: 'admin-hash' }, ctx));
    const base = h.state.meta!.baseApplication;
    const appId = h.commit((s, ctx) => decide.createApplication(s, { name: 'cluster end users' }, ctx)).id;
    const manager = h.commit((s, ctx) => decide.createUser(s, { email: 'm@example.com', passwordHash: 'm-hash', applications: [base], roles: ['manager'] }, ctx)).id;
    const target = h.commit((s, ctx) => decide.createUser(s, { email: 't@example.com', passwordHash: 't-hash', applications: [appId] }, ctx)).id;
    let publishes = 0;
    let stored: Uint8Array | undefined;
    const stream: StreamWriter = {
      maxPayloadBytes: 1 << 20,
      seal: () => ({ payload: new Uint8Array(0), id: randomBytes(12) }),
      publish: (message, expectedLastSeq) => {
        publishes++;
        if (publishes > 1) {
          stored = message.id;
          return Promise.resolve(expectedLastSeq + 1);
        }
        // Another node's record got to the stream first; this node has applied it by the time it asks.
        otherNode(h, { manager, target, base });
        return Promise.reject(new WrongLastSequenceError(expectedLastSeq, h.state.lastSeq));
      },
      barrier: () => Promise.resolve(h.state.lastSeq),
    };
    // The second publish is the one stored; the first, refused, never is.
    const replica = { applied: () => Promise.resolve(), fateOf: (_seq: number, id: Uint8Array) => (id === stored ? 'applied' : 'other') } as unknown as Replica;
    const committer = new ClusterCommitter(h.state, replica, stream, new MicrosClock(), { newId: newEntityId, newApikeyId, newNonce: newEntityId });
    const handle = createPipeline(routeTable, {
      realm: 'authd',
      routeDeps: { state: h.state, committer, renderer: new Renderer('http://localhost', h.state), readiness: () => 'ready' } as unknown as RouteDeps,
      // The manager's credentials passed: the caller check answers its User as the state has it now.
      caller: () => ({ user: h.state.user(manager)! }),
      onUnexpected: (err) => { throw err; },
    });
    const send = async (path: string, body: unknown): Promise<number> => {
      const req = {
        method: 'PUT', path, query: '', authorization: 'Basic bTpw', contentType: 'application/json', remoteAddress: '127.0.0.1',
        body: Buffer.from(JSON.stringify(body)), startedAt: performance.now(), aborted: false,
      } as HttpRequest;
      return (await handle(req)).status;
    };
    return { send, publishes: () => publishes, h, target };
  }

  test('issue 42: a manager\'s change decided again after the target joined the base Application on another node is refused', async () => {
    const c = cluster((h, ids) => h.commit((s, ctx) => decide.updateUser(s, ids.target, { applications: [ids.base], passwordHash: 'admin-hash-2' }, ctx)));
    assert.equal(await c.send(`/users/user/${c.target}`, { name: 'renamed by a manager' }), 403);
    assert.equal(c.publishes(), 1, 'nothing was published after the conflict');
    assert.equal(c.h.state.user(c.target)!.name, '');
  });

  test('issue 42: a manager demoted on another node is refused when its change is decided again', async () => {
    const c = cluster((h, ids) => h.commit((s, ctx) => decide.updateUser(s, ids.manager, { roles: ['auditor'] }, ctx)));
    assert.equal(await c.send(`/users/user/${c.target}`, { name: 'renamed by a demoted manager' }), 403);
    assert.equal(c.publishes(), 1);
  });
});
