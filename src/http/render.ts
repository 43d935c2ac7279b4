// Explicit public representations: every field that leaves the process is chosen here; hashes and nonces cannot leak.

import { renderedUsersCachedMax } from '../config/limits.js';
import type { ApiKey, Application, Group, Organization, User } from '../domain/entities.js';
import { defaultRoles } from '../domain/roles.js';
import { formatTimestamp } from '../domain/time.js';
import type { State } from '../store/state.js';

/**
 * Entities are immutable, so a rendering cached against the object itself is invalidated by any change.
 * checkedAt: the State's catalogVersion when deps were last found current; while it has not moved, they
 * still are, and a hit asks nothing else (no lookup per Application, Group and Organization per reply).
 */
type FullUserCache = { readonly json: string; bytes: Buffer | undefined; readonly deps: readonly unknown[]; checkedAt: number };

export class Renderer {
  private readonly applicationJson = new WeakMap<Application, string>();
  private readonly groupJson = new WeakMap<Group, string>();
  /** Bounded (first in, first out): rendering every user once must not keep a gigabyte of JSON alive. */
  private readonly userFullJson = new Map<User, FullUserCache>();

  constructor(private readonly publicUrl: string, private readonly state: State) {}

  applicationHref(id: string): string { return `${this.publicUrl}/applications/application/${id}`; }
  groupHref(id: string): string { return `${this.publicUrl}/groups/group/${id}`; }
  userHref(id: string): string { return `${this.publicUrl}/users/user/${id}`; }
  apikeyHref(userId: string, keyId: string): string { return `${this.publicUrl}/users/user/${userId}/apikey/${keyId}`; }
  organizationHref(id: string): string { return `${this.publicUrl}/organizations/organization/${id}`; }

  application(app: Application): string {
    let json = this.applicationJson.get(app);
    if (json === undefined) {
      json = JSON.stringify({
        id: app.id, name: app.name, description: app.description, custom_data: app.customData, status: app.status,
        href: this.applicationHref(app.id),
        created_at: formatTimestamp(app.createdAt), modified_at: formatTimestamp(app.modifiedAt),
      });
      this.applicationJson.set(app, json);
    }
    return json;
  }

  group(group: Group): string {
    let json = this.groupJson.get(group);
    if (json === undefined) {
      json = JSON.stringify({
        id: group.id, name: group.name, description: group.description, custom_data: group.customData,
        status: group.status, application: group.application, href: this.groupHref(group.id),
        created_at: formatTimestamp(group.createdAt), modified_at: formatTimestamp(group.modifiedAt),
      });
      this.groupJson.set(group, json);
    }
    return json;
  }

  organization(org: Organization): string {
    return JSON.stringify({
      id: org.id, name: org.name, description: org.description, custom_data: org.customData, status: org.status,
      href: this.organizationHref(org.id),
      created_at: formatTimestamp(org.createdAt), modified_at: formatTimestamp(org.modifiedAt),
    });
  }

  /** The secret is passed in only by the two responses the spec lets carry it (API Key create and update). */
  apikey(userId: string, key: ApiKey, secret?: string): string {
    const out: Record<string, unknown> = {
      id: key.id, name: key.name, description: key.description, status: key.status,
    };
    if (key.roles !== undefined) out['roles'] = key.roles;
    if (secret !== undefined) out['secret'] = secret;
    out['href'] = this.apikeyHref(userId, key.id);
    return JSON.stringify(out);
  }

  private userHead(user: User): string {
    return JSON.stringify({
      id: user.id, username: user.email, email: user.email, name: user.name, status: user.status,
      custom_data: user.customData,
    }).slice(0, -1);
  }

  /** `roles` only on Users of the base Application, the only ones they apply to: absent means admin. */
  private userTail(user: User): string {
    const base = this.state.meta?.baseApplication;
    const roles = base !== undefined && user.applications.includes(base) ? user.roles ?? defaultRoles : undefined;
    return JSON.stringify({
      roles,
      href: this.userHref(user.id),
      created_at: formatTimestamp(user.createdAt), modified_at: formatTimestamp(user.modifiedAt),
    }).slice(1);
  }

  private apikeys(user: User): string {
    return `[${user.apikeys.map((k) => this.apikey(user.id, k)).join(',')}]`;
  }

  /**
   * Create, get, list-all and search: applications and groups as full objects, the Organization in brief.
   * `remember` false renders without caching (a full listing touches every user once).
   */
  userFull(user: User, remember = true): string {
    const cached = this.cachedFull(user);
    if (cached !== undefined) return cached.json;
    const checkedAt = this.state.catalogVersion;
    const apps = user.applications.map((id) => this.state.application(id));
    const groups = user.groups.map((id) => this.state.group(id));
    const org = this.state.organization(user.organization);
    const orgJson = org === undefined
      ? 'null'
      : JSON.stringify({ id: org.id, name: org.name, custom_data: org.customData });
    const json = `${this.userHead(user)},"organization":${orgJson}` +
      `,"applications":[${apps.filter((a) => a !== undefined).map((a) => this.application(a)).join(',')}]` +
      `,"groups":[${groups.filter((g) => g !== undefined).map((g) => this.group(g)).join(',')}]` +
      `,"apikeys":${this.apikeys(user)},${this.userTail(user)}`;
    if (remember) {
      if (this.userFullJson.size >= renderedUsersCachedMax) this.userFullJson.delete(this.userFullJson.keys().next().value!);
      this.userFullJson.set(user, { json, bytes: undefined, deps: [...apps, ...groups, org], checkedAt });
    }
    return json;
  }

  /**
   * The same as UTF-8, kept with the text once asked for: the answers of POST /authenticate and GET of a
   * User, sent again and again, are then copied instead of encoded (a User with a few Applications and
   * Groups is a couple of KB, a noticeable part of a recognised authentication to encode each time).
   */
  userFullBytes(user: User): Buffer {
    let cached = this.cachedFull(user);
    if (cached === undefined) {
      this.userFull(user);
      cached = this.userFullJson.get(user)!;
    }
    cached.bytes ??= Buffer.from(cached.json, 'utf8');
    return cached.bytes;
  }

  /** The kept rendering of this User, if what it shows is still current. */
  private cachedFull(user: User): FullUserCache | undefined {
    const cached = this.userFullJson.get(user);
    if (cached === undefined) return undefined;
    const version = this.state.catalogVersion;
    if (cached.checkedAt === version) return cached;
    if (!this.depsCurrent(user, cached.deps)) return undefined;
    cached.checkedAt = version;
    return cached;
  }

  /** Whether the Applications, Groups and Organization a cached rendering used are still the current objects (no allocation: a hit is the hot path). */
  private depsCurrent(user: User, deps: readonly unknown[]): boolean {
    const apps = user.applications;
    const groups = user.groups;
    if (deps.length !== apps.length + groups.length + 1) return false;
    for (let i = 0; i < apps.length; i++) if (deps[i] !== this.state.application(apps[i]!)) return false;
    for (let i = 0; i < groups.length; i++) if (deps[apps.length + i] !== this.state.group(groups[i]!)) return false;
    return deps[deps.length - 1] === this.state.organization(user.organization);
  }

  /** Per-Application, per-Group and per-Organization listings: memberships as ids. */
  userIds(user: User): string {
    return `${this.userHead(user)},"organization":${JSON.stringify(user.organization)}` +
      `,"applications":${JSON.stringify(user.applications)},"groups":${JSON.stringify(user.groups)}` +
      `,"apikeys":${this.apikeys(user)},${this.userTail(user)}`;
  }
}
