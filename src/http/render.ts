// Explicit public representations: every field that leaves the process is chosen here; hashes and nonces cannot leak.

import { renderCacheBytesMax, renderCacheEntryBytesMax, renderCacheFullAdmitEvery, renderSightingBits, renderSightingsMax } from '../config/limits.js';
import type { ApiKey, Application, Group, Organization, User } from '../domain/entities.js';
import { defaultRoles } from '../domain/roles.js';
import { isPlainJsonText } from '../domain/json-text.js';
import { formatTimestamp, writeTimestamp } from '../domain/time.js';
import { Sightings, textHash } from '../auth/sightings.js';
import { tokenDefaults } from '../store/decide.js';
import type { State } from '../store/state.js';
import { RenderCache } from './render-cache.js';

/**
 * The kept renderings of one User. Entities are immutable, so a rendering kept against the User object itself
 * is invalidated by any change to the User; `deps` are the Applications, Groups and Organization it showed.
 * checkedAt: the State's catalogVersion when deps were last found current; while it has not moved, they still
 * are, and a hit asks nothing else (no lookup per Application, Group and Organization per reply).
 * Kept as strings: the front end encodes a reply into one reused buffer, which costs less than a buffer of
 * its own per rendering (an allocation outside the heap, and its release).
 */
interface KeptUser {
  /** GET of a User. */
  full: string | undefined;
  /** POST /authenticate. */
  authenticated: string | undefined;
  /** UTF-16 units held: one byte each in the usual one-byte strings, two in the others. */
  bytes: number;
  readonly deps: readonly unknown[];
  checkedAt: number;
}

/** The rendering kept for `key`, made by `make` on first ask: entities are immutable, so a new version is a new key. */
function memo<K extends object>(kept: WeakMap<K, string>, key: K, make: (key: K) => string): string {
  let json = kept.get(key);
  if (json === undefined) {
    json = make(key);
    kept.set(key, json);
  }
  return json;
}

/**
 * s as it stands between the quotes of a JSON string literal: plain text as it is (no new string), other text as
 * JSON.stringify escapes it. A rendering writes its quotes into the constants around each field ('","email":"').
 */
function stringBody(s: string): string {
  return isPlainJsonText(s) ? s : JSON.stringify(s).slice(1, -1);
}

/** Renderings of up to this many pieces are joined from an array kept for their length (Pieces.text): at most ~130 KB of arrays. */
const joinArraysLengthMax = 180;

/**
 * The pieces of the User rendering under way: joined once into one flat string (text()), or handed over as they
 * are (pieces()) for a reply that is not kept. Concatenated step by step, a rendering made a string per step, and
 * the front end flattened the result once more to encode it. One list serves every rendering (they are
 * synchronous and never nest), so it is not grown again for each.
 */
class Pieces {
  private readonly list: string[] = [];
  private count = 0;
  /** No item of the list under way yet (startList). */
  private first = true;
  /** By length, up to joinArraysLengthMax: the arrays text() joins. */
  private readonly joinArrays: string[][] = [];

  /** Starts a rendering: whatever a rendering that threw left behind is dropped. */
  begin(): this {
    this.count = 0;
    return this;
  }

  /** Up to three pieces at once: a rest parameter would make an array per call. */
  add(a: string, b?: string, c?: string): void {
    this.list[this.count++] = a;
    if (b !== undefined) this.list[this.count++] = b;
    if (c !== undefined) this.list[this.count++] = c;
  }

  /** `open` (ending in a bracket): the items that follow are separated by commas (nextItem). */
  startList(open: string): void {
    this.add(open);
    this.first = true;
  }

  /** Before each item of a list: a comma, but for its first. */
  nextItem(): void {
    if (this.first) this.first = false;
    else this.add(',');
  }

  timestamp(micros: number): void {
    this.count = writeTimestamp(this.list, this.count, micros);
  }

  /**
   * The rendering, and the list made ready for the next one. Joined from an array of exactly its length, kept per
   * length: cutting the list to length and growing it again made a new backing store for every rendering.
   */
  text(): string {
    const n = this.count;
    this.count = 0;
    if (n === 1) return this.list[0]!;
    if (n > joinArraysLengthMax) {
      this.list.length = n;
      return this.list.join('');
    }
    let exact = this.joinArrays[n];
    if (exact === undefined) this.joinArrays[n] = exact = new Array<string>(n).fill('');
    for (let i = 0; i < n; i++) exact[i] = this.list[i]!;
    return exact.join('');
  }

  /** The rendering's pieces as they are, none joined or copied: for a reply that sends them where they stand. */
  pieces(): string[] {
    const n = this.count;
    this.count = 0;
    return this.list.slice(0, n);
  }
}

const applicationBrief = (a: Application): string => JSON.stringify({ id: a.id, name: a.name, status: a.status });
const groupBrief = (g: Group): string => JSON.stringify({ id: g.id, name: g.name, status: g.status, application: g.application });
const organizationIdName = (o: Organization): string => JSON.stringify({ id: o.id, name: o.name });
const organizationWithData = (o: Organization): string => JSON.stringify({ id: o.id, name: o.name, custom_data: o.customData });

export class Renderer {
  /**
   * One string per live Application and Group, dropped with it: bounded by what the State holds itself (about
   * its size again), and it spares a full User rendering a JSON.stringify of every custom_data it embeds.
   */
  private readonly applicationJson = new WeakMap<Application, string>();
  private readonly groupJson = new WeakMap<Group, string>();
  /** The same for the briefs a User's renderings embed: id, name and status (a Group's with its Application; an Organization's full brief with its custom_data). */
  private readonly applicationBriefJson = new WeakMap<Application, string>();
  private readonly groupBriefJson = new WeakMap<Group, string>();
  private readonly organizationBriefJson = new WeakMap<Organization, string>();
  private readonly organizationIdNameJson = new WeakMap<Organization, string>();
  /** Bounded by bytes (renderCacheBytesMax): a User's full rendering embeds the custom_data of all its memberships. */
  private readonly keptUsers = new RenderCache<User, KeptUser>(renderCacheBytesMax, renderCacheEntryBytesMax, renderCacheFullAdmitEvery);
  /** Users rendered once, by id: a rendering is kept from a User's second one on, so one-off reads of many Users churn nothing. */
  private readonly renderedOnce = new Sightings(renderSightingBits, renderSightingsMax);

  /** `"href":"<public url>/users/user/`, the URL escaped as a JSON string's text: a User's href opens so, and after a comma an API Key's. */
  private readonly userHrefOpen: string;
  private readonly out = new Pieces();

  constructor(private readonly publicUrl: string, private readonly state: State) {
    this.userHrefOpen = `"href":"${stringBody(`${publicUrl}/users/user/`)}`;
  }

  /** Bytes the kept User renderings hold (the metric authd_render_cache_bytes). */
  get cacheBytes(): number {
    return this.keptUsers.bytes;
  }

  applicationHref(id: string): string { return `${this.publicUrl}/applications/application/${id}`; }
  groupHref(id: string): string { return `${this.publicUrl}/groups/group/${id}`; }
  organizationHref(id: string): string { return `${this.publicUrl}/organizations/organization/${id}`; }

  application(app: Application): string {
    return memo(this.applicationJson, app, this.renderApplication);
  }

  group(group: Group): string {
    return memo(this.groupJson, group, this.renderGroup);
  }

  /** The answer of the change that set an Application's HS256 secret: the only time the secret is shown. */
  applicationWithSecret(app: Application, jwtSecret: string): string {
    return this.renderApplicationWith(app, jwtSecret);
  }

  /** Made once, as fields: a kept rendering's lookup allocates no closure. */
  private readonly renderApplication = (a: Application): string => this.renderApplicationWith(a, undefined);

  private renderApplicationWith(a: Application, jwtSecret: string | undefined): string {
    const { enabled, ttl, alg } = a.tokens ?? tokenDefaults;
    return JSON.stringify({
      id: a.id, name: a.name, description: a.description, custom_data: a.customData, status: a.status,
      tokens: { enabled, ttl, alg }, ...(jwtSecret === undefined ? {} : { jwt_secret: jwtSecret }),
      href: this.applicationHref(a.id),
      created_at: formatTimestamp(a.createdAt), modified_at: formatTimestamp(a.modifiedAt),
    });
  }

  private readonly renderGroup = (g: Group): string => JSON.stringify({
    id: g.id, name: g.name, description: g.description, custom_data: g.customData,
    status: g.status, application: g.application, href: this.groupHref(g.id),
    created_at: formatTimestamp(g.createdAt), modified_at: formatTimestamp(g.modifiedAt),
  });

  organization(org: Organization): string {
    return JSON.stringify({
      id: org.id, name: org.name, description: org.description, custom_data: org.customData, status: org.status,
      href: this.organizationHref(org.id),
      created_at: formatTimestamp(org.createdAt), modified_at: formatTimestamp(org.modifiedAt),
    });
  }

  /** The secret is passed in only by the two responses the spec lets carry it (API Key create and update). */
  apikey(userId: string, key: ApiKey, secret?: string): string {
    this.out.begin();
    this.apikeyPieces(userId, key, secret);
    return this.out.text();
  }

  /** An API Key's JSON, into the rendering under way (a full User's list of keys) or on its own (apikey()). */
  private apikeyPieces(userId: string, key: ApiKey, secret: string | undefined): void {
    const out = this.out;
    const id = stringBody(key.id);
    out.add('{"id":"', id, '","name":"');
    out.add(stringBody(key.name), '","description":"', stringBody(key.description));
    out.add('","status":"', stringBody(key.status), '"');
    if (key.roles !== undefined) out.add(',"roles":', JSON.stringify(key.roles));
    if (secret !== undefined) out.add(',"secret":"', stringBody(secret), '"');
    out.add(',', this.userHrefOpen, stringBody(userId));
    out.add('/apikey/', id, '"}');
  }

  /** The fields every rendering of a User starts with, up to its custom_data, without the closing brace. */
  private userHead(user: User): void {
    const out = this.out;
    const email = stringBody(user.email);
    out.add('{"id":"', stringBody(user.id), '","username":"');
    out.add(email, '","email":"', email);
    out.add('","name":"', stringBody(user.name), '","status":"');
    out.add(stringBody(user.status), '","custom_data":', JSON.stringify(user.customData ?? null));
  }

  /** `roles` only on Users of the base Application, the only ones they apply to (admin until narrowed); then href and times, and the closing brace. */
  private userTail(user: User): void {
    const out = this.out;
    if (this.state.isBaseUser(user)) out.add('"roles":', JSON.stringify(user.roles ?? defaultRoles), ',');
    out.add(this.userHrefOpen, stringBody(user.id), '","created_at":"');
    out.timestamp(user.createdAt);
    out.add('","modified_at":"');
    out.timestamp(user.modifiedAt);
    out.add('"}');
  }

  private apikeys(user: User): void {
    const out = this.out;
    out.startList('[');
    // Indexed loops here and below: an iterator's result objects were a tenth of a search page's garbage.
    const keys = user.apikeys;
    for (let i = 0; i < keys.length; i++) {
      out.nextItem();
      this.apikeyPieces(user.id, keys[i]!, undefined);
    }
    out.add(']');
  }

  /** The User's Applications that still exist: in full, or in brief (id, name, status). */
  private applicationsOf(user: User, brief: boolean): void {
    const out = this.out;
    out.startList(',"applications":[');
    const ids = user.applications;
    for (let i = 0; i < ids.length; i++) {
      const app = this.state.application(ids[i]!);
      if (app === undefined) continue;
      out.nextItem();
      if (brief) out.add(memo(this.applicationBriefJson, app, applicationBrief));
      else out.add(this.application(app));
    }
    out.add(']');
  }

  /** The User's Groups that still exist: in full, or in brief (id, name, status, Application). */
  private groupsOf(user: User, brief: boolean): void {
    const out = this.out;
    out.startList(',"groups":[');
    const ids = user.groups;
    for (let i = 0; i < ids.length; i++) {
      const group = this.state.group(ids[i]!);
      if (group === undefined) continue;
      out.nextItem();
      if (brief) out.add(memo(this.groupBriefJson, group, groupBrief));
      else out.add(this.group(group));
    }
    out.add(']');
  }

  private organizationBrief(user: User): string {
    const org = this.state.organization(user.organization);
    return org === undefined ? 'null' : memo(this.organizationBriefJson, org, organizationWithData);
  }

  /**
   * Create, update, get, list-all and search: applications and groups as full objects, the Organization in brief.
   * As large as every custom_data it embeds: listings bound it per page (src/http/paging.ts).
   */
  userFull(user: User): string {
    this.out.begin();
    this.userFullPieces(user);
    return this.out.text();
  }

  /**
   * userFull for a page of Users, in pieces: neither the Applications' and Groups' kept renderings nor the User's
   * own fields are copied into a string of its own; the front end encodes the pieces straight into the reply.
   */
  userFullParts(user: User): string[] {
    this.out.begin();
    this.userFullPieces(user);
    return this.out.pieces();
  }

  private userFullPieces(user: User): void {
    const out = this.out;
    this.userHead(user);
    out.add(',"organization":', this.organizationBrief(user));
    this.applicationsOf(user, false);
    this.groupsOf(user, false);
    out.add(',"apikeys":');
    this.apikeys(user);
    out.add(',');
    this.userTail(user);
  }

  /**
   * The answer of POST /authenticate: the User and its own custom_data, its memberships by id, name and status
   * (a Group also by its Application), its Organization and API Keys by id and name (keys with their status).
   * No custom_data or description of anything else: an authentication answers at high rate, and embedding
   * every Application's and Group's custom_data made one answer megabytes; a client that needs a Group's
   * custom_data reads GET /groups/group/{id}.
   */
  userAuthenticated(user: User): string {
    const out = this.out.begin();
    this.userHead(user);
    const org = this.state.organization(user.organization);
    out.add(',"organization":', org === undefined ? 'null' : memo(this.organizationIdNameJson, org, organizationIdName));
    this.applicationsOf(user, true);
    this.groupsOf(user, true);
    out.startList(',"apikeys":[');
    const keys = user.apikeys;
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i]!;
      out.nextItem();
      out.add('{"id":"', stringBody(k.id), '","name":"');
      out.add(stringBody(k.name), '","status":"', stringBody(k.status));
      out.add('"}');
    }
    out.add('],');
    this.userTail(user);
    return out.text();
  }

  /** `?minimal=1` of GET /users and searches: the full representation without applications, groups and API Keys. */
  userMinimal(user: User): string {
    const out = this.out.begin();
    this.userHead(user);
    out.add(',"organization":', this.organizationBrief(user), ',');
    this.userTail(user);
    return out.text();
  }

  /**
   * userFull, kept once asked again: GET of a User is answered again and again. A User asked for the first time
   * is answered in pieces (userFullParts): nothing of it is kept, so nothing is joined.
   */
  userFullKept(user: User): string | readonly string[] {
    const held = this.current(user);
    if (held?.full !== undefined) return held.full;
    if (held === undefined && !this.renderedOnce.repeated(textHash(user.id))) return this.userFullParts(user);
    return this.keep(user, held, 'full', this.userFull(user));
  }

  /** userAuthenticated, kept once asked again: the hot path of a recognised authentication renders nothing. */
  userAuthenticatedKept(user: User): string {
    const held = this.current(user);
    if (held?.authenticated !== undefined) return held.authenticated;
    const text = this.userAuthenticated(user);
    if (held === undefined && !this.renderedOnce.repeated(textHash(user.id))) return text;
    return this.keep(user, held, 'authenticated', text);
  }

  /** Keeps one rendering of a User (from its second ask on), counted against the cache's bytes. */
  private keep(user: User, held: KeptUser | undefined, slot: 'full' | 'authenticated', text: string): string {
    const kept = held ?? this.keptEntry(user);
    kept[slot] = text;
    kept.bytes += text.length;
    this.keptUsers.keep(user, kept);
    return text;
  }

  /** The kept renderings of this User if what they show is still current; stale ones are dropped. */
  private current(user: User): KeptUser | undefined {
    const kept = this.keptUsers.get(user);
    if (kept === undefined) return undefined;
    const version = this.state.catalogVersion;
    if (kept.checkedAt === version) return kept;
    if (this.depsCurrent(user, kept.deps)) {
      kept.checkedAt = version;
      return kept;
    }
    this.keptUsers.delete(user);
    return undefined;
  }

  /** A new empty entry for this User, with what its renderings will show. */
  private keptEntry(user: User): KeptUser {
    const deps: unknown[] = [];
    for (const id of user.applications) deps.push(this.state.application(id));
    for (const id of user.groups) deps.push(this.state.group(id));
    deps.push(this.state.organization(user.organization));
    return { full: undefined, authenticated: undefined, bytes: 0, deps, checkedAt: this.state.catalogVersion };
  }

  /** Whether the Applications, Groups and Organization a kept rendering used are still the current objects (no allocation: a hit is the hot path). */
  private depsCurrent(user: User, deps: readonly unknown[]): boolean {
    const apps = user.applications;
    const groups = user.groups;
    if (deps.length !== apps.length + groups.length + 1) return false;
    for (let i = 0; i < apps.length; i++) if (deps[i] !== this.state.application(apps[i]!)) return false;
    for (let i = 0; i < groups.length; i++) if (deps[apps.length + i] !== this.state.group(groups[i]!)) return false;
    return deps[deps.length - 1] === this.state.organization(user.organization);
  }

  /**
   * Per-Application, per-Group and per-Organization listings: memberships as ids; with `minimal`, without
   * applications, groups and API Keys.
   */
  userIds(user: User, minimal = false): string {
    const out = this.out.begin();
    this.userHead(user);
    out.add(',"organization":', JSON.stringify(user.organization), ',');
    if (!minimal) {
      out.add('"applications":', JSON.stringify(user.applications));
      out.add(',"groups":', JSON.stringify(user.groups), ',"apikeys":');
      this.apikeys(user);
      out.add(',');
    }
    this.userTail(user);
    return out.text();
  }
}
