// GET /metrics: Prometheus text behind credentials; requests by route pattern and status, latency histograms, authentication outcomes, store and persistence figures.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { AuthError } from '../src/client/index.js';
import { baseApplicationId, createApikey, createApplication, createUser, defaultUserPassword, unknownId } from './helpers/http-fixtures.js';
import { fails } from './helpers/http-shapes.js';
import { startServer, type Api, type ServerProcess } from './helpers/server.js';

let server: ServerProcess;
let api: Api;

before(async () => {
  server = await startServer();
  api = server.api();
});

after(async () => {
  await server?.dispose();
});

/** `name{labels}` -> value, every sample line; checks the text format line by line on the way. */
function parseMetrics(text: string): Map<string, number> {
  const samples = new Map<string, number>();
  assert.ok(text.endsWith('\n'), 'the exposition ends with a newline');
  for (const line of text.slice(0, -1).split('\n')) {
    if (line.startsWith('# HELP ') || line.startsWith('# TYPE ')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*",?)*\})?) (-?[0-9.e+-]+|\+Inf|NaN)$/.exec(line);
    assert.ok(m !== null, `a sample line in the text format: ${line}`);
    assert.ok(!samples.has(m[1]!), `no sample twice: ${m[1]}`);
    samples.set(m[1]!, Number(m[2]));
  }
  return samples;
}

async function scrape(): Promise<Map<string, number>> {
  return parseMetrics(await api.client.metrics());
}

const get = (samples: Map<string, number>, key: string): number => samples.get(key) ?? 0;

test('needs the admin API\'s credentials and answers Prometheus text 0.0.4', async () => {
  fails(await api.get('/metrics', { credentials: null }), 401, 'unauthorized');
  const res = await api.get('/metrics');
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-type'), 'text/plain; version=0.0.4; charset=utf-8');
  assert.ok(res.json === undefined, 'not the JSON envelope');
  parseMetrics(res.text);
  await assert.rejects(api.client.as({ username: 'admin@example.com', password: 'wrong-pass-1' }).metrics(), (err: unknown) => err instanceof AuthError && err.status === 401);
});

test('requests are counted by method, route pattern (never the raw path) and status, with a latency histogram', async () => {
  const before = await scrape();
  const route = 'method="GET",route="/applications/application/:appid"';
  for (let i = 0; i < 3; i++) fails(await api.get(`/applications/application/${unknownId}`), 404, 'not_found');
  const app = await createApplication(api);
  await api.client.applications.get(app.id);
  fails(await api.get('/no/such/route'), 404, 'route_not_found');
  const after = await scrape();

  assert.equal(get(after, `authd_http_requests_total{${route},status="404"}`) - get(before, `authd_http_requests_total{${route},status="404"}`), 3);
  assert.equal(get(after, `authd_http_requests_total{${route},status="200"}`) - get(before, `authd_http_requests_total{${route},status="200"}`), 1);
  assert.equal(get(after, 'authd_http_requests_total{method="",route="(unmatched)",status="404"}') - get(before, 'authd_http_requests_total{method="",route="(unmatched)",status="404"}'), 1);
  for (const key of after.keys()) assert.ok(!key.includes(unknownId) && !key.includes(app.id), `no id in a label: ${key}`);

  const buckets = [...after.entries()].filter(([k]) => k.startsWith(`authd_http_request_duration_seconds_bucket{${route},`));
  assert.ok(buckets.length >= 2, 'buckets for the route');
  const values = buckets.map(([, v]) => v);
  for (let i = 1; i < values.length; i++) assert.ok(values[i]! >= values[i - 1]!, 'buckets are cumulative');
  const count = get(after, `authd_http_request_duration_seconds_count{${route}}`);
  assert.equal(get(after, `authd_http_request_duration_seconds_bucket{${route},le="+Inf"}`), count);
  assert.ok(count >= 4);
  assert.ok(get(after, `authd_http_request_duration_seconds_sum{${route}}`) > 0);
});

test('authentication outcomes: POST /authenticate by type and result, and the Basic checks of admin calls', async () => {
  const app = await createApplication(api);
  const user = await createUser(api, [app.id]);
  const key = await createApikey(api, user.id);
  const before = await scrape();
  const check = (type: 'username' | 'apikey', username: string, password: string): Promise<unknown> =>
    api.client.authenticate({ type, application: app.id, credential: { username, password } });
  await check('username', user.email, defaultUserPassword);
  await check('username', user.email, 'not-the-password');
  await check('apikey', key.id, key.secret);
  await check('apikey', key.id, 'x'.repeat(43));
  await check('apikey', key.id, 'y'.repeat(43));
  fails(await api.get('/applications', { credentials: { username: 'admin@example.com', password: 'not-it-at-all' } }), 401, 'unauthorized');
  const after = await scrape();
  const delta = (k: string): number => get(after, k) - get(before, k);
  assert.equal(delta('authd_authentications_total{type="username",result="success"}'), 1);
  assert.equal(delta('authd_authentications_total{type="username",result="failure"}'), 1);
  assert.equal(delta('authd_authentications_total{type="apikey",result="success"}'), 1);
  assert.equal(delta('authd_authentications_total{type="apikey",result="failure"}'), 2);
  assert.equal(delta('authd_caller_authentications_total{result="failure"}'), 1);
  // Every call above came with the admin's credentials: six successful checks plus the scrape's own.
  assert.ok(delta('authd_caller_authentications_total{result="success"}') >= 6);
});

test('a repeated authentication, recognised without a full check, is counted like the first, its caller\'s check too', async () => {
  const app = await createApplication(api);
  const user = await createUser(api, [app.id]);
  const key = await createApikey(api, user.id);
  const before = await scrape();
  for (let i = 0; i < 3; i++) {
    const answer = await api.client.authenticate({ type: 'apikey', application: app.id, credential: { username: key.id, password: key.secret } });
    assert.equal(answer.authenticated, true);
  }
  const after = await scrape();
  const delta = (k: string): number => get(after, k) - get(before, k);
  assert.equal(delta('authd_authentications_total{type="apikey",result="success"}'), 3);
  // Three calls and the second scrape, each with the admin's credentials.
  assert.equal(delta('authd_caller_authentications_total{result="success"}'), 4);
});

test('the verify cache: entries held and password checks it answered instead of argon2id', async () => {
  const app = await createApplication(api);
  const user = await createUser(api, [app.id]);
  const before = await scrape();
  for (let i = 0; i < 3; i++) {
    // A distinct ip_address each time, so the recognised-body memo cannot answer: the verify cache must.
    await api.client.authenticate({ type: 'username', application: app.id, credential: { username: user.email, password: defaultUserPassword }, ip_address: `198.51.100.${i + 20}` });
  }
  const after = await scrape();
  assert.ok(get(after, 'authd_verify_cache_entries') >= 1, 'the verification is remembered');
  assert.ok(get(after, 'authd_verify_cache_hits_total') - get(before, 'authd_verify_cache_hits_total') >= 2, 'the later checks are hits');
  for (const reason of ['idle', 'ttl']) assert.ok(after.has(`authd_verify_cache_expired_total{reason="${reason}"}`));
  assert.ok(after.has('authd_verify_cache_evicted_total'));
});

test('entity counts, hash queue, log and snapshot figures', async () => {
  await baseApplicationId(api);
  await createApplication(api);
  await api.client.admin.snapshot();
  const samples = await scrape();
  const counts = {
    applications: (await api.client.applications.list()).length, groups: (await api.client.groups.list()).length,
    organizations: (await api.client.organizations.list()).length, users: (await api.client.users.list()).length,
  };
  for (const [kind, n] of Object.entries(counts)) assert.equal(get(samples, `authd_entities{kind="${kind}"}`), n, `${kind} count`);
  assert.equal(get(samples, 'authd_hash_queue_depth'), 0, 'no hashing in flight between requests');
  assert.ok(get(samples, 'authd_hash_workers')! >= 1, 'at least one hash worker');
  assert.ok([0, 1].includes(get(samples, 'authd_search_index_building')!), 'the search index gauge is 0 or 1');
  assert.ok(get(samples, 'authd_wal_records_total') > 0);
  assert.ok(get(samples, 'authd_wal_fsyncs_total') > 0, 'FSYNC=always: every write was synced');
  assert.ok(samples.has('authd_wal_last_fsync_seconds'));
  assert.ok(get(samples, 'authd_log_last_seq') >= get(samples, 'authd_wal_records_total'));
  assert.ok(get(samples, 'authd_snapshots_total') >= 1);
  assert.ok(get(samples, 'authd_snapshot_last_duration_seconds') > 0);
  assert.ok(get(samples, 'authd_snapshot_last_bytes') > 0);
  assert.ok(get(samples, 'process_resident_memory_bytes') > 0);
});

/** The buckets of one histogram series (`labels` as in the exposition, '' for none), checked to be cumulative and to end at _count. */
function histogramOf(samples: Map<string, number>, name: string, labels: string): { le: string; n: number }[] {
  const prefix = labels === '' ? '' : `${labels},`;
  const rows = [...samples].filter(([key]) => key.startsWith(`${name}_bucket{${prefix}le="`)).map(([key, n]) => ({ le: /le="([^"]+)"/.exec(key)![1]!, n }));
  assert.ok(rows.length > 1, `${name}{${labels}} has buckets`);
  assert.equal(rows.at(-1)!.le, '+Inf');
  for (let i = 1; i < rows.length; i++) assert.ok(rows[i]!.n >= rows[i - 1]!.n, `${name} buckets are cumulative`);
  const braced = labels === '' ? '' : `{${labels}}`;
  assert.equal(rows.at(-1)!.n, get(samples, `${name}_count${braced}`), `${name}: +Inf equals _count`);
  assert.ok(samples.has(`${name}_sum${braced}`));
  return rows;
}

test('collection pauses by kind and the event-loop delay, as cumulative histograms that only grow', async () => {
  const first = await scrape();
  for (const kind of ['minor', 'major', 'incremental', 'weakcb']) histogramOf(first, 'nodejs_gc_duration_seconds', `kind="${kind}"`);
  const before = histogramOf(first, 'authd_event_loop_delay_seconds', '');
  // The delay is sampled every 10 ms whether or not anyone asks: a wait adds samples.
  await new Promise((resolve) => setTimeout(resolve, 300));
  const second = await scrape();
  const after = histogramOf(second, 'authd_event_loop_delay_seconds', '');
  assert.ok(after.at(-1)!.n > before.at(-1)!.n, 'samples were taken meanwhile');
  after.forEach((row, i) => assert.ok(row.n >= before[i]!.n, 'never reset by a scrape'));
  for (const kind of ['minor', 'major', 'incremental', 'weakcb']) {
    const key = `nodejs_gc_duration_seconds_count{kind="${kind}"}`;
    assert.ok(get(second, key) >= get(first, key), `${kind} collections only add up`);
  }
});
