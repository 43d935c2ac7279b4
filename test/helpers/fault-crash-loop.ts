// The crash loop, shared by the short suite (npm test) and the long run (npm run test:crash): the real server under concurrent mutations of every kind, killed at a random moment or at a kill point, restarted, and checked against a model.
//
// Each worker owns a partition (its own Applications, Groups, Users and API Keys, named p<i>-...), so
// its requests never race another worker's, and has at most one request in flight. The model keeps,
// per partition, the state after its last acknowledged request and, while one is in flight, the state
// that request would make. After every restart the partition must equal one of the two:
//   - every acknowledged mutation is present (not the in-flight-only state),
//   - nothing is present that was neither acknowledged nor in flight (no third state, no stray entity),
//   - nothing is applied twice (no name twice, no key twice).
// Passwords are checked by authenticating; the state is then adopted (with the ids learned from the
// server) and the next cycle goes on from it.

import { rmSync } from 'node:fs';
import { crashPoints } from '../../src/persist/fault-injection.js';
import { Rng } from './fault-storage.js';
import { adminEmail, adminPassword, basicAuth, newServerDirs, startServer, type ServerDirs, type ServerProcess } from './server.js';

type Status = 'ENABLED' | 'DISABLED';
type UserStatus = 'UNVERIFIED' | 'ENABLED' | 'DISABLED';
type Custom = Record<string, unknown> | null;

interface AppM { id: string | undefined; name: string; description: string; status: Status; custom: Custom }
interface GroupM { id: string | undefined; name: string; app: string; description: string; status: Status; custom: Record<string, unknown> }
interface KeyM { id: string | undefined; name: string; description: string; status: Status }
interface UserM {
  id: string | undefined; email: string; name: string; status: UserStatus; custom: Custom;
  apps: string[]; groups: string[]; keys: KeyM[]; password: string;
}
/** One partition's entities, by name (Applications, Groups, API Keys) and email (Users). */
interface Part { apps: Map<string, AppM>; groups: Map<string, GroupM>; users: Map<string, UserM> }

function clonePart(p: Part): Part {
  const copy = <T>(m: Map<string, T>): Map<string, T> => new Map([...m].map(([k, v]) => [k, structuredClone(v)]));
  return { apps: copy(p.apps), groups: copy(p.groups), users: copy(p.users) };
}

/** What must match after a restart: everything but ids and passwords. */
function canonical(p: Part): string {
  const sorted = <T>(m: Map<string, T>, f: (v: T) => unknown): Array<[string, unknown]> => [...m].sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, v]) => [k, f(v)]);
  return JSON.stringify({
    apps: sorted(p.apps, (a) => [a.description, a.status, a.custom]),
    groups: sorted(p.groups, (g) => [g.app, g.description, g.status, g.custom]),
    users: sorted(p.users, (u) => [u.name, u.status, u.custom, [...u.apps].sort(), [...u.groups].sort(),
      [...u.keys].sort((a, b) => (a.name < b.name ? -1 : 1)).map((k) => [k.name, k.description, k.status])]),
  });
}

export interface CrashLoopTotals {
  cycles: number;
  /** Killed by the test with SIGKILL at a random moment. */
  randomKills: number;
  /** Killed by the server itself at a kill point (AUTHD_TEST_CRASH_AT), per point. */
  pointKills: Map<string, number>;
  /** Kill points armed but not reached before the cycle's deadline (then killed by the test). */
  pointsNotReached: number;
  acknowledged: number;
  /** Requests in flight at the kills, and how many of them turned out applied. */
  inFlight: number;
  inFlightApplied: number;
  /** Must stay 0. */
  lostAcknowledged: number;
  byKind: Map<string, number>;
}

export function emptyCrashTotals(): CrashLoopTotals {
  return { cycles: 0, randomKills: 0, pointKills: new Map(), pointsNotReached: 0, acknowledged: 0, inFlight: 0, inFlightApplied: 0, lostAcknowledged: 0, byKind: new Map() };
}

export class CrashLoopFailure extends Error {
  constructor(readonly seed: number, readonly cycle: number, message: string) {
    super(`seed ${seed}, cycle ${cycle}: ${message}`);
    this.name = 'CrashLoopFailure';
  }
}

interface Req { method: string; path: string; body?: unknown }
interface Planned { kind: string; req: Req; next: (result: Record<string, unknown>) => Part }

class Client {
  constructor(private readonly baseUrl: string) {}
  async send(req: Req): Promise<{ status: number; json: Record<string, unknown> | undefined; text: string }> {
    const res = await fetch(this.baseUrl + req.path, {
      method: req.method,
      headers: { authorization: basicAuth(adminEmail, adminPassword), ...(req.body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: req.body === undefined ? undefined : JSON.stringify(req.body),
    });
    const text = await res.text();
    let json: Record<string, unknown> | undefined;
    try { json = (JSON.parse(text) as { service: { result: Record<string, unknown> } }).service.result; } catch { json = undefined; }
    return { status: res.status, json, text };
  }
}

/** A valid next mutation for the partition, or undefined to try another kind. */
function plan(p: Part, prefix: string, rng: Rng, counter: () => number): Planned | undefined {
  const n = counter();
  const apps = [...p.apps.values()].filter((a) => a.id !== undefined);
  const groups = [...p.groups.values()].filter((g) => g.id !== undefined);
  const users = [...p.users.values()].filter((u) => u.id !== undefined);
  const appByName = (name: string): AppM => p.apps.get(name)!;
  const custom = (): Record<string, unknown> => ({ n, tag: `c${rng.int(0, 9)}`, nested: rng.chance(0.3) ? { list: [n, 'x', null] } : {} });
  const change = (mutate: (q: Part, result: Record<string, unknown>) => void) => (result: Record<string, unknown>): Part => {
    const q = clonePart(p);
    mutate(q, result);
    return q;
  };
  const kinds = ['createApp', 'createApp', 'updateApp', 'toggleApp', 'deleteApp', 'createGroup', 'createGroup', 'updateGroup', 'toggleGroup', 'deleteGroup',
    'createUser', 'createUser', 'createUser', 'updateUser', 'updateUser', 'removeUserApp', 'removeUserGroup', 'deleteUser', 'createKey', 'createKey', 'updateKey', 'deleteKey'] as const;
  const kind = rng.pick(kinds);
  // Keep partitions small: past a size, creates give way to deletes.
  if (kind.startsWith('create') && p.users.size + p.apps.size + p.groups.size > 40) return undefined;
  switch (kind) {
    case 'createApp': {
      const name = `${prefix}-app-${n}`;
      const body = { name, description: `d${n}`, custom_data: rng.chance(0.5) ? custom() : null };
      return { kind, req: { method: 'POST', path: '/applications/application', body }, next: change((q, r) => q.apps.set(name, { id: (r['application'] as { id: string }).id, name, description: body.description, status: 'ENABLED', custom: body.custom_data })) };
    }
    case 'updateApp': {
      const a = rng.pick(apps);
      if (a === undefined) return undefined;
      const body = { description: `d${n}`, custom_data: custom() };
      return { kind, req: { method: 'PUT', path: `/applications/application/${a.id}`, body }, next: change((q) => Object.assign(q.apps.get(a.name)!, { description: body.description, custom: body.custom_data })) };
    }
    case 'toggleApp': {
      const a = rng.pick(apps);
      if (a === undefined) return undefined;
      const status: Status = a.status === 'ENABLED' ? 'DISABLED' : 'ENABLED';
      return { kind, req: { method: 'PUT', path: `/applications/application/${a.id}`, body: { status } }, next: change((q) => { q.apps.get(a.name)!.status = status; }) };
    }
    case 'deleteApp': {
      // Groups, even one whose create may or may not have landed, must be deleted first (issue 23).
      const a = apps.find((x) => x.status === 'DISABLED' && ![...p.users.values()].some((u) => u.apps.includes(x.name))
        && ![...p.groups.values()].some((g) => g.app === x.name));
      if (a === undefined) return undefined;
      return { kind, req: { method: 'DELETE', path: `/applications/application/${a.id}` }, next: change((q) => { q.apps.delete(a.name); }) };
    }
    case 'createGroup': {
      const a = rng.pick(apps);
      if (a === undefined) return undefined;
      const name = `${prefix}-group-${n}`;
      const body = { name, application: a.id, description: `g${n}`, custom_data: custom() };
      return { kind, req: { method: 'POST', path: '/groups/group', body }, next: change((q, r) => q.groups.set(name, { id: (r['group'] as { id: string }).id, name, app: a.name, description: body.description, status: 'ENABLED', custom: body.custom_data })) };
    }
    case 'updateGroup': {
      const g = rng.pick(groups);
      if (g === undefined) return undefined;
      const body = { description: `g${n}`, custom_data: custom() };
      return { kind, req: { method: 'PUT', path: `/groups/group/${g.id}`, body }, next: change((q) => Object.assign(q.groups.get(g.name)!, { description: body.description, custom: body.custom_data })) };
    }
    case 'toggleGroup': {
      const g = rng.pick(groups);
      if (g === undefined) return undefined;
      const status: Status = g.status === 'ENABLED' ? 'DISABLED' : 'ENABLED';
      return { kind, req: { method: 'PUT', path: `/groups/group/${g.id}`, body: { status } }, next: change((q) => { q.groups.get(g.name)!.status = status; }) };
    }
    case 'deleteGroup': {
      const g = groups.find((x) => x.status === 'DISABLED');
      if (g === undefined) return undefined;
      return {
        kind, req: { method: 'DELETE', path: `/groups/group/${g.id}` },
        next: change((q) => {
          q.groups.delete(g.name);
          for (const u of q.users.values()) u.groups = u.groups.filter((x) => x !== g.name);
        }),
      };
    }
    case 'createUser': {
      const a = rng.pick(apps);
      if (a === undefined) return undefined;
      const g = rng.pick(groups.filter((x) => x.app === a.name));
      const email = `${prefix}-u${n}@crash.test`;
      const password = `pw-${n}-${rng.int(1000, 9999)}`;
      const body = { email, password, name: `User ${n}`, applications: [a.id], groups: g === undefined ? [] : [g.id], custom_data: rng.chance(0.5) ? custom() : null };
      return {
        kind, req: { method: 'POST', path: '/users/user', body },
        next: change((q, r) => q.users.set(email, {
          id: (r['user'] as { id: string }).id, email, name: body.name, status: 'UNVERIFIED', custom: body.custom_data,
          apps: [a.name], groups: g === undefined ? [] : [g.name], keys: [], password,
        })),
      };
    }
    case 'updateUser': {
      const u = rng.pick(users);
      if (u === undefined) return undefined;
      const body: Record<string, unknown> = { name: `User ${n}` };
      if (rng.chance(0.4)) body['status'] = rng.pick(['UNVERIFIED', 'ENABLED', 'DISABLED'] as const);
      if (rng.chance(0.4)) body['custom_data'] = custom();
      if (rng.chance(0.3)) body['password'] = `pw-${n}-${rng.int(1000, 9999)}`;
      const addApp = rng.chance(0.3) ? rng.pick(apps.filter((a) => !u.apps.includes(a.name))) : undefined;
      if (addApp !== undefined) body['applications'] = [addApp.id];
      const addGroup = rng.chance(0.3) ? rng.pick(groups.filter((g) => !u.groups.includes(g.name) && (u.apps.includes(g.app) || g.app === addApp?.name))) : undefined;
      if (addGroup !== undefined) body['groups'] = [addGroup.id];
      return {
        kind, req: { method: 'PUT', path: `/users/user/${u.id}`, body },
        next: change((q) => {
          const x = q.users.get(u.email)!;
          x.name = body['name'] as string;
          if (body['status'] !== undefined) x.status = body['status'] as UserStatus;
          if (body['custom_data'] !== undefined) x.custom = body['custom_data'] as Custom;
          if (body['password'] !== undefined) x.password = body['password'] as string;
          if (addApp !== undefined) x.apps.push(addApp.name);
          if (addGroup !== undefined) x.groups.push(addGroup.name);
        }),
      };
    }
    case 'removeUserApp': {
      const u = rng.pick(users.filter((x) => x.apps.length > 1));
      if (u === undefined) return undefined;
      const a = appByName(rng.pick(u.apps));
      return { kind, req: { method: 'DELETE', path: `/users/user/${u.id}/application/${a.id}` }, next: change((q) => {
        // Leaving an Application leaves its Groups (issue 23).
        const x = q.users.get(u.email)!;
        x.apps = x.apps.filter((y) => y !== a.name);
        x.groups = x.groups.filter((g) => q.groups.get(g)?.app !== a.name);
      }) };
    }
    case 'removeUserGroup': {
      const u = rng.pick(users.filter((x) => x.groups.length > 0));
      if (u === undefined) return undefined;
      const g = p.groups.get(rng.pick(u.groups))!;
      return { kind, req: { method: 'DELETE', path: `/users/user/${u.id}/group/${g.id}` }, next: change((q) => { const x = q.users.get(u.email)!; x.groups = x.groups.filter((y) => y !== g.name); }) };
    }
    case 'deleteUser': {
      const u = users.find((x) => x.status === 'DISABLED');
      if (u === undefined) return undefined;
      return { kind, req: { method: 'DELETE', path: `/users/user/${u.id}` }, next: change((q) => { q.users.delete(u.email); }) };
    }
    case 'createKey': {
      const u = rng.pick(users.filter((x) => x.keys.length < 4));
      if (u === undefined) return undefined;
      const name = `${prefix}-key-${n}`;
      const status: Status = rng.chance(0.3) ? 'DISABLED' : 'ENABLED';
      return {
        kind, req: { method: 'POST', path: `/users/user/${u.id}/apikey`, body: { name, status } },
        next: change((q, r) => q.users.get(u.email)!.keys.push({ id: (r['apikey'] as { id: string }).id, name, description: '', status })),
      };
    }
    case 'updateKey': {
      const u = rng.pick(users.filter((x) => x.keys.some((k) => k.id !== undefined)));
      if (u === undefined) return undefined;
      const k = rng.pick(u.keys.filter((x) => x.id !== undefined))!;
      const body = { description: `k${n}`, status: rng.pick(['ENABLED', 'DISABLED'] as const) };
      return { kind, req: { method: 'PUT', path: `/users/user/${u.id}/apikey/${k.id}`, body }, next: change((q) => Object.assign(q.users.get(u.email)!.keys.find((x) => x.name === k.name)!, body)) };
    }
    case 'deleteKey': {
      const u = rng.pick(users.filter((x) => x.keys.some((k) => k.id !== undefined && k.status === 'DISABLED')));
      if (u === undefined) return undefined;
      const k = u.keys.find((x) => x.id !== undefined && x.status === 'DISABLED')!;
      return { kind, req: { method: 'DELETE', path: `/users/user/${u.id}/apikey/${k.id}` }, next: change((q) => { const x = q.users.get(u.email)!; x.keys = x.keys.filter((y) => y.name !== k.name); }) };
    }
  }
}

interface ObservedApp { id: string; name: string; description: string; status: Status; custom_data: Custom }
interface ObservedGroup { id: string; name: string; application: string; description: string; status: Status; custom_data: Record<string, unknown> }
interface ObservedUser {
  id: string; email: string; name: string; status: UserStatus; custom_data: Custom;
  applications: Array<{ id: string }>; groups: Array<{ id: string }>; apikeys: Array<{ id: string; name: string; description: string; status: Status }>;
}

/** The partitions as the server shows them; throws on a name seen twice (applied twice) or a stray entity. */
async function observe(client: Client, prefixes: readonly string[]): Promise<Map<string, Part>> {
  const list = async <T>(path: string, key: string): Promise<T[]> => {
    const res = await client.send({ method: 'GET', path });
    if (res.status !== 200 || res.json === undefined) throw new Error(`GET ${path}: ${res.status} ${res.text.slice(0, 200)}`);
    return res.json[key] as T[];
  };
  const apps = await list<ObservedApp>('/applications', 'applications');
  const groups = await list<ObservedGroup>('/groups', 'groups');
  const users = await list<ObservedUser>('/users', 'users');
  const parts = new Map(prefixes.map((p) => [p, { apps: new Map(), groups: new Map(), users: new Map() } as Part]));
  const partOf = (name: string): Part | undefined => parts.get(name.split('-')[0]!);
  const appName = new Map(apps.map((a) => [a.id, a.name]));
  const groupName = new Map(groups.map((g) => [g.id, g.name]));
  const put = <T>(m: Map<string, T>, key: string, value: T): void => {
    if (m.has(key)) throw new Error(`${key} exists twice: a create was applied twice`);
    m.set(key, value);
  };
  for (const a of apps) {
    const part = partOf(a.name);
    if (part === undefined) {
      if (a.name !== 'authd') throw new Error(`an Application nobody created: ${a.name}`);
      continue;
    }
    put(part.apps, a.name, { id: a.id, name: a.name, description: a.description, status: a.status, custom: a.custom_data });
  }
  for (const g of groups) {
    const part = partOf(g.name);
    if (part === undefined) throw new Error(`a Group nobody created: ${g.name}`);
    put(part.groups, g.name, { id: g.id, name: g.name, app: appName.get(g.application) ?? `?${g.application}`, description: g.description, status: g.status, custom: g.custom_data });
  }
  for (const u of users) {
    const part = partOf(u.email);
    if (part === undefined) {
      if (u.email !== adminEmail) throw new Error(`a User nobody created: ${u.email}`);
      continue;
    }
    const keys = new Set<string>();
    for (const k of u.apikeys) {
      if (keys.has(k.name)) throw new Error(`API Key ${k.name} exists twice`);
      keys.add(k.name);
    }
    put(part.users, u.email, {
      id: u.id, email: u.email, name: u.name, status: u.status, custom: u.custom_data, password: '',
      apps: u.applications.map((a) => appName.get(a.id) ?? `?${a.id}`), groups: u.groups.map((g) => groupName.get(g.id) ?? `?${g.id}`),
      keys: u.apikeys.map((k) => ({ id: k.id, name: k.name, description: k.description, status: k.status })),
    });
  }
  return parts;
}

/** Whether the model's password lets the user in (undefined when the user cannot authenticate at all). */
async function passwordWorks(client: Client, part: Part, user: UserM, password: string): Promise<boolean | undefined> {
  if (user.status === 'DISABLED') return undefined;
  const app = user.apps.map((a) => part.apps.get(a)!).find((a) => a !== undefined && a.status === 'ENABLED' && a.id !== undefined);
  if (app === undefined || user.id === undefined) return undefined;
  const res = await client.send({ method: 'POST', path: '/authenticate', body: { type: 'username', application: app.id, credential: { username: user.email, password } } });
  return (res.json as { authenticated?: boolean } | undefined)?.authenticated === true;
}

export interface CrashLoopOptions {
  readonly cycles: number;
  readonly seed: number;
  readonly workers?: number;
  /** Share of cycles killed at a kill point rather than at a random moment. */
  readonly pointShare?: number;
  readonly progress?: (line: string) => void;
  /** More environment for every start: cluster mode's settings, for the crash loop on a JetStream stream. */
  readonly env?: Readonly<Record<string, string>>;
}

export async function runCrashLoop(opts: CrashLoopOptions, totals: CrashLoopTotals): Promise<void> {
  const rng = new Rng(opts.seed);
  const workers = opts.workers ?? 6;
  const prefixes = Array.from({ length: workers }, (_, i) => `p${i}`);
  const model = new Map<string, Part>(prefixes.map((p) => [p, { apps: new Map(), groups: new Map(), users: new Map() }]));
  let counter = 0;
  const next = (): number => ++counter;
  const dirs: ServerDirs = newServerDirs();
  const baseEnv = { SNAPSHOT_EVERY_RECORDS: '20', ...opts.env };
  let server: ServerProcess | undefined;
  let inFlightAtKill = new Map<string, Planned>();
  try {
    for (let cycle = 0; cycle < opts.cycles; cycle++) {
      const fail = (message: string): never => { throw new CrashLoopFailure(opts.seed, cycle, message); };
      const point = rng.chance(opts.pointShare ?? 0.4) ? rng.pick(crashPoints) : undefined;
      const env: Record<string, string> = { ...baseEnv };
      if (point !== undefined) env['AUTHD_TEST_CRASH_AT'] = `${point}:${rng.int(1, point.includes('fsync') ? 40 : 3)}`;
      server = await startServer({ dirs, env });
      const client = new Client(server.baseUrl);
      // The state from the last cycle, checked in full now that it has restarted.
      if (cycle > 0) await verifyAndAdopt(client, model, inFlightAtKill, prefixes, totals, fail);

      const pending = new Map<string, Planned>();
      let stop = false;
      const runWorker = async (prefix: string, wrng: Rng): Promise<void> => {
        for (let idle = 0; !stop;) {
          const planned = plan(model.get(prefix)!, prefix, wrng, next);
          if (planned === undefined) {
            // Nothing of that kind to do now; try another, without starving the event loop.
            if (++idle % 50 === 0) await new Promise((r) => setImmediate(r));
            continue;
          }
          pending.set(prefix, planned);
          let res;
          try {
            res = await client.send(planned.req);
          } catch {
            return; // the server died with this request in flight
          }
          if (res.status !== 200) {
            if (stop || !server!.running) return; // refused while going down: still "in flight" as far as the model knows
            fail(`${planned.kind} ${planned.req.method} ${planned.req.path} was refused: ${res.status} ${res.text.slice(0, 300)}`);
          }
          model.set(prefix, planned.next(res.json!));
          pending.delete(prefix);
          totals.acknowledged++;
          totals.byKind.set(planned.kind, (totals.byKind.get(planned.kind) ?? 0) + 1);
        }
      };
      const running = prefixes.map((p, i) => runWorker(p, new Rng(opts.seed * 1_000_003 + cycle * 101 + i)));
      const deadline = Date.now() + rng.int(150, 1200);
      while (Date.now() < deadline && server.running) await new Promise((r) => setTimeout(r, 10));
      if (point !== undefined && server.running) {
        // Give the kill point a moment more to be reached, then pull the plug ourselves.
        const extra = Date.now() + 1500;
        while (Date.now() < extra && server.running) await new Promise((r) => setTimeout(r, 10));
      }
      const selfKilled = !server.running;
      stop = true;
      await server.kill();
      await Promise.all(running);
      if (selfKilled && point !== undefined) totals.pointKills.set(point, (totals.pointKills.get(point) ?? 0) + 1);
      else {
        totals.randomKills++;
        if (point !== undefined) totals.pointsNotReached++;
      }
      totals.inFlight += pending.size;
      // Remember what may have been applied: the next start checks it.
      inFlightAtKill = pending;
      totals.cycles++;
      opts.progress?.(`cycle ${cycle + 1}/${opts.cycles}: ${selfKilled ? `killed itself at ${point}` : 'SIGKILL'}, ${pending.size} in flight, ${totals.acknowledged} acknowledged so far`);
    }
    server = await startServer({ dirs, env: baseEnv });
    await verifyAndAdopt(new Client(server.baseUrl), model, inFlightAtKill, prefixes, totals, (m) => { throw new CrashLoopFailure(opts.seed, opts.cycles, m); });
    await server.stop();
  } finally {
    await server?.dispose({ keepDirs: true });
    rmSync(dirs.root, { recursive: true, force: true });
  }
}

/** Checks every partition against its acknowledged state (or that plus its in-flight request), then adopts what the server shows. */
async function verifyAndAdopt(
  client: Client, model: Map<string, Part>, inFlightByPartition: ReadonlyMap<string, Planned>, prefixes: readonly string[],
  totals: CrashLoopTotals, fail: (m: string) => never,
): Promise<void> {
  let observed: Map<string, Part>;
  try {
    observed = await observe(client, prefixes);
  } catch (err) {
    fail((err as Error).message);
  }
  for (const prefix of prefixes) {
    const acked = model.get(prefix)!;
    const seen = observed!.get(prefix)!;
    const inFlight = inFlightByPartition.get(prefix);
    const candidates: Array<{ part: Part; applied: boolean }> = [{ part: acked, applied: false }];
    if (inFlight !== undefined) {
      // The in-flight create's id is unknown: take it from what the server shows.
      const fakeIds = new Proxy({}, { get: () => ({ id: undefined }) }) as Record<string, unknown>;
      candidates.push({ part: inFlight.next(fakeIds), applied: true });
    }
    const want = canonical(seen);
    const match = candidates.find((c) => canonical(c.part) === want);
    if (match === undefined) {
      totals.lostAcknowledged += inFlight === undefined ? 1 : 0;
      fail(`partition ${prefix} after the restart is neither its acknowledged state${inFlight === undefined ? '' : ` nor that plus the in-flight ${inFlight.kind}`}:\n  seen      ${want.slice(0, 600)}\n  expected  ${canonical(acked).slice(0, 600)}`);
    }
    // Passwords: each must be the model's (for the in-flight one, either of its two candidates).
    for (const user of seen.users.values()) {
      const expected = match.part.users.get(user.email)!;
      const other = candidates.find((c) => c !== match)?.part.users.get(user.email);
      user.password = expected.password;
      const works = await passwordWorks(client, seen, user, expected.password);
      if (works === false) {
        if (other !== undefined && other.password !== expected.password && await passwordWorks(client, seen, user, other.password) === true) {
          user.password = other.password;
        } else {
          fail(`partition ${prefix}: ${user.email} does not authenticate with its acknowledged password`);
        }
      }
    }
    if (inFlight !== undefined) {
      if (match.applied) totals.inFlightApplied++;
    }
    model.set(prefix, seen);
  }
}

export function formatCrashTotals(t: CrashLoopTotals): string {
  const points = crashPoints.map((p) => `${p} ${t.pointKills.get(p) ?? 0}`).join(', ');
  const kinds = [...t.byKind].sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, n]) => `${k} ${n}`).join(', ');
  return [
    `${t.cycles} crash cycles: ${t.randomKills} SIGKILLs at random moments, kill points reached: ${points} (${t.pointsNotReached} armed but not reached, then SIGKILLed)`,
    `${t.acknowledged} mutations acknowledged, ${t.lostAcknowledged} lost; ${t.inFlight} in flight at the kills, ${t.inFlightApplied} of them applied`,
    `acknowledged by kind: ${kinds}`,
  ].join('\n');
}
