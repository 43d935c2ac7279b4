// Runs the hostile requests of fault-fuzz.ts against the whole service in-process and checks the invariants after each one; shared by the short suite and `npm run test:fuzz`.
//
// Invariants, per request: the pipeline answers (never throws), never with a 5xx; the built-in
// prototypes are untouched; a refused request changes nothing (lastSeq, and a full read-back of the
// state every so often); an accepted one makes at most one record; each mutation writes exactly one
// audit line. At the end: every accepted write reads back the same after a recovery from the storage
// (and so every accepted body can be decoded again: a record that encodes but does not decode would
// stop the service from booting).

import fc from 'fast-check';
import type { HashPool } from '../../src/auth/hash-pool.js';
import type { AuditEntry } from '../../src/service/audit.js';
import { appAdminEmail, appAdminPassword, fingerprint, InProcessApp } from './fault-app.js';
import { prototypeFingerprint, requestPlan, resolvePlan, type KnownIds, type RequestPlan } from './fault-fuzz.js';
import { PowerLossStorage } from './fault-storage.js';

export interface FuzzTotals {
  cases: number;
  byStatus: Map<number, number>;
  acceptedWrites: number;
  /** Refused requests whose whole state was read back and compared. */
  fullChecks: number;
  /** Restarts whose read-back matched. */
  restarts: number;
}

export function emptyFuzzTotals(): FuzzTotals {
  return { cases: 0, byStatus: new Map(), acceptedWrites: 0, fullChecks: 0, restarts: 0 };
}

export function formatFuzzTotals(t: FuzzTotals): string {
  const statuses = [...t.byStatus].sort(([a], [b]) => a - b).map(([s, n]) => `${s}: ${n}`).join(', ');
  return `${t.cases} requests (${statuses}); ${t.acceptedWrites} accepted writes, ${t.fullChecks} refusals read back in full, ${t.restarts} restarts read back identical`;
}

function knownIds(app: InProcessApp): KnownIds {
  // Not the admin: disabling it (or taking it out of the base Application) is allowed once other Users
  // are there, and would leave every later request of the fuzz unauthorized.
  const users = [...app.state.allUsers()].filter((u) => u.email !== appAdminEmail);
  return {
    application: [...app.state.allApplications()].map((a) => a.id),
    group: [...app.state.allGroups()].map((g) => g.id),
    user: users.map((u) => u.id),
    organization: [...app.state.allOrganizations()].map((o) => o.id),
    apikey: users.flatMap((u) => u.apikeys.map((k) => ({ user: u.id, key: k.id }))),
  };
}

const adminAuthorization = `Basic ${Buffer.from(`${appAdminEmail}:${appAdminPassword}`).toString('base64')}`;

/** Fuzzes one in-process service for `cases` requests from `seed`, restarting it (a recovery from storage) every `restartEvery`. */
export async function fuzzInProcess(opts: { cases: number; seed: number; pool: HashPool; restartEvery?: number }, totals: FuzzTotals): Promise<void> {
  let storage = new PowerLossStorage();
  let dir = `/fuzz/${opts.seed}/0`;
  await storage.mkdirp(dir);
  let audits: AuditEntry[] = [];
  const open = (): Promise<InProcessApp> => InProcessApp.open({ storage, dir, pool: opts.pool, audit: (e) => audits.push(e) });
  let app = await open();
  const protoBefore = prototypeFingerprint();
  const restartEvery = opts.restartEvery ?? 250;
  let sinceRestart = 0;
  let restarts = 0;

  const restart = async (): Promise<void> => {
    const before = await fingerprint(app);
    await app.close();
    const next = `/fuzz/${opts.seed}/${++restarts}`;
    storage = storage.clone(dir, next);
    dir = next;
    app = await open();
    const after = await fingerprint(app);
    if (after !== before) throw new Error(`after a restart the state reads back differently:\n before ${before.slice(0, 500)}\n after  ${after.slice(0, 500)}`);
    totals.restarts++;
  };

  const property = fc.asyncProperty(requestPlan(app.routes.length), async (plan: RequestPlan) => {
    const req = resolvePlan(plan, app.routes, knownIds(app));
    const seqBefore = app.state.lastSeq;
    const fullBefore = totals.cases % 25 === 0 ? await fingerprint(app) : undefined;
    audits = [];
    const res = await app.request(req.method, req.path, {
      raw: req.body, contentType: req.contentType, query: req.query,
      auth: req.authorization === 'admin' ? adminAuthorization : req.authorization === '' ? null : req.authorization,
    });
    totals.cases++;
    totals.byStatus.set(res.status, (totals.byStatus.get(res.status) ?? 0) + 1);
    const where = `${req.describe}\n -> ${res.status} ${res.body.slice(0, 300)}`;
    if (res.status >= 500) throw new Error(`a ${res.status}: ${where}`);
    if (prototypeFingerprint() !== protoBefore || ({} as Record<string, unknown>)['polluted'] !== undefined) throw new Error(`a built-in prototype changed: ${where}`);
    const made = app.state.lastSeq - seqBefore;
    const rehashed = audits.some((a) => a.action === 'user.rehash');
    if (res.status !== 200 && made !== 0 && !rehashed) throw new Error(`a refused request made ${made} records: ${where}`);
    if (res.status === 200 && made > 1 && !rehashed) throw new Error(`one request made ${made} records: ${where}`);
    if (res.status === 200 && made === 1) totals.acceptedWrites++;
    const mutationLines = audits.filter((a) => a.action === req.route);
    const callerPassed = audits.some((a) => a.action === 'caller.authenticate' && a.outcome === 'success');
    const isMutation = req.route !== undefined && req.method !== 'GET' && req.route !== 'POST /authenticate' && callerPassed;
    if (isMutation && mutationLines.length !== 1) throw new Error(`${mutationLines.length} audit lines for one mutation: ${where}`);
    if (isMutation && mutationLines[0]!.outcome !== (res.status === 200 ? 'success' : (res.json as { service?: { error?: { code?: string } } })?.service?.error?.code)) {
      throw new Error(`the audit outcome ${mutationLines[0]!.outcome} does not match the answer: ${where}`);
    }
    if (fullBefore !== undefined && res.status !== 200) {
      if (await fingerprint(app) !== fullBefore) throw new Error(`a refused request changed the state: ${where}`);
      totals.fullChecks++;
    }
    if (++sinceRestart >= restartEvery) {
      sinceRestart = 0;
      await restart();
    }
  });
  try {
    const out = await fc.check(property, { numRuns: opts.cases, seed: opts.seed, endOnFailure: true });
    if (out.failed) {
      const cause = out.errorInstance instanceof Error ? out.errorInstance.message : String(out.errorInstance);
      throw new Error(`fuzz failed at request ${out.numRuns} (seed ${opts.seed}, path ${out.counterexamplePath}): ${cause}`);
    }
    await restart();
  } finally {
    await app.close();
  }
}
