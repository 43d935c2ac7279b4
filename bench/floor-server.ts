// The floor: a sketch of A', B' and D' doing only the steps no implementation of them can skip, on the same parts as authd (uWS, JS Maps over the same snapshot), to tell what part of a ceiling ratio the design leaves within reach.
//
// Not a product: `npm run bench` measures it beside the ceiling on A''s, B''s and D''s requests (uWS only). It loads the
// newest snapshot in DATA_DIR (the log after it is ignored) and the server key in KEY_FILE, takes FLOOR_AUTHORIZATION
// as the one caller's Authorization header and PUBLIC_URL for hrefs. A success is answered byte for byte as authd
// answers it (but for `elapsed`); a refusal gets a short stand-in, which the bench counts as unexpected:
// - POST /authenticate by API Key: parse the body, check its fields, the caller's header (compared with the admin's,
//   as a known caller), the limiter's two lookups (address, account), the key and its secret (derived at start, compared
//   in constant time), the User and its Application, authd's audit line, the answer (kept per User);
// - POST /authenticate by username, its password's verification cached (as after B''s warm-up): the same, the User
//   found by its email (lowercased) and the password checked by a keyed hash against the one kept for it, which the
//   first request of each User makes (argon2 is what B''s warm-up spends, and the floor leaves it out);
// - GET /users/user/{id}: the caller's header, the User, rendered in full (its Organization, Applications and
//   Groups rendered once each).
// Nothing is bounded, counted, logged or checked beyond that: authd does all of those, so a ratio between the two is
// what they and the rest of its engineering cost.

import { openSync, readdirSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ApiKey, Application, Group, Organization, User } from '../src/domain/entities.js';
import { ApiKeySecrets } from '../src/auth/apikey-secrets.js';
import { KeyedHash, sameText } from '../src/auth/keyed-hash.js';
import { loadUws } from '../src/http/uws-loader.js';
import { classifyDir } from '../src/persist/layout.js';
import { readSnapshotChunks } from '../src/persist/snapshot.js';
import { NodeStorage } from '../src/persist/storage.js';
import { Audit } from '../src/service/audit.js';
import { fdOutput, LogWriter } from '../src/service/log-writer.js';

const dataDir = process.env['DATA_DIR'] ?? './data';
const port = Number(process.env['PORT'] ?? '0');
const callerHeader = process.env['FLOOR_AUTHORIZATION'] ?? '';
const publicUrl = process.env['PUBLIC_URL'] ?? `http://localhost:${port}`;
/** An answer is encoded into this buffer and handed to uWS, which copies it (as authd's front end does). */
const replyScratch = Buffer.allocUnsafe(1024 * 1024);

const users = new Map<string, User>();
const keys = new Map<string, { readonly key: ApiKey; readonly user: User; readonly secret: string }>();
const usersByEmail = new Map<string, User>();
/** A keyed hash of each User's password as verified once: a verify cache that has every User warm. */
const verified = new Map<string, string>();
/** HMAC-SHA256 as two one-shot hashes (authd's own, src/auth/keyed-hash.ts): node:crypto's Hmac object costs more. */
const keyed = KeyedHash.withRandomKey();
/** Each Application and Group rendered once: in full, and as an authenticated User's answer shows it. */
const applications = new Map<string, { readonly full: string; readonly brief: string }>();
const groups = new Map<string, { readonly full: string; readonly brief: string }>();
const organizations = new Map<string, Organization>();

function passwordMac(user: User, password: string): string {
  return keyed.mac(`${user.id}\0${password}`);
}

/** A stored time (microseconds) as the API writes it. */
function time(us: number): string {
  const d = new Date(Math.floor(us / 1000));
  const two = (n: number): string => (n < 10 ? `0${n}` : `${n}`);
  return `${d.getUTCFullYear()}-${two(d.getUTCMonth() + 1)}-${two(d.getUTCDate())} ${two(d.getUTCHours())}:${two(d.getUTCMinutes())}:${two(d.getUTCSeconds())}.${String(us % 1_000_000).padStart(6, '0')}+00:00`;
}

const q = JSON.stringify;

function renderApplication(a: Application): string {
  const tokens = a.tokens === undefined ? '{"enabled":false,"ttl":900,"alg":"EdDSA"}' : q({ enabled: a.tokens.enabled, ttl: a.tokens.ttl, alg: a.tokens.alg });
  return `{"id":"${a.id}","name":${q(a.name)},"description":${q(a.description)},"custom_data":${q(a.customData)},"status":"${a.status}","tokens":${tokens},"href":"${publicUrl}/applications/application/${a.id}","created_at":"${time(a.createdAt)}","modified_at":"${time(a.modifiedAt)}"}`;
}

function renderGroup(g: Group): string {
  return `{"id":"${g.id}","name":${q(g.name)},"description":${q(g.description)},"custom_data":${q(g.customData)},"status":"${g.status}","application":"${g.application}","href":"${publicUrl}/groups/group/${g.id}","created_at":"${time(g.createdAt)}","modified_at":"${time(g.modifiedAt)}"}`;
}

/** A User as GET /users/user/{id} shows it (full), or as an authentication's answer does. */
function renderUser(u: User, full: boolean): string {
  const org = organizations.get(u.organization)!;
  let apps = '';
  for (const id of u.applications) apps += (apps === '' ? '' : ',') + applications.get(id)![full ? 'full' : 'brief'];
  let gs = '';
  for (const id of u.groups) gs += (gs === '' ? '' : ',') + groups.get(id)![full ? 'full' : 'brief'];
  let ks = '';
  for (const k of u.apikeys) ks += `${ks === '' ? '' : ','}{"id":"${k.id}","name":${q(k.name)},"status":"${k.status}"}`;
  const orgText = full ? `{"id":"${org.id}","name":${q(org.name)},"custom_data":${q(org.customData)}}` : `{"id":"${org.id}","name":${q(org.name)}}`;
  return `{"id":"${u.id}","username":${q(u.email)},"email":${q(u.email)},"name":${q(u.name)},"status":"${u.status}","custom_data":${q(u.customData)},"organization":${orgText},"applications":[${apps}],"groups":[${gs}],"apikeys":[${ks}],"href":"${publicUrl}/users/user/${u.id}","created_at":"${time(u.createdAt)}","modified_at":"${time(u.modifiedAt)}"}`;
}

const auditPath = join(tmpdir(), `authd-floor-audit-${process.pid}.log`);
const auditFile = openSync(auditPath, 'w', 0o600);
// Written to as a log is, and gone with the process.
unlinkSync(auditPath);
/** authd's own audit line and log writer: the line as bytes, written out in batches. */
const audit = new Audit(new LogWriter(fdOutput(auditFile)));
const failuresByAddress = new Map<string, number>();
const failuresByKey = new Map<string, number>();
/** The answer's bytes up to its elapsed time, per User that passed. */
const answers = new Map<string, Buffer>();

/** The answer in replyScratch, or as text for a refusal. */
function authenticate(raw: Buffer, authorization: string, peer: string, startedAt: number): string | Buffer {
  let body: { type?: unknown; application?: unknown; credential?: { username?: unknown; password?: unknown }; ip_address?: unknown };
  try {
    body = JSON.parse(raw.toString('utf8')) as typeof body;
  } catch {
    return '{"error":"invalid_json"}';
  }
  if (authorization !== callerHeader) return '{"error":"unauthorized"}';
  const { type, application, credential, ip_address: ipAddress } = body;
  if ((type !== 'apikey' && type !== 'username') || typeof application !== 'string' || typeof credential !== 'object' || credential === null) return '{"error":"invalid_field"}';
  const { username, password } = credential;
  if (typeof username !== 'string' || typeof password !== 'string') return '{"error":"invalid_field"}';
  const address = typeof ipAddress === 'string' ? ipAddress : peer;
  const account = type === 'apikey' ? username : username.toLowerCase();
  if (failuresByAddress.get(address) !== undefined || failuresByKey.get(account) !== undefined) return '{"authenticated":false}';
  let user: User | undefined;
  if (type === 'apikey') {
    const held = keys.get(username);
    user = held !== undefined && held.key.status === 'ENABLED' && sameText(held.secret, password) ? held.user : undefined;
  } else {
    const found = usersByEmail.get(account);
    if (found !== undefined) {
      const mac = passwordMac(found, password);
      let kept = verified.get(found.id);
      if (kept === undefined) verified.set(found.id, (kept = mac));
      if (sameText(mac, kept)) user = found;
    }
  }
  const ok = user !== undefined && user.status === 'ENABLED' && user.applications.includes(application);
  audit.recordAuthentication('authenticate', 'admin', application, user?.id, type === 'apikey' ? username : undefined, ok ? 'success' : 'failure', undefined, address, peer);
  if (!ok || user === undefined) return '{"service":{"result":{"authenticated":false}}}';
  let prefix = answers.get(user.id);
  if (prefix === undefined) answers.set(user.id, (prefix = Buffer.from(`{"service":{"result":{"authenticated":true,"user":${renderUser(user, false)}},"elapsed":`)));
  let at = prefix.copy(replyScratch, 0);
  at += replyScratch.write(((performance.now() - startedAt) / 1000).toFixed(6), at, 'latin1');
  at += replyScratch.write('}}', at, 'latin1');
  return replyScratch.subarray(0, at);
}

/** The answer in replyScratch, or as text for a refusal. */
function readUser(id: string, authorization: string, startedAt: number): string | Buffer {
  if (authorization !== callerHeader) return '{"error":"unauthorized"}';
  const user = users.get(id);
  if (user === undefined) return '{"error":"not_found"}';
  const text = `{"service":{"result":{"user":${renderUser(user, true)}},"elapsed":${((performance.now() - startedAt) / 1000).toFixed(6)}}}`;
  return replyScratch.subarray(0, replyScratch.write(text, 0, 'utf8'));
}

function peerText(raw: Uint8Array): string {
  return raw.length === 4 ? `${raw[0]}.${raw[1]}.${raw[2]}.${raw[3]}` : `${raw[12]}.${raw[13]}.${raw[14]}.${raw[15]}`;
}

async function main(): Promise<void> {
  if (callerHeader === '') throw new Error('FLOOR_AUTHORIZATION names no caller');
  const load = loadUws({ untraceable: true });
  if (!load.loaded) throw new Error(load.reason);
  const snapshot = classifyDir(dataDir, readdirSync(dataDir)).snapshots[0];
  if (snapshot === undefined) throw new Error(`no snapshot in ${dataDir}`);
  const appsRead: Application[] = [];
  const groupsRead: Group[] = [];
  await readSnapshotChunks(new NodeStorage(), snapshot.path, (kind, values) => {
    for (const v of values) {
      if (kind === 'user') users.set((v as User).id, v as User);
      else if (kind === 'application') appsRead.push(v as Application);
      else if (kind === 'group') groupsRead.push(v as Group);
      else if (kind === 'organization') organizations.set((v as Organization).id, v as Organization);
    }
  });
  for (const a of appsRead) applications.set(a.id, { full: renderApplication(a), brief: `{"id":"${a.id}","name":${q(a.name)},"status":"${a.status}"}` });
  for (const g of groupsRead) groups.set(g.id, { full: renderGroup(g), brief: `{"id":"${g.id}","name":${q(g.name)},"status":"${g.status}","application":"${g.application}"}` });
  const secrets = ApiKeySecrets.load({ keyFile: process.env['KEY_FILE'] ?? 'server.key' });
  for (const user of users.values()) {
    usersByEmail.set(user.email.toLowerCase(), user);
    for (const key of user.apikeys) keys.set(key.id, { key, user, secret: secrets.secretFor(key.id, key.nonce) });
  }

  const uws = load.uws;
  const reply = (res: import('uWebSockets.js').HttpResponse, body: string | Buffer): void => {
    res.cork(() => {
      res.writeStatus('200 OK');
      res.writeHeader('Content-Type', 'application/json');
      res.end(body);
    });
  };
  uws.App()
    .get('/health', (res) => reply(res, '{"service":{"result":{"status":"ok"}}}'))
    .get('/users/user/:id', (res, req) => {
      const startedAt = performance.now();
      reply(res, readUser(req.getParameter(0) ?? '', req.getHeader('authorization'), startedAt));
    })
    .post('/authenticate', (res, req) => {
      const startedAt = performance.now();
      const authorization = req.getHeader('authorization');
      const peer = peerText(new Uint8Array(res.getRemoteAddress()));
      const chunks: Buffer[] = [];
      let aborted = false;
      res.onAborted(() => { aborted = true; });
      res.onData((chunk, isLast) => {
        chunks.push(Buffer.from(new Uint8Array(chunk)));
        if (!isLast || aborted) return;
        reply(res, authenticate(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks), authorization, peer, startedAt));
      });
    })
    .listen('127.0.0.1', port, (socket) => {
      if (socket === false) throw new Error(`cannot listen on 127.0.0.1:${port}`);
      process.stdout.write(`${JSON.stringify({ msg: 'listening', port: uws.us_socket_local_port(socket), users: users.size, apikeys: keys.size })}\n`);
    });
}

main().catch((err: unknown) => {
  process.stderr.write(`floor: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
