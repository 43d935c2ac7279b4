// The in-memory state: entity Maps and their indexes, changed only by apply(record), which is pure and deterministic.

import type {
  Application, EntityKind, Group, LogRecord, Meta, Op, Organization, User,
} from '../domain/entities.js';
import { UserSearchIndex } from './search.js';

type Section = { kind: EntityKind; entries: () => Iterator<unknown> };

function addTo(index: Map<string, Set<string>>, key: string, member: string): void {
  let set = index.get(key);
  if (set === undefined) index.set(key, (set = new Set()));
  set.add(member);
}

function removeFrom(index: Map<string, Set<string>>, key: string, member: string): void {
  const set = index.get(key);
  if (set === undefined) return;
  set.delete(member);
  if (set.size === 0) index.delete(key);
}

const noIds: ReadonlySet<string> = new Set();

export function groupNameKey(applicationId: string, name: string): string {
  return `${applicationId}\u0000${name.toLowerCase()}`;
}

export class State {
  lastSeq = 0;
  /** Time of the newest applied record, so the clock never hands out an earlier one after a restart. */
  lastAt = 0;
  meta: Meta | undefined;

  private readonly applications = new Map<string, Application>();
  private readonly groups = new Map<string, Group>();
  private readonly organizations = new Map<string, Organization>();
  private readonly users = new Map<string, User>();

  private readonly userIdByEmail = new Map<string, string>();
  private readonly groupIdByName = new Map<string, string>();
  private readonly organizationIdByName = new Map<string, string>();
  private readonly groupIdsByApplication = new Map<string, Set<string>>();
  private readonly userIdsByApplication = new Map<string, Set<string>>();
  private readonly userIdsByGroup = new Map<string, Set<string>>();
  private readonly userIdsByOrganization = new Map<string, Set<string>>();
  private readonly userIdByApikey = new Map<string, string>();
  readonly search = new UserSearchIndex();

  // ---- the state machine ----

  apply(record: LogRecord): void {
    for (const op of record.ops) this.applyOp(op);
    this.lastSeq = record.seq;
    if (record.at > this.lastAt) this.lastAt = record.at;
  }

  private applyOp(op: Op): void {
    if (op.op === 'del') {
      switch (op.kind) {
        case 'application': return this.deleteApplication(op.id);
        case 'group': return this.deleteGroup(op.id);
        case 'organization': return this.deleteOrganization(op.id);
        case 'user': return this.deleteUser(op.id);
        case 'meta': this.meta = undefined; return;
      }
    }
    switch (op.kind) {
      case 'application': this.applications.set(op.value.id, op.value); return;
      case 'group': return this.putGroup(op.value);
      case 'organization': return this.putOrganization(op.value);
      case 'user': return this.putUser(op.value);
      case 'meta': this.meta = op.value; return;
    }
  }

  private deleteApplication(id: string): void {
    this.applications.delete(id);
    // Groups cannot outlive their Application; decide() deletes them in the same record, this only tidies.
    this.groupIdsByApplication.delete(id);
    for (const userId of [...(this.userIdsByApplication.get(id) ?? noIds)]) {
      const user = this.users.get(userId)!;
      this.putUser({ ...user, applications: user.applications.filter((a) => a !== id) });
    }
  }

  private putGroup(group: Group): void {
    const old = this.groups.get(group.id);
    if (old !== undefined) {
      this.groupIdByName.delete(groupNameKey(old.application, old.name));
      removeFrom(this.groupIdsByApplication, old.application, old.id);
    }
    this.groups.set(group.id, group);
    this.groupIdByName.set(groupNameKey(group.application, group.name), group.id);
    addTo(this.groupIdsByApplication, group.application, group.id);
  }

  /** Memberships of a deleted Group go with it: an effect derived only from state, so replaying it twice is harmless. */
  private deleteGroup(id: string): void {
    const old = this.groups.get(id);
    if (old === undefined) return;
    for (const userId of [...(this.userIdsByGroup.get(id) ?? noIds)]) {
      const user = this.users.get(userId)!;
      this.putUser({ ...user, groups: user.groups.filter((g) => g !== id) });
    }
    this.groups.delete(id);
    this.groupIdByName.delete(groupNameKey(old.application, old.name));
    removeFrom(this.groupIdsByApplication, old.application, id);
  }

  private putOrganization(org: Organization): void {
    const old = this.organizations.get(org.id);
    if (old !== undefined) this.organizationIdByName.delete(old.name.toLowerCase());
    this.organizations.set(org.id, org);
    this.organizationIdByName.set(org.name.toLowerCase(), org.id);
  }

  private deleteOrganization(id: string): void {
    const old = this.organizations.get(id);
    if (old === undefined) return;
    this.organizations.delete(id);
    this.organizationIdByName.delete(old.name.toLowerCase());
  }

  private putUser(user: User): void {
    const old = this.users.get(user.id);
    if (old !== undefined) this.unindexUser(old);
    this.users.set(user.id, user);
    this.userIdByEmail.set(user.email.toLowerCase(), user.id);
    for (const a of user.applications) addTo(this.userIdsByApplication, a, user.id);
    for (const g of user.groups) addTo(this.userIdsByGroup, g, user.id);
    addTo(this.userIdsByOrganization, user.organization, user.id);
    for (const key of user.apikeys) this.userIdByApikey.set(key.id, user.id);
    this.search.upsert(user);
  }

  private unindexUser(user: User): void {
    if (this.userIdByEmail.get(user.email.toLowerCase()) === user.id) this.userIdByEmail.delete(user.email.toLowerCase());
    for (const a of user.applications) removeFrom(this.userIdsByApplication, a, user.id);
    for (const g of user.groups) removeFrom(this.userIdsByGroup, g, user.id);
    removeFrom(this.userIdsByOrganization, user.organization, user.id);
    for (const key of user.apikeys) this.userIdByApikey.delete(key.id);
  }

  private deleteUser(id: string): void {
    const old = this.users.get(id);
    if (old === undefined) return;
    this.unindexUser(old);
    this.users.delete(id);
    this.search.remove(id);
  }

  // ---- snapshots ----

  loadSection(kind: EntityKind, values: readonly unknown[]): void {
    if (kind === 'user') this.search.defer();
    for (const value of values) {
      // The newest time in the snapshot, so the clock never goes back after a restart with nothing to replay.
      const modifiedAt = (value as { modifiedAt?: number }).modifiedAt;
      if (modifiedAt !== undefined && modifiedAt > this.lastAt) this.lastAt = modifiedAt;
      switch (kind) {
        case 'meta': this.meta = value as Meta; break;
        case 'application': this.applications.set((value as Application).id, value as Application); break;
        case 'group': this.putGroup(value as Group); break;
        case 'organization': this.putOrganization(value as Organization); break;
        case 'user': this.putUser(value as User); break;
      }
    }
  }

  finishLoad(baseSeq: number): void {
    this.lastSeq = baseSeq;
  }

  snapshotSource(): { baseSeq: number; sections: Section[] } {
    const meta = this.meta;
    return {
      baseSeq: this.lastSeq,
      sections: [
        { kind: 'meta', entries: () => (meta === undefined ? [] : [meta]).values() },
        { kind: 'organization', entries: () => this.organizations.values() },
        { kind: 'application', entries: () => this.applications.values() },
        { kind: 'group', entries: () => this.groups.values() },
        { kind: 'user', entries: () => this.users.values() },
      ],
    };
  }

  // ---- queries (the only way other layers read state) ----

  application(id: string): Application | undefined { return this.applications.get(id); }
  group(id: string): Group | undefined { return this.groups.get(id); }
  organization(id: string): Organization | undefined { return this.organizations.get(id); }
  user(id: string): User | undefined { return this.users.get(id); }

  userByEmail(email: string): User | undefined {
    const id = this.userIdByEmail.get(email.toLowerCase());
    return id === undefined ? undefined : this.users.get(id);
  }

  userByApikey(keyId: string): User | undefined {
    const id = this.userIdByApikey.get(keyId);
    return id === undefined ? undefined : this.users.get(id);
  }

  groupByName(applicationId: string, name: string): Group | undefined {
    const id = this.groupIdByName.get(groupNameKey(applicationId, name));
    return id === undefined ? undefined : this.groups.get(id);
  }

  organizationByName(name: string): Organization | undefined {
    const id = this.organizationIdByName.get(name.toLowerCase());
    return id === undefined ? undefined : this.organizations.get(id);
  }

  allApplications(): IterableIterator<Application> { return this.applications.values(); }
  allGroups(): IterableIterator<Group> { return this.groups.values(); }
  allOrganizations(): IterableIterator<Organization> { return this.organizations.values(); }
  allUsers(): IterableIterator<User> { return this.users.values(); }

  groupsOfApplication(applicationId: string): Group[] {
    return [...(this.groupIdsByApplication.get(applicationId) ?? noIds)].map((id) => this.groups.get(id)!);
  }

  /** In creation order, like every listing. */
  usersOfApplication(applicationId: string): User[] { return this.usersIn(this.userIdsByApplication.get(applicationId)); }
  usersOfGroup(groupId: string): User[] { return this.usersIn(this.userIdsByGroup.get(groupId)); }
  usersOfOrganization(orgId: string): User[] { return this.usersIn(this.userIdsByOrganization.get(orgId)); }

  countUsersOfApplication(applicationId: string): number { return this.userIdsByApplication.get(applicationId)?.size ?? 0; }
  countUsersOfOrganization(orgId: string): number { return this.userIdsByOrganization.get(orgId)?.size ?? 0; }

  counts(): { applications: number; groups: number; organizations: number; users: number } {
    return {
      applications: this.applications.size, groups: this.groups.size,
      organizations: this.organizations.size, users: this.users.size,
    };
  }

  private usersIn(ids: ReadonlySet<string> | undefined): User[] {
    if (ids === undefined) return [];
    const users = [...ids].map((id) => this.users.get(id)!);
    return users.sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1));
  }
}
