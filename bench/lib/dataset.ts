// The benchmark dataset: builds a realistic state in memory and writes it straight into a data directory as one snapshot, plus the fixtures the benchmark drives it with.
//
// Writing a snapshot instead of calling the API is what makes 1,000,000 users ready in seconds: the
// API would spend an argon2id hash (tens of ms) on every user, hours in all. The server cannot tell
// the difference: recovery loads this snapshot exactly as it loads one it wrote itself.

import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import { ApiKeySecrets } from '../../src/auth/apikey-secrets.js';
import { HashPool } from '../../src/auth/hash-pool.js';
import { packPasswordHash } from '../../src/auth/packed-hash.js';
import { argon2IterationsDefault, argon2MemoryKiBDefault, argon2ParallelismDefault } from '../../src/config/limits.js';
import { signingAlgs, type ApiKey, type Application, type Group, type JsonObject, type Meta, type Organization, type User, type UserStatus } from '../../src/domain/entities.js';
import { writeKeyFingerprint } from '../../src/persist/key-fingerprint.js';
import { classifyDir, lockFileName } from '../../src/persist/layout.js';
import type { SnapshotSource } from '../../src/persist/replayable.js';
import { writeSnapshot } from '../../src/persist/snapshot.js';
import { NodeStorage } from '../../src/persist/storage.js';
import { withSharedStrings } from '../../src/store/compact.js';
import { newApikeyId, newEntityId } from '../../src/store/ids.js';
import { Sealer, sealerSubkeyLabel } from '../../src/tokens/sealer.js';
import { newSigningKey } from '../../src/tokens/signing-keys.js';
import { Prng, SkewedPicker } from './prng.js';
import * as words from './words.js';

/** Every seeded User (the admin included) has this password; the README says so. */
export const benchPassword = 'bench-password-7c1e';
export const benchAdminEmail = 'admin@bench.example';
/** Fixed, so two seeds of the same size have the same shape (ids, nonces and salts stay crypto-random). */
export const defaultSeed = 20_240_601;

// Shape of the dataset. Company sizes follow 1/(k + offset)^exponent: with these, 1,000,000 users give
// a largest company of about 56,000 users and a tail of companies with a few dozen.
const companiesMax = 3000;
const usersPerCompanyMin = 20;
const companySkewExponent = 1.2;
const companySkewOffset = 5;
const applicationsCount = 40;
const groupsPerApplicationMin = 2;
const groupsPerApplicationMax = 8;
const applicationSkewExponent = 0.8;
const membershipsPerUserMax = 3;
const usersWithCompanyFraction = 0.85;
const usersWithApikeyFraction = 0.1;
const disabledUserFraction = 0.01;
const unverifiedUserFraction = 0.09;
/** The dataset's history is spread over this much time before the seed ran. */
const historySpanUs = 3 * 365 * 24 * 3600 * 1_000_000;

/**
 * Distinct argon2id hashes of benchPassword (each its own salt), dealt to Users round-robin in creation
 * order. One shared hash would let the server's single-flight verification (concurrent checks of the same
 * password and hash share one argon2 run) answer scenario C's concurrent logins with one hash between
 * them; with this many, any window of consecutive Users smaller than it carries distinct hashes, so C
 * measures one argon2 run per request at up to about this many connections.
 */
export const passwordHashesDistinct = 64;

// Fixture sizes: enough distinct credentials that scenario C never repeats one within a run.
const fixtureApikeys = 1000;
const fixtureRepeatedCredentials = 8;
const fixtureDistinctCredentialsMax = 20_000;
const fixtureUserIds = 2000;
/**
 * The production-like rows (A', D'): this many distinct API keys, and random User ids (repeats possible) to read:
 * as many as a D' run sends, so that its reads are spread over the whole data set and not over a set small
 * enough for the render cache to hold.
 */
const fixtureDistinctApikeys = 10_000;
const fixtureRandomUserIds = 300_000;
/** Scenario M's writes: Users whose updates touch no credential the authenticate requests use. */
const fixtureWritableUserIds = 1000;
const searchCandidates = 160;
const searchTermsKept = 24;
/** Scenario F's rule: a term matches at most this many users. */
export const searchMatchesMax = 100;

export interface Credential {
  readonly email: string;
  /** An Application this User belongs to, so authentication can succeed. */
  readonly application: string;
}

export interface ApikeyFixture {
  readonly keyId: string;
  /** Public; the secret is secretFor(keyId, nonce) under the key file's server key. */
  readonly nonce: string;
  readonly application: string;
}

export interface SearchTermFixture {
  readonly term: string;
  /** How the term was picked (email, name, company, id, apikey). */
  readonly kind: string;
  /** Users whose searchable fields contain it, counted by a full scan at seed time. */
  readonly matches: number;
}

/** What the benchmark needs to know about a seeded dataset; written next to it, never inside the data directory. */
export interface Fixtures {
  readonly users: number;
  readonly password: string;
  readonly adminEmail: string;
  readonly baseApplication: string;
  /** An Application with Groups, where scenario E creates its Groups. */
  readonly writeApplication: string;
  readonly apikeys: readonly ApikeyFixture[];
  readonly repeatedCredentials: readonly Credential[];
  readonly distinctCredentials: readonly Credential[];
  readonly userIds: readonly string[];
  /** Up to fixtureDistinctApikeys keys, each of a different User (A' uses them; A keeps its first fixtureApikeys). */
  readonly distinctApikeys: readonly ApikeyFixture[];
  /** Ids picked at random from every regular User, for D'. */
  readonly randomUserIds: readonly string[];
  /** Every company's name (F' draws search terms from them). */
  readonly companyNames: readonly string[];
  /** Users past the distinct credentials and without an API key, picked at random: M updates them. */
  readonly writableUserIds: readonly string[];
  readonly searchTerms: readonly SearchTermFixture[];
}

export interface SeedOptions {
  readonly users: number;
  readonly dataDir: string;
  readonly keyFile: string;
  readonly force: boolean;
  readonly seed?: number;
  /** Where to write the fixtures JSON; none when undefined. */
  readonly fixturesFile?: string;
  readonly log?: (line: string) => void;
}

export interface SeedSummary {
  readonly users: number;
  readonly organizations: number;
  readonly applications: number;
  readonly groups: number;
  readonly apikeys: number;
  readonly snapshotPath: string;
  readonly snapshotBytes: number;
  readonly baseSeq: number;
  readonly hashMs: number;
  readonly buildMs: number;
  readonly writeMs: number;
  readonly fixturesMs: number;
  readonly totalMs: number;
}

export class SeedError extends Error {}

/** Refuses a data directory with anything in it unless force; with force, removes only the service's own files, and never under a live server. */
function prepareDataDir(dir: string, force: boolean): void {
  // Private, as the service keeps it (src/persist/dir-mode.ts): it holds sealed keys.
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  // Dotfiles are not data: the repository's ./data holds a .gitkeep, and `npm run seed` defaults to ./data.
  const names = readdirSync(dir).filter((name) => !name.startsWith('.'));
  if (names.length === 0) return;
  if (!force) throw new SeedError(`data directory ${dir} is not empty (${names.length} entries); pass --force to replace its snapshots and log`);
  if (names.includes(lockFileName)) {
    const pid = Number(readFileSync(join(dir, lockFileName), 'utf8').trim());
    if (Number.isSafeInteger(pid) && pid > 0 && isAlive(pid)) throw new SeedError(`data directory ${dir} is in use by process ${pid}; stop it first`);
  }
  const { segments, snapshots, tmps } = classifyDir(dir, names);
  const doomed = [...segments.map((s) => s.path), ...snapshots.map((s) => s.path), ...tmps];
  if (names.includes(lockFileName)) doomed.push(join(dir, lockFileName));
  for (const path of doomed) rmSync(path, { force: true });
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Real argon2id PHC strings of benchPassword at the service's default parameters, made by the service's own worker pool. */
async function hashBenchPassword(count: number): Promise<string[]> {
  const pool = new HashPool({
    // The pool's own dummy hash (made at start) also counts against the queue bound.
    workers: availableParallelism(), queueMax: count + 1,
    argon2: { memoryKiB: argon2MemoryKiBDefault, iterations: argon2IterationsDefault, parallelism: argon2ParallelismDefault },
  });
  try {
    return await Promise.all(Array.from({ length: count }, () => pool.hashPassword(benchPassword)));
  } finally {
    await pool.close();
  }
}

/** Hands out strictly increasing microsecond times, spread evenly over the dataset's history. */
class Timeline {
  private next: number;
  private readonly stepUs: number;

  constructor(entities: number) {
    const end = Date.now() * 1000 - 1_000_000;
    this.stepUs = Math.max(1, Math.floor(historySpanUs / Math.max(1, entities)));
    this.next = end - this.stepUs * entities;
  }

  take(): number {
    const t = this.next;
    this.next += this.stepUs;
    return t;
  }
}

interface Built {
  readonly meta: Meta;
  readonly organizations: Organization[];
  readonly applications: Application[];
  readonly groups: Group[];
  readonly users: User[];
  readonly groupsByApplication: Map<string, Group[]>;
  readonly apikeyCount: number;
}

function companyNames(prng: Prng, count: number): string[] {
  const names = new Set<string>();
  const combinations = words.companyPrefixes.length * words.companyCores.length * words.companySuffixes.length;
  while (names.size < Math.min(count, combinations / 2)) {
    names.add(`${prng.pick(words.companyPrefixes)} ${prng.pick(words.companyCores)}${prng.pick(words.companySuffixes)}`);
  }
  return [...names];
}

function slug(text: string): string {
  return text.toLowerCase().replace(/[^a-z0-9]+/g, '');
}

/** Picks 1..membershipsPerUserMax distinct indexes with the picker's skew. */
function distinctPicks(prng: Prng, picker: SkewedPicker, pool: number): number[] {
  const want = Math.min(pool, prng.int(1, membershipsPerUserMax));
  const out: number[] = [];
  while (out.length < want) {
    const i = picker.pick(prng);
    if (!out.includes(i)) out.push(i);
  }
  return out;
}

function buildState(userCount: number, prng: Prng, passwordHashes: readonly string[], secrets: ApiKeySecrets): Built {
  const companyCount = Math.max(1, Math.min(companiesMax, Math.floor(userCount / usersPerCompanyMin)));
  const names = companyNames(prng, companyCount);
  const groupCounts = Array.from({ length: applicationsCount }, () => prng.int(groupsPerApplicationMin, groupsPerApplicationMax));
  const entities = 3 + applicationsCount + groupCounts.reduce((a, b) => a + b, 0) + names.length + userCount + 1;
  const time = new Timeline(entities);

  const defaultOrg: Organization = {
    id: newEntityId(), name: 'default', description: 'Users created without an Organization or company name.',
    customData: null, status: 'ENABLED', createdAt: time.take(), modifiedAt: 0,
  };
  const baseApp: Application = {
    id: newEntityId(), name: 'authd', description: 'The base Application: its Users administer this service.',
    customData: null, status: 'ENABLED', createdAt: time.take(), modifiedAt: 0,
  };
  const organizations: Organization[] = [{ ...defaultOrg, modifiedAt: defaultOrg.createdAt }];
  const applications: Application[] = [{ ...baseApp, modifiedAt: baseApp.createdAt }];
  const meta: Meta = { baseApplication: baseApp.id, defaultOrganization: defaultOrg.id };
  const adminAt = time.take();
  const users: User[] = [{
    id: newEntityId(), email: benchAdminEmail, name: 'Administrator', status: 'ENABLED', customData: null, passwordHash: passwordHashes[0]!,
    organization: defaultOrg.id, applications: [baseApp.id], groups: [], apikeys: [], createdAt: adminAt, modifiedAt: adminAt,
  }];

  const groups: Group[] = [];
  const groupsByApplication = new Map<string, Group[]>();
  const tenantApps: Application[] = [];
  for (let a = 0; a < applicationsCount; a++) {
    const at = time.take();
    const app: Application = {
      id: newEntityId(), name: words.applicationNames[a % words.applicationNames.length]!, description: 'Seeded for the benchmark.',
      customData: { tier: prng.pick(['standard', 'gold', 'platinum']) }, status: 'ENABLED', createdAt: at, modifiedAt: at,
    };
    applications.push(app);
    tenantApps.push(app);
  }
  tenantApps.forEach((app, a) => {
    const own: Group[] = [];
    for (let g = 0; g < groupCounts[a]!; g++) {
      const at = time.take();
      own.push({
        id: newEntityId(), name: words.groupNames[g % words.groupNames.length]!, description: '',
        customData: { monthly_limit: prng.int(1, 100) * 1000 }, status: 'ENABLED', application: app.id, createdAt: at, modifiedAt: at,
      });
    }
    groups.push(...own);
    groupsByApplication.set(app.id, own);
  });

  const companies = names.map((name) => {
    const at = time.take();
    const org: Organization = { id: newEntityId(), name, description: '', customData: null, status: 'ENABLED', createdAt: at, modifiedAt: at };
    organizations.push(org);
    return { org, domain: `${slug(name)}.example` };
  });

  const companyPicker = new SkewedPicker(companies.length, companySkewExponent, companySkewOffset);
  const appPicker = new SkewedPicker(tenantApps.length, applicationSkewExponent, 1);
  let apikeyCount = 0;
  for (let i = 1; i <= userCount; i++) {
    const at = time.take();
    const first = prng.pick(words.firstNames);
    const last = prng.pick(words.lastNames);
    const company = prng.next() < usersWithCompanyFraction ? companies[companyPicker.pick(prng)]! : undefined;
    const domain = company?.domain ?? prng.pick(words.mailDomains);
    const apps = distinctPicks(prng, appPicker, tenantApps.length).map((k) => tenantApps[k]!.id);
    const groupPool = apps.flatMap((id) => groupsByApplication.get(id) ?? []);
    const groupIds: string[] = [];
    const groupWant = Math.min(groupPool.length, prng.int(1, membershipsPerUserMax));
    while (groupIds.length < groupWant) {
      const g = prng.pick(groupPool).id;
      if (!groupIds.includes(g)) groupIds.push(g);
    }
    const roll = prng.next();
    const status: UserStatus = roll < disabledUserFraction ? 'DISABLED' : roll < disabledUserFraction + unverifiedUserFraction ? 'UNVERIFIED' : 'ENABLED';
    const apikeys: ApiKey[] = [];
    if (prng.next() < usersWithApikeyFraction) {
      apikeys.push({ id: newApikeyId(), name: 'default', description: '', status: 'ENABLED', nonce: secrets.newNonce(), createdAt: at, modifiedAt: at });
      apikeyCount++;
    }
    const customData: JsonObject = {
      plan: prng.pick(words.plans), signup_source: prng.pick(words.signupSources), locale: prng.pick(words.locales),
    };
    if (company !== undefined) customData['company_name'] = company.org.name;
    users.push({
      id: newEntityId(), email: `${first}.${last}${i}@${domain}`.toLowerCase(), name: `${first} ${last}`, status, customData,
      passwordHash: passwordHashes[i % passwordHashes.length]!,
      organization: company?.org.id ?? defaultOrg.id, applications: apps, groups: groupIds, apikeys, createdAt: at, modifiedAt: at,
    });
  }
  return { meta, organizations, applications, groups, users, groupsByApplication, apikeyCount };
}

/** The same fields the service searches, one string per User, so the counts below are what GET /users/search must answer. */
export function benchHaystack(user: User): string {
  const parts = [user.email, user.name, user.id, ...user.apikeys.map((k) => k.id)];
  const company = user.customData?.['company_name'];
  if (typeof company === 'string') parts.push(company);
  return parts.join('\u0000').toLowerCase();
}

/** Stops one past `cap`: a term over the limit is dropped whatever its exact count. */
function countMatches(haystacks: readonly string[], term: string, cap: number): number {
  let n = 0;
  for (const h of haystacks) if (h.includes(term) && ++n > cap) break;
  return n;
}

/** Candidate terms of several kinds, each kept only if a full scan finds 1..searchMatchesMax users. */
function pickSearchTerms(built: Built, prng: Prng): SearchTermFixture[] {
  const { users } = built;
  const haystacks = users.map(benchHaystack);
  const smallCompanies = built.organizations.slice(-Math.max(1, Math.floor(built.organizations.length / 3)));
  const candidates: Array<{ term: string; kind: string }> = [];
  const seen = new Set<string>();
  for (let c = 0; c < searchCandidates; c++) {
    const user = users[prng.int(1, users.length - 1)] ?? users[0]!;
    const local = user.email.slice(0, user.email.indexOf('@'));
    let term: string;
    let kind: string;
    switch (c % 6) {
      case 0: { kind = 'email'; const at = prng.int(0, Math.max(0, local.length - 6)); term = local.slice(at, at + prng.int(5, 8)); break; }
      case 1: { kind = 'email'; term = user.email; break; }
      case 2: { kind = 'name+digits'; term = `${local.slice(local.indexOf('.') + 1, local.indexOf('.') + 4)}${local.replace(/^\D+/, '').slice(0, 4)}`; break; }
      case 3: { kind = 'company'; const org = prng.pick(smallCompanies); const name = org.name.toLowerCase(); const at = prng.int(0, Math.max(0, name.length - 10)); term = name.slice(at, at + prng.int(8, 12)); break; }
      case 4: { kind = 'id'; const at = prng.int(0, user.id.length - 5); term = user.id.slice(at, at + prng.int(4, 6)).toLowerCase(); break; }
      default: {
        const key = user.apikeys[0];
        if (key === undefined) { kind = 'email'; term = local.slice(0, 3); break; }
        kind = 'apikey'; const at = prng.int(0, key.id.length - 6); term = key.id.slice(at, at + 6).toLowerCase();
      }
    }
    term = term.toLowerCase();
    if (term.length < 3 || seen.has(term)) continue;
    seen.add(term);
    candidates.push({ term, kind });
  }
  const kept: SearchTermFixture[] = [];
  for (const { term, kind } of candidates) {
    if (kept.length >= searchTermsKept) break;
    const matches = countMatches(haystacks, term, searchMatchesMax);
    if (matches >= 1 && matches <= searchMatchesMax) kept.push({ term, kind, matches });
  }
  return kept;
}

function pickWritable(candidates: readonly User[], prng: Prng): string[] {
  if (candidates.length === 0) return [];
  return Array.from({ length: fixtureWritableUserIds }, () => prng.pick(candidates).id);
}

function buildFixtures(built: Built, prng: Prng): Fixtures {
  const regular = built.users.slice(1);
  const usable = regular.filter((u) => u.status !== 'DISABLED');
  const credential = (u: User): Credential => ({ email: u.email, application: u.applications[0]! });
  // Consecutive Users, so that consecutive requests of scenario C carry different hashes (see passwordHashesDistinct).
  const distinct = usable.slice(0, fixtureDistinctCredentialsMax).map(credential);
  const distinctApikeys: ApikeyFixture[] = [];
  for (const u of usable) {
    const key = u.apikeys[0];
    if (key !== undefined) distinctApikeys.push({ keyId: key.id, nonce: key.nonce, application: u.applications[0]! });
    if (distinctApikeys.length >= fixtureDistinctApikeys) break;
  }
  const apikeys = distinctApikeys.slice(0, fixtureApikeys);
  const writeApplication = [...built.groupsByApplication.keys()][0]!;
  return {
    users: regular.length, password: benchPassword, adminEmail: benchAdminEmail, baseApplication: built.meta.baseApplication,
    writeApplication, apikeys,
    repeatedCredentials: Array.from({ length: Math.min(fixtureRepeatedCredentials, usable.length) }, () => credential(prng.pick(usable))),
    distinctCredentials: distinct,
    userIds: Array.from({ length: Math.min(fixtureUserIds, regular.length) }, () => prng.pick(regular).id),
    distinctApikeys,
    searchTerms: pickSearchTerms(built, prng),
    // Drawn last, so that the picks above (and so today's rows) stay as they were.
    randomUserIds: Array.from({ length: Math.min(fixtureRandomUserIds, regular.length) }, () => prng.pick(regular).id),
    companyNames: built.organizations.slice(1).map((o) => o.name),
    writableUserIds: pickWritable(usable.slice(fixtureDistinctCredentialsMax).filter((u) => u.apikeys.length === 0), prng),
  };
}

/** Seeds dataDir with opts.users Users (plus the admin) as one snapshot; optionally writes the fixtures file. */
export async function seedDataDir(opts: SeedOptions): Promise<SeedSummary> {
  const log = opts.log ?? (() => undefined);
  if (!Number.isSafeInteger(opts.users) || opts.users < 1) throw new SeedError('--users must be a positive integer');
  const started = performance.now();
  prepareDataDir(opts.dataDir, opts.force);
  const secrets = ApiKeySecrets.load({ keyFile: opts.keyFile });
  const prng = new Prng(opts.seed ?? defaultSeed);

  const hashStarted = performance.now();
  // Packed, as the State holds them and its snapshots write them: a load then packs nothing (src/auth/packed-hash.ts).
  const passwordHashes = (await hashBenchPassword(passwordHashesDistinct)).map(packPasswordHash);
  const hashMs = performance.now() - hashStarted;

  const buildStarted = performance.now();
  const built = buildState(opts.users, prng, passwordHashes, secrets);
  const buildMs = performance.now() - buildStarted;
  log(`built ${built.users.length.toLocaleString('en-US')} users in ${(buildMs / 1000).toFixed(1)} s; writing the snapshot`);

  // What a directory the service has run on holds besides its data, made by its first start: the signing keys and
  // the server key's fingerprint. A start of the seeded directory is then a restart, as in production.
  const sealer = new Sealer(secrets.subkey(sealerSubkeyLabel));
  const keysAt = built.applications[0]!.createdAt;
  const signingKeys = (await Promise.all(signingAlgs.map((alg) => newSigningKey(alg, sealer)))).map((key) => ({ ...key, createdAt: keysAt }));
  const meta: Meta = { ...built.meta, signingKeys };
  await writeKeyFingerprint(new NodeStorage(), opts.dataDir, secrets.fingerprint());

  // A plausible seq: one bootstrap record (meta, default Organization, base Application, admin), one for the
  // signing keys, then one record per Application, Group and User (a company's Organization shares its first User's record).
  const baseSeq = 2 + (built.applications.length - 1) + built.groups.length + (built.users.length - 1);
  const source: SnapshotSource = {
    baseSeq,
    sections: [
      { kind: 'meta', entries: () => [meta].values() },
      { kind: 'organization', entries: () => built.organizations.values() },
      { kind: 'application', entries: () => built.applications.values() },
      { kind: 'group', entries: () => built.groups.values() },
      { kind: 'user', entries: () => built.users.values() },
    ],
    shareStrings: withSharedStrings,
  };
  const writeStarted = performance.now();
  const written = await writeSnapshot(new NodeStorage(), opts.dataDir, source);
  const writeMs = performance.now() - writeStarted;

  const fixturesStarted = performance.now();
  if (opts.fixturesFile !== undefined) {
    const fixtures = buildFixtures(built, prng);
    mkdirSync(dirname(opts.fixturesFile), { recursive: true });
    writeFileSync(opts.fixturesFile, JSON.stringify(fixtures));
    log(`fixtures: ${fixtures.searchTerms.length} search terms, ${fixtures.apikeys.length} API keys, ${fixtures.distinctCredentials.length} distinct credentials`);
  }
  const fixturesMs = performance.now() - fixturesStarted;
  return {
    users: built.users.length, organizations: built.organizations.length, applications: built.applications.length,
    groups: built.groups.length, apikeys: built.apikeyCount, snapshotPath: written.path, snapshotBytes: written.bytes,
    baseSeq, hashMs, buildMs, writeMs, fixturesMs, totalMs: performance.now() - started,
  };
}

/**
 * A search term as people type them (F' and the micro suite's search group): a first or last name, the first 1-6
 * characters of an address, a company's name or its start. 1-2 character terms match hundreds of thousands of Users.
 */
export function randomSearchTerm(f: Fixtures, prng: Prng, n: number): { term: string; kind: string } {
  const local = prng.pick(f.distinctCredentials).email.split('@')[0]!;
  switch (n % 3) {
    case 0: {
      const [first = local, last = local] = local.split('.');
      return { term: prng.int(0, 1) === 0 ? first : last.replace(/\d+$/, ''), kind: 'name' };
    }
    case 1: return { term: local.slice(0, prng.int(1, 6)), kind: 'email prefix' };
    default: {
      const company = (f.companyNames.length === 0 ? local : prng.pick(f.companyNames)).toLowerCase();
      return { term: prng.int(0, 1) === 0 ? company.split(' ')[0]! : company.slice(0, prng.int(3, company.length)), kind: 'company' };
    }
  }
}
