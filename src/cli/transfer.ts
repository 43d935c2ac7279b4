// The export format, JSON lines: a header, then one entity per line (meta, organizations, applications, groups, users); reading it back as records decided like the API's.
//
// Entities keep their ids, times and password hashes; API Keys keep their nonces, so their secrets
// stay the same under the same server key. Lines of users from another system may leave out id,
// times, status and organization (new id, now, UNVERIFIED, the default Organization).
//
// Import reads every entity the API can leave in the state, not only what the API's create accepts: an
// export is a restore. So an Organization may be named from a whole custom_data.company_name, and a
// User that left its last Application comes back with none; only a new User (a line without an id)
// must name an Application, as POST /users/user requires. Likewise a User line with an id keeps its
// address exactly as stored: addresses stored before the email rules of src/domain/email.ts (and an
// ADMIN_EMAIL, which the first start takes as given) still load and sign in, so a restore carries them.

import { StringDecoder } from 'node:string_decoder';
import { unpackPasswordHash } from '../auth/packed-hash.js';
import { validatePasswordHash } from '../auth/password-hash-format.js';
import {
  customDataBytesMax, descriptionCharsMax, emailCharsMax, importLineCharsMax, nameCharsMax, passwordHashCharsMax, sealedSecretCharsMax,
} from '../config/limits.js';
import {
  type ApiKey, type Application, type Group, type JsonObject, type LogRecord, type Meta, type Op, type Organization, type User,
} from '../domain/entities.js';
import { DomainError, invalidField } from '../domain/errors.js';
import type { Role } from '../domain/roles.js';
import { formatTimestamp } from '../domain/time.js';
import {
  arrayOf, customData, email, id, roles, status, string, tokenSettings, userStatus, type Schema,
} from '../domain/schema.js';
import * as decide from '../store/decide.js';
import { isApikeyId } from '../domain/ids.js';
import type { State } from '../store/state.js';

export const exportFormat = 'authd-export';
export const exportFormatVersion = 1;

export interface ExportHeader {
  format: typeof exportFormat;
  version: number;
  exported_at: string;
  last_seq: number;
}

// ---- entity -> line ----

function times(e: { createdAt: number; modifiedAt: number }): { created_at: string; modified_at: string } {
  return { created_at: formatTimestamp(e.createdAt), modified_at: formatTimestamp(e.modifiedAt) };
}

/** `roles` when the entity has them; absent keeps the default (admin for a base User, its owner's for a key). */
function rolesOf(e: { readonly roles?: readonly Role[] }): { roles?: readonly Role[] } {
  return e.roles === undefined ? {} : { roles: e.roles };
}

function apikeyLine(k: ApiKey): Record<string, unknown> {
  return { id: k.id, name: k.name, description: k.description, status: k.status, nonce: k.nonce, ...rolesOf(k), ...times(k) };
}

/** Every line of a full export, header first; a generator so a million users are never one string. */
export function* exportLines(state: State, now: Date): Generator<string> {
  const header: ExportHeader = { format: exportFormat, version: exportFormatVersion, exported_at: now.toISOString(), last_seq: state.lastSeq };
  yield JSON.stringify(header);
  if (state.meta !== undefined) {
    yield JSON.stringify({ kind: 'meta', base_application: state.meta.baseApplication, default_organization: state.meta.defaultOrganization });
  }
  for (const o of state.allOrganizations()) {
    yield JSON.stringify({ kind: 'organization', id: o.id, name: o.name, description: o.description, custom_data: o.customData, status: o.status, ...times(o) });
  }
  for (const a of state.allApplications()) {
    // The HS256 secret stays sealed: it opens only where the same server key is used.
    yield JSON.stringify({
      kind: 'application', id: a.id, name: a.name, description: a.description, custom_data: a.customData, status: a.status,
      ...(a.tokens === undefined ? {} : { tokens: a.tokens }), ...(a.jwtSecret === undefined ? {} : { jwt_secret_sealed: a.jwtSecret }), ...times(a),
    });
  }
  for (const g of state.allGroups()) {
    yield JSON.stringify({
      kind: 'group', id: g.id, name: g.name, description: g.description, custom_data: g.customData, status: g.status,
      application: g.application, ...times(g),
    });
  }
  for (const u of state.allUsers()) {
    yield JSON.stringify({
      kind: 'user', id: u.id, email: u.email, name: u.name, status: u.status, custom_data: u.customData,
      password_hash: unpackPasswordHash(u.passwordHash), organization: u.organization, applications: u.applications, groups: u.groups,
      apikeys: u.apikeys.map(apikeyLine), ...rolesOf(u),
      ...(u.passwordChangedAt === undefined ? {} : { password_changed_at: formatTimestamp(u.passwordChangedAt) }), ...times(u),
    });
  }
}

// ---- line -> entity ----

const timestampText = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})\.(\d{6})\+00:00$/;

/** The inverse of formatTimestamp: microseconds since the epoch ("" is 0). */
export function parseTimestamp(value: unknown, field: string): number {
  if (value === '') return 0;
  const m = typeof value === 'string' ? timestampText.exec(value) : null;
  if (m === null) throw invalidField(field, 'must be a timestamp YYYY-MM-DD HH:MM:SS.ffffff+00:00');
  const ms = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6]));
  if (Number.isNaN(ms)) throw invalidField(field, 'is not a real date');
  return ms * 1000 + Number(m[7]);
}

export type ImportLine =
  | { kind: 'header'; header: ExportHeader }
  | { kind: 'meta'; value: Meta }
  | { kind: 'organization'; value: Organization }
  | { kind: 'application'; value: Application }
  | { kind: 'group'; value: Group }
  /** asStored: the line named its id, so it is a User as it was (an export), not a new one. */
  | { kind: 'user'; value: User; asStored: boolean };

/** What a line may leave out is filled from here: new ids and times, the directory's default Organization. */
export interface ImportDefaults {
  newId(): string;
  now(): number;
  defaultOrganization(): string | undefined;
}

const name = string({ max: nameCharsMax });
const description = string({ max: descriptionCharsMax });
const ids = arrayOf(id(), { max: 1000, unique: true });
const nonce = string({ min: 1, max: 128 });
const entityName = string({ min: 1, max: nameCharsMax, trim: true });
/**
 * A User created with a custom_data.company_name joins the Organization of that name, made for it if
 * missing (src/store/decide.ts resolveOrganization), and custom_data may hold a string far past
 * nameCharsMax: such a name is as long as custom_data allows (a code point takes at least one byte).
 */
const organizationName = string({ min: 1, max: customDataBytesMax, trim: true });
/** An address as the state holds it, whatever rules were in force when it was stored: taken as written. */
const storedEmail = string({ min: 1, max: emailCharsMax });

class Fields {
  constructor(private readonly raw: Record<string, unknown>) {}

  has(key: string): boolean {
    return this.raw[key] !== undefined;
  }

  get<T>(key: string, schema: Schema<T>): T {
    if (!this.has(key)) throw invalidField(key, 'is required');
    return schema.parse(this.raw[key], key);
  }

  opt<T>(key: string, schema: Schema<T>, fallback: T): T {
    return this.has(key) ? schema.parse(this.raw[key], key) : fallback;
  }

  time(key: string, fallback: () => number): number {
    return this.has(key) ? parseTimestamp(this.raw[key], key) : fallback();
  }

  array(key: string): Record<string, unknown>[] {
    const v = this.raw[key];
    if (v === undefined) return [];
    if (!Array.isArray(v) || v.some((x) => typeof x !== 'object' || x === null || Array.isArray(x))) throw invalidField(key, 'must be an array of objects');
    return v as Record<string, unknown>[];
  }
}

function parseApikey(raw: Record<string, unknown>, i: number, now: number): ApiKey {
  const f = new Fields(raw);
  const keyId = f.get('id', string({ min: 1, max: 64 }));
  if (!isApikeyId(keyId)) throw invalidField(`apikeys[${i}].id`, 'must be 25 characters of [0-9A-Z]');
  return {
    id: keyId, name: f.opt('name', name, ''), description: f.opt('description', description, ''), status: f.opt('status', status, 'ENABLED'),
    nonce: f.get('nonce', nonce), ...withRoles(f), createdAt: f.time('created_at', () => now), modifiedAt: f.time('modified_at', () => now),
  };
}

function withRoles(f: Fields): { roles?: Role[] } {
  return f.has('roles') ? { roles: f.get('roles', roles()) } : {};
}

/** One line, checked field by field as the API checks bodies; references and uniqueness are decide's (src/store/decide.ts). */
export function parseImportLine(text: string, defaults: ImportDefaults): ImportLine {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new DomainError('invalid_json', 'the line is not JSON');
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new DomainError('invalid_json', 'the line is not a JSON object');
  const r = raw as Record<string, unknown>;
  if (r['format'] === exportFormat) {
    if (r['version'] !== exportFormatVersion) throw invalidField('version', `this authctl reads version ${exportFormatVersion} only`);
    return { kind: 'header', header: r as unknown as ExportHeader };
  }
  const f = new Fields(r);
  const now = defaults.now();
  const entityId = (): string => f.opt('id', id(), '') || defaults.newId();
  const common = (names = entityName): { id: string; name: string; description: string; status: 'ENABLED' | 'DISABLED'; createdAt: number; modifiedAt: number } => ({
    id: entityId(), name: f.get('name', names), description: f.opt('description', description, ''),
    status: f.opt('status', status, 'ENABLED'), createdAt: f.time('created_at', () => now), modifiedAt: f.time('modified_at', () => now),
  });
  switch (r['kind']) {
    case 'meta':
      return { kind: 'meta', value: { baseApplication: f.get('base_application', id()), defaultOrganization: f.get('default_organization', id()) } };
    case 'organization':
      return { kind: 'organization', value: { ...common(organizationName), customData: f.opt('custom_data', customData({ nullable: true }), null) } };
    case 'application':
      return {
        kind: 'application',
        value: {
          ...common(), customData: f.opt('custom_data', customData({ nullable: true }), null),
          ...(f.has('tokens') ? { tokens: f.get('tokens', tokenSettings(true)) } : {}),
          ...(f.has('jwt_secret_sealed') ? { jwtSecret: f.get('jwt_secret_sealed', string({ min: 1, max: sealedSecretCharsMax })) } : {}),
        },
      };
    case 'group':
      return {
        kind: 'group',
        value: { ...common(), customData: f.opt<JsonObject>('custom_data', customData({ nullable: false }) as Schema<JsonObject>, {}), application: f.get('application', id()) },
      };
    case 'user': {
      const passwordHash = f.get('password_hash', string({ min: 1, max: passwordHashCharsMax }));
      if (!validatePasswordHash(passwordHash)) throw invalidField('password_hash', 'must be an argon2id PHC string or a bcrypt hash ($2a$, $2b$, $2y$)');
      const organization = f.opt('organization', id(), '') || defaults.defaultOrganization();
      if (organization === undefined) throw invalidField('organization', 'is required: the directory has no default Organization yet');
      const asStored = f.has('id');
      const applications = f.get('applications', ids);
      // A User leaves its last Application with DELETE /users/user/{id}/application/{appid}, and stays.
      if (applications.length === 0 && !asStored) throw invalidField('applications', 'a new User must be associated with at least one Application');
      return {
        kind: 'user',
        asStored,
        value: {
          id: entityId(), email: f.get('email', asStored ? storedEmail : email()), name: f.opt('name', name, ''), status: f.opt('status', userStatus, 'UNVERIFIED'),
          customData: f.opt('custom_data', customData({ nullable: true }), null), passwordHash, organization, applications,
          groups: f.opt('groups', ids, []), apikeys: f.array('apikeys').map((k, i) => parseApikey(k, i, now)), ...withRoles(f),
          ...(f.has('password_changed_at') ? { passwordChangedAt: f.time('password_changed_at', () => now) } : {}),
          createdAt: f.time('created_at', () => now), modifiedAt: f.time('modified_at', () => now),
        },
      };
    }
    default:
      throw invalidField('kind', 'must be one of meta, organization, application, group, user');
  }
}

// ---- lines -> records ----

function withoutCarriageReturn(line: string): string {
  return line.endsWith('\r') ? line.slice(0, -1) : line;
}

/**
 * The lines of an import file, split on "\n" only (a "\r" before it dropped), as JSON lines are. Not
 * node:readline: on Node 24 it also ends a line at U+2028 and U+2029, which JSON.stringify writes
 * unescaped inside strings and the API accepts in every name and custom_data. A line is refused once
 * it grows past importLineCharsMax, before it is held whole.
 */
export async function* importLines(chunks: AsyncIterable<string | Uint8Array>): AsyncGenerator<string> {
  // Decodes a character split across two chunks whole, as a utf8 stream encoding does.
  const decoder = new StringDecoder('utf8');
  let pending = '';
  let lineNo = 0;
  for await (const chunk of chunks) {
    const text = typeof chunk === 'string' ? chunk : decoder.write(chunk);
    let start = 0;
    for (let nl = text.indexOf('\n'); nl !== -1; nl = text.indexOf('\n', start)) {
      const line = pending + text.slice(start, nl);
      pending = '';
      start = nl + 1;
      lineNo++;
      yield withoutCarriageReturn(line);
    }
    pending += text.slice(start);
    // One more for the "\r" of a CRLF line of the largest size.
    if (pending.length > importLineCharsMax + 1) throw new ImportError(lineNo + 1, `longer than ${importLineCharsMax} characters`);
  }
  pending += decoder.end();
  if (pending.length > 0) yield withoutCarriageReturn(pending);
}

/** A line refused, or the file as a whole (line undefined): what the operator is told, with the domain error behind it. */
export class ImportError extends Error {
  constructor(readonly line: number | undefined, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ImportError';
  }
}

export interface ImportOutcome {
  /** One record per entity line (and one for the meta line, last), each already applied to the scratch state. */
  readonly records: LogRecord[];
  readonly counts: Record<'organization' | 'application' | 'group' | 'user', number>;
  readonly meta: 'set' | 'kept' | 'none';
}

function refused(err: unknown, line: number | undefined): never {
  if (err instanceof DomainError) throw new ImportError(line, `${err.message} (${err.code})`, { cause: err });
  throw err;
}

/**
 * Decides every line against `scratch` (a copy of the directory's state, changed as it goes), so a bad
 * line anywhere is found before anything is written. The meta line is decided last, after the entities it names.
 */
export async function decideImportLines(
  scratch: State, lines: AsyncIterable<string> | Iterable<string>, now: () => number, newId: () => string,
): Promise<ImportOutcome> {
  const records: LogRecord[] = [];
  const counts = { organization: 0, application: 0, group: 0, user: 0 };
  const commit = (ops: readonly Op[], at: number): void => {
    if (ops.length === 0) return;
    const record: LogRecord = { seq: scratch.lastSeq + 1, at, ops };
    scratch.apply(record);
    records.push(record);
  };
  let meta: Meta | undefined;
  let lineNo = 0;
  for await (const text of lines) {
    lineNo++;
    if (text.trim() === '') continue;
    if (text.length > importLineCharsMax) throw new ImportError(lineNo, `longer than ${importLineCharsMax} characters`);
    const at = now();
    try {
      const line = parseImportLine(text, { newId, now: () => at, defaultOrganization: () => scratch.meta?.defaultOrganization });
      switch (line.kind) {
        case 'header': break;
        case 'meta': meta = line.value; break;
        case 'organization': commit(decide.importOrganization(scratch, line.value).ops, at); break;
        case 'application': commit(decide.importApplication(scratch, line.value).ops, at); break;
        case 'group': commit(decide.importGroup(scratch, line.value).ops, at); break;
        case 'user': commit(decide.importUser(scratch, line.value, { asStored: line.asStored }).ops, at); break;
      }
      if (line.kind !== 'header' && line.kind !== 'meta') counts[line.kind]++;
    } catch (err) {
      refused(err, lineNo);
    }
  }
  let metaOutcome: ImportOutcome['meta'] = 'none';
  if (meta !== undefined) {
    try {
      const decision = decide.importMeta(scratch, meta);
      commit(decision.ops, now());
      metaOutcome = decision.result;
    } catch (err) {
      refused(err, undefined);
    }
  }
  return { records, counts, meta: metaOutcome };
}
