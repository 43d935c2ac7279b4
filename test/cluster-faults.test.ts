// Cluster correctness under faults (issue 43): a seeded Jepsen-style run on real nats-servers and authd nodes, its five invariants, and the checker itself on made-up histories.
//
// The run: three nats-servers (stream at R3), three nodes, clients racing creates for a small pool of emails in
// several spellings, name updates and a strong read on another node after each acknowledged write, while a NATS
// server and a node are paused or killed one at a time. FAULTS_SEED replays a seed; `npm run test:faults` is the
// long version. It starts the nodes through cluster-faults.ts, so test/run-suite.ts runs it on the first front end
// only: what it examines is the cluster, not the HTTP front end, and one run is enough of the suite's time.

import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, test } from 'node:test';
import { natsSkipReason, until } from './helpers/nats-cluster.js';
import { Observer } from './helpers/cluster-fault-clients.js';
import { formatRunReport, runFaultRun } from './helpers/cluster-faults.js';
import { formatSchedule, planFaults } from './helpers/cluster-fault-schedule.js';
import { checkHistory, formatViolation, History, type FinalStates, type Invariant, type Operation, type Outcome, type UserView } from './helpers/cluster-history.js';

// ---- the checker on histories written by hand ----

let nextId = 0;

function op(kind: Operation['kind'], fields: Partial<Operation> & { startMs: number; endMs: number; outcome: Outcome }): Operation {
  return { id: nextId++, client: 0, node: 0, kind, ...fields };
}

const ok = (id: string, email: string, name: string): Outcome => ({ type: 'ok', user: { id, email, name } });
const failed = (status: number, code: string): Outcome => ({ type: 'failed', status, code });
const unknown: Outcome = { type: 'indeterminate', why: 'no answer within 4000 ms' };

function states(...users: UserView[][]): FinalStates {
  return users.map((list) => new Map(list.map((u) => [u.id, u])));
}

function everywhere(...users: UserView[]): FinalStates {
  return states(users, users, users);
}

function invariantsBroken(operations: Operation[], finals: FinalStates): Invariant[] {
  return [...new Set(checkHistory(operations, finals).violations.map((v) => v.invariant))].sort();
}

describe('the fault run\'s checker', () => {
  const create = op('create', { email: 'Ann@Faults.Test', name: 'c0', startMs: 0, endMs: 10, outcome: ok('U1', 'Ann@Faults.Test', 'c0') });

  test('a history that keeps every promise breaks no invariant', () => {
    const update = op('update', { userId: 'U1', name: 'u1', startMs: 20, endMs: 30, outcome: ok('U1', 'Ann@Faults.Test', 'u1') });
    const read = op('read', { userId: 'U1', node: 1, startMs: 31, endMs: 35, outcome: ok('U1', 'Ann@Faults.Test', 'u1') });
    const refused = op('create', { email: 'ann@faults.test', name: 'c9', startMs: 5, endMs: 40, outcome: failed(409, 'conflict') });
    assert.deepEqual(checkHistory([create, update, read, refused], everywhere({ id: 'U1', email: 'Ann@Faults.Test', name: 'u1' })), { violations: [], staleRefusals: [] });
  });

  test('1: an acknowledged create missing on one node', () => {
    assert.deepEqual(invariantsBroken([create], states([{ id: 'U1', email: 'Ann@Faults.Test', name: 'c0' }], [], [{ id: 'U1', email: 'Ann@Faults.Test', name: 'c0' }])),
      ['acknowledged-create-present', 'nodes-agree']);
  });

  test('2: one email acknowledged twice, in another case and normal form, is one violation in the history and one per node', () => {
    const nfc = op('create', { email: 'jos\u00e9@faults.test', name: 'c1', startMs: 0, endMs: 10, outcome: ok('U2', 'jos\u00e9@faults.test', 'c1') });
    const nfd = op('create', { email: 'JOSE\u0301@faults.test', name: 'c2', node: 1, startMs: 1, endMs: 9, outcome: ok('U3', 'JOS\u00c9@faults.test', 'c2') });
    const result = checkHistory([nfc, nfd], everywhere({ id: 'U2', email: 'jos\u00e9@faults.test', name: 'c1' }, { id: 'U3', email: 'JOS\u00c9@faults.test', name: 'c2' }));
    assert.deepEqual(result.violations.map((v) => v.invariant), Array(4).fill('one-user-per-email'));
    assert.match(formatViolation(result.violations[0]!), /invariant 2 .*\n {4}op \d+ client 0 node 0 create email "jos\u00e9@faults.test"/);
  });

  test('3: an acknowledged update lost to one that ended before it began; a later indeterminate one may win', () => {
    const first = op('update', { userId: 'U1', name: 'u1', startMs: 20, endMs: 30, outcome: ok('U1', 'Ann@Faults.Test', 'u1') });
    const second = op('update', { userId: 'U1', name: 'u2', startMs: 40, endMs: 50, outcome: ok('U1', 'Ann@Faults.Test', 'u2') });
    const late = op('update', { userId: 'U1', name: 'u3', startMs: 15, endMs: Infinity, outcome: unknown });
    const refused = op('update', { userId: 'U1', name: 'u4', startMs: 60, endMs: 70, outcome: failed(400, 'invalid_field') });
    const holding = (name: string): FinalStates => everywhere({ id: 'U1', email: 'Ann@Faults.Test', name });
    assert.deepEqual(invariantsBroken([create, first, second, late, refused], holding('u1')), ['acknowledged-update-kept']);
    assert.deepEqual(invariantsBroken([create, first, second, late, refused], holding('c0')), ['acknowledged-update-kept']);
    assert.deepEqual(invariantsBroken([create, first, second, late, refused], holding('u4')), ['acknowledged-update-kept']);
    assert.deepEqual(invariantsBroken([create, first, second, late, refused], holding('u2')), []);
    assert.deepEqual(invariantsBroken([create, first, second, late, refused], holding('u3')), []);
  });

  test('4: a strong read older than a write acknowledged before it began; one overlapping a write may see either value', () => {
    const update = op('update', { userId: 'U1', name: 'u1', startMs: 20, endMs: 30, outcome: ok('U1', 'Ann@Faults.Test', 'u1') });
    const final = everywhere({ id: 'U1', email: 'Ann@Faults.Test', name: 'u1' });
    const missing = op('read', { userId: 'U1', node: 2, startMs: 11, endMs: 12, outcome: failed(404, 'not_found') });
    const old = op('read', { userId: 'U1', node: 2, startMs: 31, endMs: 32, outcome: ok('U1', 'Ann@Faults.Test', 'c0') });
    const overlapping = op('read', { userId: 'U1', node: 2, startMs: 25, endMs: 26, outcome: ok('U1', 'Ann@Faults.Test', 'c0') });
    const refusedRead = op('read', { userId: 'U1', node: 2, startMs: 31, endMs: 32, outcome: failed(503, 'storage_unavailable') });
    assert.deepEqual(invariantsBroken([create, update, missing], final), ['strong-read-fresh']);
    assert.deepEqual(invariantsBroken([create, update, old], final), ['strong-read-fresh']);
    assert.deepEqual(invariantsBroken([create, update, overlapping, refusedRead], final), []);
  });

  test('5: nodes that hold different names', () => {
    const update = op('update', { userId: 'U1', name: 'u1', startMs: 20, endMs: Infinity, outcome: unknown });
    const finals = states(...[['c0'], ['u1'], ['u1']].map(([name]) => [{ id: 'U1', email: 'Ann@Faults.Test', name: name! }]));
    assert.deepEqual(invariantsBroken([create, update], finals), ['nodes-agree']);
  });

  test('an update refused 404 after its User\'s create was acknowledged is counted as a stale refusal', () => {
    const stale = op('update', { userId: 'U1', name: 'u1', node: 2, startMs: 20, endMs: 21, outcome: failed(404, 'not_found') });
    const result = checkHistory([create, stale], everywhere({ id: 'U1', email: 'Ann@Faults.Test', name: 'c0' }));
    assert.deepEqual(result.violations, []);
    assert.deepEqual(result.staleRefusals.map((s) => s.operation), [stale]);
  });

  test('a seed gives the same schedule every time, printed with its seed', () => {
    assert.deepEqual(planFaults(7, 30_000, 4), planFaults(7, 30_000, 4));
    assert.notDeepEqual(planFaults(7, 30_000, 4), planFaults(8, 30_000, 4));
    assert.match(formatSchedule(planFaults(7, 30_000, 4)), /^seed 7\n {2}nats lane: \+\d+ ms (pause|kill) (leader|follower)/);
  });
});

// ---- the observer, on stand-ins for nodes ----

describe('the fault run\'s observer of readiness', () => {
  test('notes a node that answers ready while behind the others, and sums counters over a restart', async () => {
    // Three stand-ins answering /metrics and /health/ready as nodes do: 0 and 1 at sequence 500, 2 ready at 400.
    const seqs = [500, 500, 400];
    const servers = seqs.map((seq) => createServer((req, res) => {
      if (req.url === '/health/ready') return void res.writeHead(200).end('{"status":"ready"}');
      res.writeHead(200, { 'content-type': 'text/plain' }).end(`authd_log_last_seq ${seq}\nauthd_cluster_write_conflicts_total 7\n`);
    }));
    try {
      const ports = await Promise.all(servers.map((server) => new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)))));
      const processes = ports.map((port) => ({ port }));
      const observer = new Observer(new History(), 3, (node) => ({ baseUrl: `http://127.0.0.1:${ports[node]}`, process: processes[node] }), 50, 10);
      const observing = observer.run();
      await until(() => observer.samples >= 6, 10_000, 'two rounds of samples');
      // A restart: a new process whose counter starts again.
      processes[1] = { port: ports[1]! };
      const samples = observer.samples;
      await until(() => observer.samples >= samples + 6, 10_000, 'two more rounds');
      observer.stop();
      await observing;
      assert.deepEqual(observer.allEpisodes().map((e) => [e.node, e.maxLag]), [[2, 100]]);
      assert.deepEqual(observer.conflicts.map((c) => c.total), [7, 14, 7]);
    } finally {
      for (const server of servers) server.close();
    }
  });
});

// ---- the run ----

describe('a cluster under paused and killed NATS servers and nodes', { skip: natsSkipReason() }, () => {
  test('keeps the five invariants: acknowledged creates everywhere, one User per email, updates kept, strong reads fresh, nodes alike', async (t) => {
    const seed = Number(process.env['FAULTS_SEED'] ?? 4343);
    const report = await runFaultRun({ seed, durationMs: 20_000, clients: 6, log: (line) => t.diagnostic(line) });
    for (const line of formatRunReport(report).split('\n')) t.diagnostic(line);
    assert.ok(report.faults.length >= 2, 'faults happened');
    assert.ok(report.operations.some((o) => o.kind === 'create' && o.outcome.type === 'ok'), 'creates were acknowledged');
    assert.ok(report.operations.some((o) => o.kind === 'update' && o.outcome.type === 'ok'), 'updates were acknowledged');
    assert.deepEqual(report.problems, []);
    assert.deepEqual(report.check.violations.map(formatViolation), [], `seed ${seed}: ${formatRunReport(report)}`);
  });
});
