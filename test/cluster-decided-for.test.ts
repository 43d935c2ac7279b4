// Issue 43: a write takes effect only at the sequence it was decided for, its writer answers only once its own message was applied there, and a refusal on state a node may not have seen yet is given only after catching up with the stream's leader.
//
// Two nodes (each a State, a Replica and a ClusterCommitter) on one stream held in memory, whose behaviour the test
// chooses: one that stores a message whatever its expected last sequence (as nats-server 2.9.10 did during leader
// changes), one that acknowledges a sequence another message took, one whose reader of a node lags until a barrier.
// The real seal, replica, committer and decide; only JetStream is stood in for.

import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import { ClusterCommitter, type StreamWriter } from '../src/cluster/cluster-committer.js';
import { RejectedMessages } from '../src/cluster/rejected.js';
import { Replica } from '../src/cluster/replica.js';
import { ClusterSeal, LogSeal, sealedMessageId } from '../src/cluster/seal.js';
import { WrongLastSequenceError } from '../src/cluster/stream-log.js';
import { clusterFatesKept } from '../src/config/limits.js';
import { DomainError } from '../src/domain/errors.js';
import { joined, type HttpRequest } from '../src/http/adapter.js';
import { createPipeline } from '../src/http/pipeline.js';
import { Renderer } from '../src/http/render.js';
import type { RouteDeps } from '../src/http/route.js';
import { routeTable } from '../src/http/routes/index.js';
import { encodeRecord } from '../src/persist/codec.js';
import { MicrosClock } from '../src/store/clock.js';
import * as decide from '../src/store/decide.js';
import { newApikeyId, newEntityId } from '../src/store/ids.js';
import { State } from '../src/store/state.js';

const quiet = { warn: (): void => undefined };
const identity = { newId: newEntityId, newApikeyId, newNonce: newEntityId };

interface Node {
  readonly state: State;
  readonly replica: Replica;
  readonly rejected: RejectedMessages;
  readonly committer: ClusterCommitter;
  /** Barriers this node asked for. */
  barriers: number;
}

/** A stream held in memory, read by every node's replica; how it misbehaves is the test's to set. */
class MemoryStream {
  readonly messages: Uint8Array[] = [];
  readonly nodes: Node[] = [];
  /** false: a message is stored whatever its expected last sequence. */
  honoursExpectation = true;
  /** Nodes whose reader gets nothing new until a barrier is published or its write meets another (a reader behind the others). */
  readonly lagging = new Set<Node>();
  /** Set for one publish: the message another node's publish put where this one's acknowledgement says it is. */
  overtaken: Uint8Array | undefined;
  /** The next publish is stored, but its writer hears a refusal (an acknowledgement lost, its retry refused). */
  loseAck = false;
  readonly log = new LogSeal(new ClusterSeal(randomBytes(32)), 'authd', 'authd.log');

  node(): Node {
    const state = new State();
    const rejected = new RejectedMessages(quiet);
    const replica = new Replica(state, this.log, rejected);
    // Every node starts from the same bootstrap, as from one snapshot.
    for (let seq = 1; seq <= this.messages.length; seq++) replica.receive(seq, this.messages[seq - 1]!);
    const node: Node = { state, replica, rejected, committer: undefined as unknown as ClusterCommitter, barriers: 0 };
    (node as { committer: ClusterCommitter }).committer = new ClusterCommitter(state, replica, this.writer(node), new MicrosClock(), identity);
    this.nodes.push(node);
    return node;
  }

  /** Appends a message as a first node's bootstrap would, before any node reads. */
  seed(frames: Uint8Array[]): void {
    this.messages.push(this.log.close(frames));
  }

  private writer(node: Node): StreamWriter {
    return {
      maxPayloadBytes: 1 << 20,
      seal: (frames) => {
        const payload = this.log.close(frames);
        return { payload, id: sealedMessageId(payload) };
      },
      publish: async (message, expectedLastSeq) => {
        const sealed = message.payload;
        if (this.honoursExpectation && this.messages.length !== expectedLastSeq) {
          // The writer waits for its reader to get there: a reader behind catches up meanwhile.
          this.deliver(true);
          throw new WrongLastSequenceError(expectedLastSeq, this.messages.length);
        }
        const overtaken = this.overtaken;
        this.overtaken = undefined;
        this.messages.push(overtaken ?? sealed);
        this.deliver(false);
        if (this.loseAck) {
          this.loseAck = false;
          throw new WrongLastSequenceError(expectedLastSeq, this.messages.length);
        }
        return this.messages.length;
      },
      barrier: async () => {
        node.barriers++;
        this.messages.push(this.log.close([]));
        this.deliver(true);
        return this.messages.length;
      },
    };
  }

  /** Every message a node's reader has not had yet, in order, on the next turn (as a consumer would). */
  private deliver(barrier: boolean): void {
    queueMicrotask(() => {
      for (const node of this.nodes) {
        if (this.lagging.has(node) && !barrier) continue;
        if (barrier) this.lagging.delete(node);
        for (let seq = node.state.lastSeq + 1; seq <= this.messages.length; seq++) node.replica.receive(seq, this.messages[seq - 1]!);
      }
    });
  }
}

/** A stream holding the bootstrap (the base Application, the admin) and an Application of end users. */
function bootstrapped(): { stream: MemoryStream; app: string } {
  const stream = new MemoryStream();
  const scratch = new State();
  let at = 1_000_000;
  const ctx = () => ({ now: (at += 1000), ...identity });
  const put = (decision: { ops: readonly unknown[] }): void => {
    const record = { seq: scratch.lastSeq + 1, at, ops: decision.ops } as Parameters<State['apply']>[0];
    scratch.apply(record);
    stream.seed([encodeRecord(record)]);
  };
  put(decide.bootstrap(scratch, { email: 'admin@example.com', passwordHash: 'admin-hash' }, ctx()));
  const created = decide.createApplication(scratch, { name: 'end users' }, ctx());
  put(created);
  return { stream, app: created.result.id };
}

const usersWithEmail = (state: State, email: string): number => [...state.allUsers()].filter((u) => u.email === email).length;

describe('issue 43: one answer per write, whatever the stream lets through', () => {
  test('two nodes create one email at once and the stream stores both: one is acknowledged, the other is void and answered 409', async () => {
    const { stream, app } = bootstrapped();
    stream.honoursExpectation = false;
    const [a, b] = [stream.node(), stream.node()];
    const create = (node: Node, email: string): Promise<unknown> => node.committer.commit((s, ctx) => decide.createUser(s, { email, passwordHash: 'h', applications: [app] }, ctx));
    // Decided against the same state on both nodes, in one turn: both messages go to the stream.
    const outcomes = await Promise.allSettled([create(a, 'same@example.com'), create(b, 'Same@example.com')]);
    assert.deepEqual(outcomes.map((o) => o.status).sort(), ['fulfilled', 'rejected']);
    const refusal = outcomes.find((o) => o.status === 'rejected') as PromiseRejectedResult;
    assert.ok(refusal.reason instanceof DomainError && refusal.reason.code === 'duplicate_email', String(refusal.reason));
    for (const node of [a, b]) {
      assert.equal(usersWithEmail(node.state, 'same@example.com'), 1, 'one User for the email on every node');
      assert.equal(node.rejected.counts.void, 1, 'the second message is void on every node');
    }
    assert.equal(a.state.lastSeq, b.state.lastSeq);
  });

  test('an acknowledgement for a sequence where the reader holds another message is answered 503, never decided again', async () => {
    const { stream, app } = bootstrapped();
    const [a, b] = [stream.node(), stream.node()];
    // Node a's create, sealed as a's committer would, takes the place node b's acknowledgement names.
    const scratch = new State();
    for (let seq = 1; seq <= stream.messages.length; seq++) new Replica(scratch, stream.log, new RejectedMessages(quiet)).receive(seq, stream.messages[seq - 1]!);
    const theirs = decide.createUser(scratch, { email: 'taken@example.com', passwordHash: 'h', applications: [app] }, { now: 9_000_000, ...identity });
    stream.overtaken = stream.log.close([encodeRecord({ seq: stream.messages.length + 1, at: 9_000_000, ops: theirs.ops })]);
    // The leader says it stored b's message there; b's reader holds a's: a replica diverged, and b's may have taken
    // effect where the leader's history is read. Deciding again could make it twice; the answer is indeterminate.
    await assert.rejects(b.committer.commit((s, ctx) => decide.createUser(s, { email: 'taken@example.com', passwordHash: 'h', applications: [app] }, ctx)),
      (err: unknown) => err instanceof DomainError && err.code === 'storage_unavailable');
    assert.equal(b.committer.conflicts, 0);
    await new Promise((resolve) => setImmediate(resolve));
    for (const node of [a, b]) assert.equal(usersWithEmail(node.state, 'taken@example.com'), 1);
  });

  test('a write stored though its writer heard a refusal is answered from its stored message, not decided again', async () => {
    const { stream, app } = bootstrapped();
    const [a, b] = [stream.node(), stream.node()];
    stream.loseAck = true;
    const user = await a.committer.commit((s, ctx) => decide.createUser(s, { email: 'once@example.com', passwordHash: 'h', applications: [app] }, ctx));
    assert.equal(user.email, 'once@example.com');
    await new Promise((resolve) => setImmediate(resolve));
    for (const node of [a, b]) {
      assert.equal(usersWithEmail(node.state, 'once@example.com'), 1);
      assert.equal(node.state.user(user.id)?.email, 'once@example.com');
    }
  });

  test('a 404 and a 409 decided on a node behind the others are decided again once it has caught up with the leader', async () => {
    const { stream, app } = bootstrapped();
    const [a, b] = [stream.node(), stream.node()];
    stream.lagging.add(b);
    const user = await a.committer.commit((s, ctx) => decide.createUser(s, { email: 'new@example.com', passwordHash: 'h', applications: [app] }, ctx));
    assert.equal(b.state.user(user.id), undefined, 'node b has not seen the create');
    // An update of the User node b has not seen: caught up, it finds it.
    const renamed = await b.committer.commit((s, ctx) => decide.updateUser(s, user.id, { name: 'renamed on b' }, ctx));
    assert.equal(renamed.name, 'renamed on b');
    assert.equal(b.barriers, 1);
    // A refusal that stands after catching up is given, once.
    stream.lagging.add(b);
    await a.committer.commit((s, ctx) => decide.createUser(s, { email: 'second@example.com', passwordHash: 'h', applications: [app] }, ctx));
    await assert.rejects(b.committer.commit((s, ctx) => decide.createUser(s, { email: 'second@example.com', passwordHash: 'h', applications: [app] }, ctx)),
      (err: unknown) => err instanceof DomainError && err.code === 'duplicate_email');
    assert.equal(b.barriers, 2);
  });
});

describe('issue 43: what a node remembers of the messages it applied', () => {
  test('each message\'s fate by its id: applied, void, a barrier, rejected, another message, or forgotten', () => {
    const log = new LogSeal(new ClusterSeal(randomBytes(32)), 'authd', 'authd.log');
    const replica = new Replica(new State(), log, new RejectedMessages(quiet));
    const ours = log.close([encodeRecord({ seq: 1, at: 1, ops: [] })]);
    const misplaced = log.close([encodeRecord({ seq: 1, at: 1, ops: [] })]);
    const barrier = log.close([]);
    const forged = Buffer.concat([sealedMessageId(ours), randomBytes(40)]);
    for (const [seq, data] of [ours, misplaced, barrier, forged].entries()) replica.receive(seq + 1, data);
    assert.equal(replica.fateOf(1, sealedMessageId(ours)), 'applied');
    assert.equal(replica.fateOf(2, sealedMessageId(misplaced)), 'void');
    assert.equal(replica.fateOf(3, sealedMessageId(barrier)), 'barrier');
    assert.equal(replica.fateOf(4, sealedMessageId(ours)), 'rejected', 'a forgery that copies an id is not taken for the message');
    assert.equal(replica.fateOf(2, sealedMessageId(ours)), 'other');
    assert.equal(replica.fateOf(5, sealedMessageId(ours)), 'unknown', 'not applied yet');
    for (let seq = 5; seq <= clusterFatesKept + 1; seq++) replica.receive(seq, log.close([]));
    assert.equal(replica.fateOf(1, sealedMessageId(ours)), 'unknown', 'too old to remember');
  });
});

describe('issue 43: a 404 in cluster mode', () => {
  /** A pipeline over a state that lacks a User another node made, and a strongRead that applies it (or cannot). */
  type Send = (path: string, method?: string, body?: unknown) => Promise<{ status: number; headers: readonly (readonly [string, string])[]; body: string }>;
  function behind(catchUp: 'works' | 'fails'): { get: Send; id: string } {
    const { stream, app } = bootstrapped();
    const node = stream.node();
    const other = new State();
    for (let seq = 1; seq <= stream.messages.length; seq++) new Replica(other, stream.log, new RejectedMessages(quiet)).receive(seq, stream.messages[seq - 1]!);
    const made = decide.createUser(other, { email: 'elsewhere@example.com', passwordHash: 'h', applications: [app] }, { now: 9_000_000, ...identity });
    // Another node's write, in the stream but not yet applied here.
    const missing = stream.log.close([encodeRecord({ seq: stream.messages.length + 1, at: 9_000_000, ops: made.ops })]);
    stream.messages.push(missing);
    const at = stream.messages.length;
    const admin = [...node.state.allUsers()][0]!;
    const handle = createPipeline(routeTable, {
      realm: 'authd',
      routeDeps: { state: node.state, committer: node.committer, renderer: new Renderer('http://localhost', node.state), readiness: () => 'ready' } as unknown as RouteDeps,
      caller: () => ({ user: admin }),
      onUnexpected: (err) => { throw err; },
      strongRead: () => {
        if (catchUp === 'fails') return Promise.reject(new DomainError('storage_unavailable'));
        if (node.state.lastSeq < at) node.replica.receive(at, missing);
        return Promise.resolve();
      },
    });
    const get: Send = async (path, method = 'GET', body) => {
      const reply = await handle({
        method, path, query: '', authorization: 'Basic YTpi', contentType: body === undefined ? '' : 'application/json', remoteAddress: '127.0.0.1',
        body: body === undefined ? Buffer.alloc(0) : Buffer.from(JSON.stringify(body)), startedAt: performance.now(), aborted: false,
      } as unknown as HttpRequest);
      return { status: reply.status, headers: reply.headers ?? [], body: joined(reply.body ?? '') };
    };
    return { get, id: made.result.id };
  }

  test('is given only once the node has caught up: a User made on another node is found', async () => {
    const { get, id } = behind('works');
    assert.equal((await get(`/users/user/${id}`)).status, 200);
    assert.equal((await get('/users/user/nosuchuser0000000000000')).status, 404);
  });

  test('an update of a User made on another node, refused by the handler\'s own look-up, is made once caught up', async () => {
    const { get, id } = behind('works');
    const reply = await get(`/users/user/${id}`, 'PUT', { name: 'renamed behind' });
    assert.equal(reply.status, 200, reply.body);
    assert.match(reply.body, /renamed behind/);
  });

  test('says it may be stale when the node cannot catch up', async () => {
    const { get, id } = behind('fails');
    const reply = await get(`/users/user/${id}`);
    assert.equal(reply.status, 404);
    assert.ok(reply.headers.some(([k, v]) => k.toLowerCase() === 'x-consistency' && v === 'stale'), JSON.stringify(reply.headers));
  });
});
