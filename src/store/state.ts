// The in-memory state: entity Maps and their indexes, changed only by apply(record), which is pure and deterministic.

import { packPasswordHash } from '../auth/packed-hash.js';
import { memberIndexUsersPerStep, memberTrimIdsPerStep, pageSubsetWalkSlotsMin, searchIndexDocsPerStep } from '../config/limits.js';
import { emailKey, foldText } from '../domain/email.js';
import type {
  Application, EntityKind, Group, LogRecord, Meta, Op, Organization, User,
} from '../domain/entities.js';
import { shareEmptyLists, withSharedStrings, type ShareList, type ShareString } from './compact.js';
import { byCreation, CreationOrder, precedes, resolvePage, sliceInCreationOrder, type Created, type Lookup, type Page, type PagePosition } from './creation-order.js';
import { MemberIndex } from './members.js';
import { PagedSearch } from './search-page.js';
import { UserSearchIndex } from './search.js';
import { StringMap } from './string-map.js';

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

const noIds: readonly string[] = [];
const noIdSet: ReadonlySet<string> = new Set();

/** Moves `id` in `index` from the keys it had to the keys it has, touching only the difference (lists are short). */
function reindex(index: MemberIndex, id: string, had: readonly string[], has: readonly string[]): void {
  for (const key of has) if (!had.includes(key)) index.add(key, id);
  for (const key of had) if (!has.includes(key)) index.remove(key, id);
}

/** Keeps a kind's creation order in step with a put: a new entity is added, one whose createdAt changed (an import) moves. */
function trackOrder(order: CreationOrder, old: { id: string; createdAt: number } | undefined, value: { id: string; createdAt: number }): void {
  if (old !== undefined) {
    if (old.createdAt === value.createdAt) return;
    order.remove(old.id, old.createdAt);
  }
  order.add(value.id, value.createdAt);
}

/** Entity ids of a subset (the Users of one Application, say), as pages read them. */
type Subset = { readonly size: number; has(id: string): boolean; [Symbol.iterator](): Iterator<string> };

/**
 * A page of a subset (the Users of one Application, say) in creation order. Walking the kind's whole
 * order from the cursor and keeping members costs about limit x n / k slots for a subset of k spread
 * evenly among n; sorting the subset costs k log k. The walk is tried within the sort's budget and the
 * sort done if the walk runs out (a small subset, or one bunched far from the cursor), so a page never
 * costs much more than the cheaper of the two.
 */
function pageOfSubset<T extends Created>(
  ids: Subset | undefined, order: CreationOrder, map: Lookup<T>, after: PagePosition | undefined, limit: number, offset: number,
): Page<T> {
  if (offset > 0) return offsetPageOfSubset(ids, order, map, offset, limit);
  if (ids === undefined || ids.size === 0) return { items: [], more: false };
  const sortCost = Math.ceil(ids.size * Math.log2(ids.size + 1)) + pageSubsetWalkSlotsMin;
  const walked = order.after(after, limit, (id) => ids.has(id), sortCost);
  if (walked !== undefined) return resolvePage(walked, map);
  const items: T[] = [];
  for (const id of ids) {
    const entity = map.get(id)!;
    if (after === undefined || precedes(after.createdAt, after.id, entity.createdAt, entity.id)) items.push(entity);
  }
  items.sort(byCreation);
  return { items: items.slice(0, limit), more: items.length > limit };
}

/**
 * A page of a subset from an offset (offset paging). The walk from the start of the order now visits
 * about (offset + limit) x n / k slots, a membership test each; picking the page out of the subset
 * (sliceInCreationOrder) costs k lookups and a sort of k numbers. The walk is taken while it looks the
 * cheaper (a dense subset, a shallow offset) and within the pick's budget, so a page costs at most about
 * twice the pick, however deep its offset or bunched its subset.
 */
function offsetPageOfSubset<T extends Created>(ids: Subset | undefined, order: CreationOrder, map: Lookup<T>, offset: number, limit: number): Page<T> {
  if (ids === undefined || offset >= ids.size) return { items: [], more: false };
  const pickSlots = 2 * ids.size + pageSubsetWalkSlotsMin;
  if (((offset + limit) * order.size) / ids.size <= pickSlots) {
    const walked = order.fromOffset(offset, limit, (id) => ids.has(id), pickSlots);
    if (walked !== undefined) return resolvePage(walked, map);
  }
  const members: T[] = [];
  for (const id of ids) members.push(map.get(id)!);
  return sliceInCreationOrder(members, offset, limit);
}

/** A page of a whole kind: after a cursor's entity, or `offset` entities into the order (offset paging). */
function pageOfKind<T extends Created>(order: CreationOrder, map: Lookup<T>, after: PagePosition | undefined, limit: number, offset: number): Page<T> {
  return resolvePage((offset > 0 ? order.fromOffset(offset, limit) : order.after(after, limit))!, map);
}

/**
 * A User just decoded from a snapshot, changed in place: its password hash packed. A snapshot written from
 * this State holds packed hashes already, so a load of one costs a character test per User.
 */
function packLoadedHash(decoded: User): void {
  if (decoded.passwordHash.charCodeAt(0) !== 0x24 /* $ */) return;
  (decoded as { passwordHash: string }).passwordHash = packPasswordHash(decoded.passwordHash);
}

/**
 * The key Application names are unique by: NFC, then lowercased one code point at a time, as email keys
 * fold (foldText), so "Billing", "BILLING" and a differently composed "Billing" are one name.
 */
export function applicationNameKey(name: string): string {
  return foldText(name);
}

export function groupNameKey(applicationId: string, name: string): string {
  return `${applicationId}\u0000${name.toLowerCase()}`;
}

/** What a snapshot is written from (persistence's SnapshotSource). */
interface Source {
  baseSeq: number;
  sections: { kind: EntityKind; entries: () => Iterator<unknown> }[];
  shareStrings: (kind: EntityKind, value: unknown, share: ShareString, shareList: ShareList) => unknown;
}

export class State {
  lastSeq = 0;
  /** Time of the newest applied record, so the clock never hands out an earlier one after a restart. */
  lastAt = 0;
  meta: Meta | undefined;
  /** Users a snapshot load has read, in file order: put in the Maps and indexed when it ends (see endLoad). */
  private loadedUsers: User[] = [];
  private loadEnded = false;
  /**
   * After a load, the memberships of its Users are indexed by indexStep, walking creation order, while
   * the service already answers: true until that walk is done. Users up to `membersWalkedTo` (inclusive)
   * are in the member indexes and changes to them are indexed as they apply; a change to a User past it
   * is left to the walk, which indexes whatever the User is when it gets there. Anything that reads the
   * member indexes finishes the walk first (settledMembers).
   */
  private membersWalking = false;
  private membersWalkedTo: PagePosition | undefined;

  /** Changes to Applications, Groups and Organizations so far: what a rendering of a User shows of them (see catalogVersion). */
  private catalogChanges = 0;
  /** Ops applied so far, an undo's included: never goes back, unlike lastSeq after a cut-back write (see version). */
  private opsApplied = 0;
  private readonly applications = new Map<string, Application>();
  private readonly groups = new Map<string, Group>();
  private readonly organizations = new Map<string, Organization>();
  /** A million Users: StringMaps fill about twice as fast as Maps at start-up (src/store/string-map.ts). */
  private readonly users = new StringMap<User>();

  /** emailKey (src/domain/email.ts) -> the current User itself (not its id): an authentication by email is one lookup, not two. */
  private readonly userByEmailKey = new StringMap<User>();
  /**
   * Email keys that several Users hold, with every holder's id. Only data stored before the key was NFC
   * and folded per code point can have them (decide refuses a new one), and a replay must not fail on
   * them: each holder stays loadable, and userByEmail finds the oldest (creation time, then id) whatever
   * order they were applied in; when it goes, the next oldest. sharedEmailKeys() lists them for a warning at start.
   */
  private readonly usersSharingEmailKey = new Map<string, Set<string>>();
  /**
   * applicationNameKey -> ids of the Applications holding it. A set, not one id: data stored before names
   * were unique may hold duplicates, and a replay or a load must keep each of them (decide refuses a new one).
   */
  private readonly applicationIdsByName = new Map<string, Set<string>>();
  private readonly groupIdByName = new Map<string, string>();
  private readonly organizationIdByName = new Map<string, string>();
  private readonly groupIdsByApplication = new Map<string, Set<string>>();
  private readonly usersByApplication = new MemberIndex((app, id) => this.users.get(id)?.applications.includes(app) === true);
  private readonly usersByGroup = new MemberIndex((group, id) => this.users.get(id)?.groups.includes(group) === true);
  private readonly usersByOrganization = new MemberIndex((org, id) => this.users.get(id)?.organization === org);
  private readonly memberIndexes = [this.usersByApplication, this.usersByGroup, this.usersByOrganization];
  /** API Key id -> the current User that holds it (as above: one lookup). */
  private readonly userByApikeyId = new Map<string, User>();
  readonly search = new UserSearchIndex((id) => this.users.get(id));
  /** Creation order per kind, for paged listings (src/store/creation-order.ts). */
  private readonly applicationOrder = new CreationOrder();
  private readonly groupOrder = new CreationOrder();
  private readonly organizationOrder = new CreationOrder();
  private readonly userOrder = new CreationOrder();

  // ---- the state machine ----

  apply(record: LogRecord): void {
    if (!this.loadEnded) this.endLoad();
    for (const op of record.ops) this.applyOp(op);
    this.lastSeq = record.seq;
    if (record.at > this.lastAt) this.lastAt = record.at;
  }

  private applyOp(op: Op): void {
    this.opsApplied++;
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
      case 'application': return this.putApplication(op.value);
      case 'group': return this.putGroup(op.value);
      case 'organization': return this.putOrganization(op.value);
      case 'user': return this.putUser(op.value);
      case 'meta': this.meta = op.value; return;
    }
  }

  private putApplication(app: Application): void {
    this.catalogChanges++;
    const old = this.applications.get(app.id);
    trackOrder(this.applicationOrder, old, app);
    if (old !== undefined) removeFrom(this.applicationIdsByName, applicationNameKey(old.name), app.id);
    this.applications.set(app.id, app);
    addTo(this.applicationIdsByName, applicationNameKey(app.name), app.id);
  }

  private deleteApplication(id: string): void {
    this.catalogChanges++;
    const old = this.applications.get(id);
    if (old !== undefined) {
      this.applicationOrder.remove(id, old.createdAt);
      removeFrom(this.applicationIdsByName, applicationNameKey(old.name), id);
    }
    this.applications.delete(id);
    // decide() refuses to delete an Application that has Groups; records written before that rule deleted
    // them in the same record, ahead of this op. Either way none is left here, this only tidies.
    this.groupIdsByApplication.delete(id);
    for (const userId of this.settledMembers(this.usersByApplication).members(id)) {
      const user = this.users.get(userId)!;
      this.putUser({ ...user, applications: user.applications.filter((a) => a !== id) });
    }
    this.usersByApplication.deleteKey(id);
  }

  private putGroup(group: Group): void {
    this.catalogChanges++;
    const old = this.groups.get(group.id);
    trackOrder(this.groupOrder, old, group);
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
    this.catalogChanges++;
    const old = this.groups.get(id);
    if (old === undefined) return;
    for (const userId of this.settledMembers(this.usersByGroup).members(id)) {
      const user = this.users.get(userId)!;
      this.putUser({ ...user, groups: user.groups.filter((g) => g !== id) });
    }
    this.usersByGroup.deleteKey(id);
    this.groups.delete(id);
    this.groupOrder.remove(id, old.createdAt);
    this.groupIdByName.delete(groupNameKey(old.application, old.name));
    removeFrom(this.groupIdsByApplication, old.application, id);
  }

  private putOrganization(org: Organization): void {
    this.catalogChanges++;
    const old = this.organizations.get(org.id);
    trackOrder(this.organizationOrder, old, org);
    if (old !== undefined) this.organizationIdByName.delete(old.name.toLowerCase());
    this.organizations.set(org.id, org);
    this.organizationIdByName.set(org.name.toLowerCase(), org.id);
  }

  private deleteOrganization(id: string): void {
    this.catalogChanges++;
    const old = this.organizations.get(id);
    if (old === undefined) return;
    this.organizations.delete(id);
    this.organizationOrder.remove(id, old.createdAt);
    this.organizationIdByName.delete(old.name.toLowerCase());
  }

  /**
   * Indexes follow the difference between the old and the new User, so an update touches only what
   * changed. The Map is updated first: MemberIndex asks the current User whether an id is a member.
   * A User is held with its password hash packed (src/auth/packed-hash.ts): a value that comes with a
   * PHC string (a create, a new password, an import, a replayed record) is held as a copy with the packed
   * form, and the op's value is left as it is. A value read from this State already holds the packed form.
   */
  private putUser(value: User): void {
    const passwordHash = packPasswordHash(value.passwordHash);
    const user = passwordHash === value.passwordHash ? value : { ...value, passwordHash };
    const old = this.users.get(user.id);
    // An import can move a User in creation order, which the membership walk follows: finish the walk first.
    if (this.membersWalking && old !== undefined && old.createdAt !== user.createdAt) this.walkMembers(Infinity);
    this.users.set(user.id, user);
    this.indexUser(old, user);
    this.search.upsert(user, old !== undefined);
  }

  private indexUser(old: User | undefined, user: User): void {
    this.indexUserKeys(old, user);
    if (this.membersIndexed(user)) this.indexMemberships(old, user);
  }

  /** Creation order, email and API Key ids: what a load indexes before the service answers. */
  private indexUserKeys(old: User | undefined, user: User): void {
    trackOrder(this.userOrder, old, user);
    const email = emailKey(user.email);
    if (old !== undefined) {
      const oldEmail = old.email === user.email ? email : emailKey(old.email);
      if (oldEmail !== email) this.unindexEmail(oldEmail, user.id);
      for (const key of old.apikeys) if (this.userByApikeyId.get(key.id)?.id === user.id) this.userByApikeyId.delete(key.id);
    }
    this.indexEmail(email, user);
    for (const key of user.apikeys) this.userByApikeyId.set(key.id, user);
  }

  /** `user` (current in this.users) holds `key`: it alone, or with others as usersSharingEmailKey records. */
  private indexEmail(key: string, user: User): void {
    // One look-up for the usual case, a key no one else holds: put, and set again below if it is shared.
    const holder = this.userByEmailKey.put(key, user);
    if (holder === undefined) return;
    if (holder.id !== user.id) {
      addTo(this.usersSharingEmailKey, key, holder.id);
      addTo(this.usersSharingEmailKey, key, user.id);
    }
    const sharing = this.usersSharingEmailKey.get(key);
    this.userByEmailKey.set(key, sharing === undefined ? user : this.oldestUser(sharing));
  }

  /** The User `id` no longer holds `key` (it changed its email, or is gone from this.users). */
  private unindexEmail(key: string, id: string): void {
    const sharing = this.usersSharingEmailKey.get(key);
    if (sharing === undefined) {
      if (this.userByEmailKey.get(key)?.id === id) this.userByEmailKey.delete(key);
      return;
    }
    removeFrom(this.usersSharingEmailKey, key, id);
    if (sharing.size === 1) this.usersSharingEmailKey.delete(key);
    this.userByEmailKey.set(key, this.oldestUser(sharing));
  }

  private oldestUser(ids: Set<string>): User {
    let oldest: User | undefined;
    for (const id of ids) {
      const user = this.users.get(id)!;
      if (oldest === undefined || precedes(user.createdAt, user.id, oldest.createdAt, oldest.id)) oldest = user;
    }
    return oldest!;
  }

  /** Applications, Groups and Organization: what a load leaves to indexStep (walkMembers). */
  private indexMemberships(old: User | undefined, user: User): void {
    reindex(this.usersByApplication, user.id, old?.applications ?? noIds, user.applications);
    reindex(this.usersByGroup, user.id, old?.groups ?? noIds, user.groups);
    if (old?.organization !== user.organization) {
      if (old !== undefined) this.usersByOrganization.remove(old.organization, user.id);
      this.usersByOrganization.add(user.organization, user.id);
    }
  }

  /** Whether the member indexes hold this User (its creation time and id) as it is now. */
  private membersIndexed(user: PagePosition): boolean {
    if (!this.membersWalking) return true;
    const to = this.membersWalkedTo;
    return to !== undefined && !precedes(to.createdAt, to.id, user.createdAt, user.id);
  }

  /** Indexes the memberships of the next `usersMax` Users in creation order, ending the walk after the last. */
  private walkMembers(usersMax: number): void {
    const page = this.userOrder.after(this.membersWalkedTo, usersMax)!;
    let user: User | undefined;
    for (const id of page.items) {
      user = this.users.get(id)!;
      this.indexMemberships(undefined, user);
    }
    if (user !== undefined) this.membersWalkedTo = { createdAt: user.createdAt, id: user.id };
    if (!page.more) {
      this.membersWalking = false;
      this.membersWalkedTo = undefined;
      for (const index of this.memberIndexes) index.startTrim();
    }
  }

  /** A member index, complete: a read that comes before indexStep got there finishes the walk at once. */
  private settledMembers(index: MemberIndex): MemberIndex {
    if (this.membersWalking) this.walkMembers(Infinity);
    return index;
  }

  private deleteUser(id: string): void {
    const old = this.users.get(id);
    if (old === undefined) return;
    this.users.delete(id);
    this.unindexEmail(emailKey(old.email), id);
    for (const key of old.apikeys) if (this.userByApikeyId.get(key.id)?.id === id) this.userByApikeyId.delete(key.id);
    if (this.membersIndexed(old)) {
      reindex(this.usersByApplication, id, old.applications, noIds);
      reindex(this.usersByGroup, id, old.groups, noIds);
      this.usersByOrganization.remove(old.organization, id);
    }
    this.userOrder.remove(id, old.createdAt);
    this.search.remove(id);
  }

  // ---- snapshots ----

  /**
   * Called a chunk at a time; the values are freshly decoded and ours. Their repeated strings already
   * share one copy each (the snapshot's dictionary, src/store/compact.ts). A User's password hash is
   * packed in place if the snapshot holds it as a PHC string (one written before hashes were packed).
   */
  loadSection(kind: EntityKind, values: readonly unknown[]): void {
    if (this.loadEnded) throw new Error('State.loadSection after the load ended (finishLoad or apply)');
    if (kind === 'user') this.search.defer();
    for (const value of values) {
      // The newest time in the snapshot, so the clock never goes back after a restart with nothing to replay.
      const modifiedAt = (value as { modifiedAt?: number }).modifiedAt;
      if (modifiedAt !== undefined && modifiedAt > this.lastAt) this.lastAt = modifiedAt;
      switch (kind) {
        case 'meta': this.meta = value as Meta; break;
        case 'application': this.putApplication(value as Application); break;
        case 'group': this.putGroup(value as Group); break;
        case 'organization': this.putOrganization(value as Organization); break;
        case 'user':
          shareEmptyLists(value as User);
          packLoadedHash(value as User);
          this.loadedUsers.push(value as User);
          break;
      }
    }
  }

  finishLoad(baseSeq: number): void {
    this.endLoad();
    this.lastSeq = baseSeq;
  }

  snapshotSource(): Source {
    const meta = this.meta;
    return {
      baseSeq: this.lastSeq,
      shareStrings: withSharedStrings,
      sections: [
        { kind: 'meta', entries: () => (meta === undefined ? [] : [meta]).values() },
        { kind: 'organization', entries: () => this.organizations.values() },
        { kind: 'application', entries: () => this.applications.values() },
        { kind: 'group', entries: () => this.groups.values() },
        { kind: 'user', entries: () => this.users.values() },
      ],
    };
  }

  /**
   * Ends a snapshot load (loadSection is refused from now on): puts each User it read in the Map and indexes
   * it. Usually each id comes once, and the Users go in with one fill of each StringMap (indexLoaded). A fuzzy
   * snapshot may hold a later copy of a User: then each is put in turn, with both StringMaps sized first, and
   * a later copy is indexed as a replace of the earlier one (as putUser does), so only the final value stays
   * indexed. Memberships, which only admin reads and deletions need, are left to indexStep, so that start-up
   * does not wait for them.
   */
  private endLoad(): void {
    this.loadEnded = true;
    const loaded = this.loadedUsers;
    if (loaded.length === 0) return;
    this.loadedUsers = [];
    this.membersWalking = true;
    if (this.users.fillEmpty(loaded.map((user) => user.id), loaded)) {
      this.indexLoaded(loaded);
      return;
    }
    this.users.reserve(this.users.size + loaded.length);
    this.userByEmailKey.reserve(this.users.size + loaded.length);
    for (const user of loaded) {
      const old = this.users.put(user.id, user);
      this.indexUserKeys(old, user);
      if (old === undefined) this.search.addLoaded(user.id);
    }
  }

  /** endLoad's Users, each id once and all now in this.users: their other keys, as indexUserKeys would index them, the emails in one fill unless two share a key. */
  private indexLoaded(loaded: readonly User[]): void {
    const emailKeys = new Array<string>(loaded.length);
    for (let i = 0; i < loaded.length; i++) {
      const user = loaded[i]!;
      trackOrder(this.userOrder, undefined, user);
      emailKeys[i] = emailKey(user.email);
      for (const key of user.apikeys) this.userByApikeyId.set(key.id, user);
      this.search.addLoaded(user.id);
    }
    if (this.userByEmailKey.fillEmpty(emailKeys, loaded)) return;
    this.userByEmailKey.reserve(loaded.length);
    for (let i = 0; i < loaded.length; i++) this.indexEmail(emailKeys[i]!, loaded[i]!);
  }

  /**
   * Moves on whenever an Application, Group or Organization is stored or deleted: something derived
   * from them and stamped with this number is still current while it has not moved (src/http/render.ts).
   */
  get catalogVersion(): number {
    return this.catalogChanges;
  }

  /**
   * Moves on with every op applied once the load has ended (a snapshot section cannot be loaded after it):
   * while it has not moved, every entity object found current at that number is current still.
   */
  get version(): number {
    return this.opsApplied;
  }

  // ---- derived indexes built after a load, a step per event-loop turn (src/main.ts drives them) ----

  /** True while indexStep has work: the membership walk, or the search index (which can also start again later). */
  get indexing(): boolean {
    return this.membersWalking || this.memberIndexes.some((index) => index.trimming) || this.search.building;
  }

  /** True until the membership walk is done (by indexStep, or by a read that needed it). */
  get indexingMembers(): boolean {
    return this.membersWalking;
  }

  /** One bounded step of that work, the walk first; true while more remains. */
  indexStep(usersMax = memberIndexUsersPerStep, docsMax = searchIndexDocsPerStep): boolean {
    if (this.membersWalking) {
      this.walkMembers(usersMax);
      return true;
    }
    for (const index of this.memberIndexes) if (index.trimStep(memberTrimIdsPerStep)) return true;
    return this.search.buildStep(docsMax);
  }

  // ---- queries (the only way other layers read state) ----

  application(id: string): Application | undefined { return this.applications.get(id); }
  group(id: string): Group | undefined { return this.groups.get(id); }
  organization(id: string): Organization | undefined { return this.organizations.get(id); }
  user(id: string): User | undefined { return this.users.get(id); }
  /** Whether id names the base Application, whose Users are the callers of this API. */
  isBaseApplication(id: string | undefined): boolean { return id !== undefined && this.meta?.baseApplication === id; }
  /** Whether the User belongs to the base Application (its roles apply only then). */
  isBaseUser(user: User): boolean {
    const base = this.meta?.baseApplication;
    return base !== undefined && user.applications.includes(base);
  }

  /** The User whose email has the same emailKey (src/domain/email.ts): one NFC, case-folded address, whatever form it was given in. */
  userByEmail(email: string): User | undefined {
    return this.userByEmailKey.get(emailKey(email));
  }

  /** Application names held by more than one Application (stored before names were unique), for a warning at start. */
  sharedApplicationNames(): { key: string; applicationIds: string[] }[] {
    const shared: { key: string; applicationIds: string[] }[] = [];
    for (const [key, ids] of this.applicationIdsByName) if (ids.size > 1) shared.push({ key, applicationIds: [...ids] });
    return shared;
  }

  /** Email keys that more than one User holds (data stored before the key rule), each with its holders' ids, oldest first. */
  sharedEmailKeys(): { key: string; userIds: string[] }[] {
    return [...this.usersSharingEmailKey].map(([key, ids]) => ({
      key, userIds: [...ids].map((id) => this.users.get(id)!).sort((a, b) => (precedes(a.createdAt, a.id, b.createdAt, b.id) ? -1 : 1)).map((u) => u.id),
    }));
  }

  userByApikey(keyId: string): User | undefined {
    return this.userByApikeyId.get(keyId);
  }

  /** Ids of the Applications whose name has the same applicationNameKey as `name`: none, one, or several stored before names were unique. */
  applicationIdsNamed(name: string): ReadonlySet<string> {
    return this.applicationIdsByName.get(applicationNameKey(name)) ?? noIdSet;
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
  usersOfApplication(applicationId: string): User[] { return this.usersIn(this.settledMembers(this.usersByApplication).members(applicationId)); }
  usersOfGroup(groupId: string): User[] { return this.usersIn(this.settledMembers(this.usersByGroup).members(groupId)); }
  usersOfOrganization(orgId: string): User[] { return this.usersIn(this.settledMembers(this.usersByOrganization).members(orgId)); }

  countUsersOfApplication(applicationId: string): number { return this.settledMembers(this.usersByApplication).count(applicationId); }
  countUsersOfOrganization(orgId: string): number { return this.settledMembers(this.usersByOrganization).count(orgId); }

  counts(): { applications: number; groups: number; organizations: number; users: number } {
    return {
      applications: this.applications.size, groups: this.groups.size,
      organizations: this.organizations.size, users: this.users.size,
    };
  }

  // ---- pages in creation order, after a cursor position or from an offset (src/store/creation-order.ts, src/http/paging.ts) ----

  pageApplications(after: PagePosition | undefined, limit: number, offset = 0): Page<Application> {
    return pageOfKind(this.applicationOrder, this.applications, after, limit, offset);
  }

  pageGroups(after: PagePosition | undefined, limit: number, offset = 0): Page<Group> {
    return pageOfKind(this.groupOrder, this.groups, after, limit, offset);
  }

  pageOrganizations(after: PagePosition | undefined, limit: number, offset = 0): Page<Organization> {
    return pageOfKind(this.organizationOrder, this.organizations, after, limit, offset);
  }

  pageUsers(after: PagePosition | undefined, limit: number, offset = 0): Page<User> {
    return pageOfKind(this.userOrder, this.users, after, limit, offset);
  }

  pageUsersOfApplication(applicationId: string, after: PagePosition | undefined, limit: number, offset = 0): Page<User> {
    return pageOfSubset(this.settledMembers(this.usersByApplication).view(applicationId), this.userOrder, this.users, after, limit, offset);
  }

  pageUsersOfGroup(groupId: string, after: PagePosition | undefined, limit: number, offset = 0): Page<User> {
    return pageOfSubset(this.settledMembers(this.usersByGroup).view(groupId), this.userOrder, this.users, after, limit, offset);
  }

  pageUsersOfOrganization(orgId: string, after: PagePosition | undefined, limit: number, offset = 0): Page<User> {
    return pageOfSubset(this.settledMembers(this.usersByOrganization).view(orgId), this.userOrder, this.users, after, limit, offset);
  }

  pageGroupsOfApplication(applicationId: string, after: PagePosition | undefined, limit: number, offset = 0): Page<Group> {
    return pageOfSubset(this.groupIdsByApplication.get(applicationId), this.groupOrder, this.groups, after, limit, offset);
  }

  /** A page of Users matching a lowercase search term, to be worked out in bounded steps (src/store/search-page.ts). */
  beginPageSearch(termLower: string, after: PagePosition | undefined, limit: number, offset = 0): PagedSearch {
    return new PagedSearch(this.users, this.userOrder, this.search, termLower, after, limit, offset);
  }

  /** The same page in one synchronous call, however long it takes: for tests and tools, not for requests. */
  pageSearch(termLower: string, after: PagePosition | undefined, limit: number, offset = 0): Page<User> {
    const search = this.beginPageSearch(termLower, after, limit, offset);
    let page: Page<User> | undefined;
    while ((page = search.step(Number.POSITIVE_INFINITY)) === undefined);
    return page;
  }

  private usersIn(ids: readonly string[]): User[] {
    return ids.map((id) => this.users.get(id)!).sort(byCreation);
  }
}
