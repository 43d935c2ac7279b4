// The smoke run (`node dist/test/smoke.js`, run by .ci/run on a Node without the full suite): one server taken through start, a write of each kind, authentication, a clean stop, a crash and two restarts.
//
// Prints one line per step; exits 0 when every step passed, 1 with the failed step, its reason and the tail of the
// server's output otherwise. It runs the built server with the node running this script (test/helpers/server.ts
// spawns process.execPath), so `PATH=<node>/bin:$PATH node dist/test/smoke.js` checks that Node.

import assert from 'node:assert/strict';
import { AuthError, type ApiKey, type Application, type Group, type Organization, type User } from '../src/client/index.js';
import { startServer, type Api, type ServerProcess } from './helpers/server.js';

/** The whole run normally takes a few seconds; past this it is hung. Under .ci/run's limit for the step, so this message comes first. */
const smokeDurationMaxMs = 90_000;
/** How much of the server's output a failure shows. */
const failureOutputLinesMax = 40;

const userPassword = 'smoke-pass-7Hq!2x';
/** Fixed, so that hrefs do not change with the ephemeral port of each restart. */
const publicUrl = 'https://authd.smoke.test';
/** Fields every log line of the server has: left out when one is shown. */
const pinoBaseFields = new Set(['level', 'time', 'pid', 'hostname', 'service', 'msg']);

const runStarted = performance.now();
let server: ServerProcess | undefined;
let stepCount = 0;

class StepFailure extends Error {}

/** Runs one step and prints it with its duration; a failure names the step. */
async function step<T>(what: string, run: () => Promise<T>): Promise<T> {
  stepCount += 1;
  const started = performance.now();
  try {
    const value = await run();
    console.log(`ok ${stepCount} ${what} (${Math.round(performance.now() - started)} ms)`);
    return value;
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    throw new StepFailure(`step ${stepCount} "${what}" failed: ${why}`);
  }
}

/** The server's "front end" start line, as `name=value` pairs, or a sentence saying it logged none. */
function frontEndReport(s: ServerProcess): string {
  const lines = s.logLines();
  const line = lines.find((l) => l['msg'] === 'front end');
  if (line === undefined) {
    const fallback = lines.some((l) => typeof l['msg'] === 'string' && l['msg'].includes('pure-JS'));
    return `not reported (no "front end" log line${fallback ? '; the server warned of the pure-JS uWebSockets.js fallback' : ''})`;
  }
  const fields = Object.entries(line).filter(([k]) => !pinoBaseFields.has(k));
  return fields.map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`).join(' ');
}

async function start(previous?: ServerProcess): Promise<{ s: ServerProcess; api: Api }> {
  const s = previous === undefined ? await startServer({ env: { PUBLIC_URL: publicUrl } }) : await previous.restart();
  server = s;
  return { s, api: s.api() };
}

async function stopCleanly(s: ServerProcess): Promise<void> {
  const code = await s.stop();
  assert.equal(code, 0, `exit code ${code} after SIGTERM`);
  assert.ok(s.logLines().some((l) => l['msg'] === 'stopped cleanly'), 'no "stopped cleanly" log line');
}

async function expectAuthenticated(api: Api, application: string, type: 'username' | 'apikey', username: string, password: string, userId: string): Promise<void> {
  const result = await api.client.authenticate({ type, application, credential: { username, password } });
  assert.equal(result.authenticated, true, `${type} authentication refused`);
  assert.equal(result.user?.id, userId, `${type} authentication answered another User`);
}

/** Everything the smoke run wrote, as read back with GET. */
interface Entities { organization: Organization; application: Application; group: Group; user: User; apikey: ApiKey }

async function readBack(api: Api, ids: { [K in keyof Entities]: string }): Promise<Entities> {
  const c = api.client;
  return {
    organization: await c.organizations.get(ids.organization),
    application: await c.applications.get(ids.application),
    group: await c.groups.get(ids.group),
    user: await c.users.get(ids.user),
    apikey: await c.apikeys.get(ids.user, ids.apikey),
  };
}

async function expectGone(call: Promise<unknown>, what: string): Promise<void> {
  try {
    await call;
  } catch (err) {
    if (err instanceof AuthError && err.status === 404) return;
    throw err;
  }
  assert.fail(`${what} is still there`);
}

async function smoke(): Promise<void> {
  console.log(`smoke: node ${process.version} (${process.execPath}), ${process.platform}-${process.arch}`);

  let { s, api } = await step('start a server on fresh directories', () => start());
  console.log(`  front end: ${frontEndReport(s)}`);
  await step('GET /health', async () => assert.deepEqual(await api.client.health(), { status: 'ok' }));

  const c = api.client;
  const organization = await step('create an Organization', () => c.organizations.create({ name: 'Smoke Org', description: 'smoke run' }));
  const application = await step('create an Application', () => c.applications.create({ name: 'smoke-app', description: 'smoke run' }));
  const group = await step('create a Group in it', () => c.groups.create({ name: 'smoke-group', application: application.id, custom_data: { tier_depth: 1 } }));
  const user = await step('create a User with a password, in the Organization, Application and Group', () => c.users.create({
    email: 'smoke-user@example.com', password: userPassword, name: 'Smoke User',
    organization: organization.id, applications: [application.id], groups: [group.id],
  }));
  const apikey = await step('create an API Key for the User', () => c.apikeys.create(user.id, { name: 'smoke-key' }));
  await step('update the Application (PUT)', async () => {
    const updated = await c.applications.update(application.id, { description: 'smoke run, updated', custom_data: { plan: 'smoke' } });
    assert.equal(updated.description, 'smoke run, updated');
  });
  const doomed = await step('create, disable and delete a second Group (DELETE)', async () => {
    const g = await c.groups.create({ name: 'smoke-doomed', application: application.id });
    await c.groups.update(g.id, { status: 'DISABLED' });
    await c.groups.delete(g.id);
    await expectGone(c.groups.get(g.id), 'the deleted Group');
    return g;
  });
  await step('authenticate with the password and with the API Key', async () => {
    await expectAuthenticated(api, application.id, 'username', user.email, userPassword, user.id);
    await expectAuthenticated(api, application.id, 'apikey', apikey.id, apikey.secret, user.id);
    const wrong = await c.authenticate({ type: 'username', application: application.id, credential: { username: user.email, password: `${userPassword}-wrong` } });
    assert.equal(wrong.authenticated, false, 'a wrong password authenticated');
  });

  const ids = { organization: organization.id, application: application.id, group: group.id, user: user.id, apikey: apikey.id };
  const written = await step('read every entity back', async () => {
    const read = await readBack(api, ids);
    assert.equal(read.application.description, 'smoke run, updated');
    assert.deepEqual(read.user.groups.map((g) => g.id), [group.id]);
    return read;
  });

  await step('stop (SIGTERM): exit code 0, "stopped cleanly"', () => stopCleanly(s));
  ({ s, api } = await step('restart on the same directories', () => start(s)));
  await step('every entity reads back the same after the restart', async () => {
    assert.deepEqual(await readBack(api, ids), written);
    await expectGone(api.client.groups.get(doomed.id), 'the deleted Group');
  });
  await step('authenticate again with the password and with the API Key', async () => {
    await expectAuthenticated(api, application.id, 'username', user.email, userPassword, user.id);
    await expectAuthenticated(api, application.id, 'apikey', apikey.id, apikey.secret, user.id);
  });

  const renamed = await step('update the User (PUT), then kill -9 once it is acknowledged', async () => {
    const u = await api.client.users.update(user.id, { name: 'Smoke User, renamed' });
    assert.equal(u.name, 'Smoke User, renamed');
    await s.kill();
    return u;
  });
  ({ s, api } = await step('restart after the crash', () => start(s)));
  await step('the last acknowledged write is there, the rest unchanged', async () => {
    const after = await readBack(api, ids);
    assert.equal(after.user.name, renamed.name);
    assert.equal(after.user.modified_at, renamed.modified_at);
    assert.deepEqual({ ...after, user: undefined }, { ...written, user: undefined });
    await expectAuthenticated(api, application.id, 'username', user.email, userPassword, user.id);
  });
  await step('stop (SIGTERM)', () => stopCleanly(s));
  await s.dispose();
  server = undefined;
}

const watchdog = setTimeout(() => {
  console.error(`smoke: FAILED: not done within ${smokeDurationMaxMs} ms (hung at step ${stepCount + 1})`);
  if (server !== undefined) console.error(tail(server.output()));
  process.exit(1);
}, smokeDurationMaxMs);

function tail(text: string): string {
  const lines = text.trimEnd().split('\n');
  return `--- last ${Math.min(lines.length, failureOutputLinesMax)} lines of the server's output ---\n${lines.slice(-failureOutputLinesMax).join('\n')}`;
}

try {
  await smoke();
  clearTimeout(watchdog);
  console.log(`smoke: passed, ${stepCount} steps in ${((performance.now() - runStarted) / 1000).toFixed(1)} s on node ${process.version}`);
  process.exit(0);
} catch (err) {
  clearTimeout(watchdog);
  console.error(`smoke: FAILED on node ${process.version}: ${err instanceof StepFailure ? err.message : err instanceof Error ? err.stack : String(err)}`);
  if (server !== undefined) {
    console.error(tail(server.output()));
    await server.dispose();
  }
  process.exit(1);
}
