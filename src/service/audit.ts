// The audit trail: one structured log line per mutation and per authentication outcome (time, caller, action, target ids, outcome, client address), and never a secret.
//
// A line looks like a pino info line (time in ms since the epoch):
//   {"level":30,"time":1700000000000,"service":"authd","audit":"authenticate","caller":"<user id>",
//    "targets":{"application":"<id>","user":"<id>"},"outcome":"failure","address":"203.0.113.9",
//    "reason":"wrong_secret","peer":"10.0.0.5","msg":"audit"}
// Only ids, codes and addresses go in; every string is cut to auditFieldCharsMax, JSON.stringify escapes
// control characters, and logSafe() the separators JSON allows raw, so a hostile value cannot forge or break a line.

import { auditFieldCharsMax, auditLineBytesMax } from '../config/limits.js';
import { isPlainJsonText } from '../domain/json-text.js';

/** 'success', 'failure' or 'locked' for authentications; 'success' or the error code for mutations. */
export type AuditOutcome = string;

export interface AuditEntry {
  /** `authenticate`, `caller.authenticate`, or the mutation's route (`POST /users/user`). */
  readonly action: string;
  /** The authenticated caller's user id; null when there is none (yet). */
  readonly caller: string | null;
  /** The ids the action names: path parameters, the created entity, the authenticated user. */
  readonly targets: Readonly<Record<string, string>>;
  readonly outcome: AuditOutcome;
  /** Why an authentication failed, for operators only (the client is never told). */
  readonly reason?: string;
  /** The client's address: the end user's `ip_address` for POST /authenticate, else the TCP peer. */
  readonly address: string;
  /** The TCP peer, when `address` is another one. */
  readonly peer?: string;
}

/** An entry's line made but for its time and caller (Audit.prepare). */
export interface PreparedEntry {
  readonly action: string;
  readonly rest: string;
  /** A kept entry's: the caller it was made for, and for that caller all of the line after its time, as UTF-8. */
  readonly encoded?: { readonly caller: string | null; readonly tail: Buffer };
}

/** Where finished lines go (the service's log output, src/service/log-writer.ts): one JSON object and a newline per call. */
export interface AuditSink {
  write(line: string): void;
  /** The same for a line already encoded as UTF-8; without it, lines come as text. */
  writeBytes?(line: Uint8Array): void;
}

/**
 * Characters that JSON (and so pino) leaves raw but that some log viewers take as a line break
 * (U+0085, U+2028, U+2029) or use to reorder what is shown (bidirectional overrides): written as
 * \uXXXX text instead, so a hostile name can neither start a forged line nor disguise one.
 */
const viewerHostile = /[\u0085\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/** s with the characters above escaped; for every client-supplied string that goes into a log line. */
export function logSafe(s: string): string {
  return s.replace(viewerHostile, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** A JSON string literal of s, cut and made safe as above; JSON.stringify escapes quotes, control characters and lone surrogates. */
function field(s: string): string {
  const text = s.length > auditFieldCharsMax ? s.slice(0, auditFieldCharsMax) : s;
  return isPlainJsonText(text) ? `"${text}"` : JSON.stringify(logSafe(text));
}

/** pino's number for info: audit lines read like the rest of the log. */
const infoLevel = 30;
/** What every line starts with, up to its time. */
const lineStart = `{"level":${infoLevel},"time":`;
/** A time in ms has at most this many digits (Number.MAX_SAFE_INTEGER has 16). */
const timeDigitsMax = 16;

/** The decimal digits of n (a non-negative integer, a time in ms) into bytes at `at`; where they end. */
function writeDigits(bytes: Buffer, at: number, n: number): number {
  let digits = 1;
  for (let rest = n; rest >= 10; rest = Math.floor(rest / 10)) digits++;
  for (let i = at + digits - 1, rest = n; i >= at; i--, rest = Math.floor(rest / 10)) bytes[i] = 0x30 + (rest % 10);
  return at + digits;
}

/** The constant parts of a credential check's line, as bytes (authenticationBytes). */
const asBytes = (text: string): Uint8Array => Buffer.from(text, 'latin1');
const callerBytes = asBytes(',"caller":');
const nullBytes = asBytes('null');
const targetsBytes = asBytes(',"targets":{');
const applicationBytes = asBytes('"application":');
const userBytes = asBytes('"user":');
const userNextBytes = asBytes(',"user":');
const apikeyBytes = asBytes('"apikey":');
const apikeyNextBytes = asBytes(',"apikey":');
const outcomeBytes = asBytes('},"outcome":');
const addressBytes = asBytes(',"address":');
const reasonBytes = asBytes(',"reason":');
const peerBytes = asBytes(',"peer":');
const lineEndBytes = asBytes(',"msg":"audit"}\n');

/** src into bytes at `at`: where it ends, or -1 if it would not fit or `at` is -1 already. */
function copyBytes(bytes: Uint8Array, at: number, src: Uint8Array): number {
  if (at < 0 || at + src.length > bytes.length) return -1;
  for (let i = 0; i < src.length; i++) bytes[at + i] = src[i]!;
  return at + src.length;
}

/**
 * The JSON string literal of s into bytes at `at`, as field() makes it, when s is plain text (isPlainJsonText) of at
 * most auditFieldCharsMax characters: where it ends. -1 for any other s, if it would not fit, or if `at` is -1 already.
 */
function plainField(bytes: Uint8Array, at: number, s: string): number {
  const n = s.length;
  if (at < 0 || n > auditFieldCharsMax || at + n + 2 > bytes.length) return -1;
  bytes[at] = 0x22;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) return -1;
    bytes[at + 1 + i] = c;
  }
  bytes[at + 1 + n] = 0x22;
  return at + n + 2;
}

export class Audit {
  /** `,"service":"<name>","audit":`, made once, as text and as UTF-8. */
  private readonly serviceField: string;
  private readonly serviceFieldBytes: Uint8Array;
  /** Where a line is put together as bytes (a kept entry's, a credential check's): lineStart, made once, then its time and the rest. */
  private readonly lineBytes = Buffer.alloc(auditLineBytesMax);
  private readonly lineBytesStart = this.lineBytes.write(lineStart, 'latin1');

  /**
   * Lines are written as text rather than through the logger: the entries hold only ids, codes and
   * addresses (never a secret), so the logger's redaction pass and generic serialiser, a third of an
   * authentication's cost under load, buy nothing here.
   */
  constructor(private readonly sink: AuditSink | undefined, service = 'authd') {
    this.serviceField = `,"service":${JSON.stringify(service)},"audit":`;
    this.serviceFieldBytes = Buffer.from(this.serviceField, 'utf8');
  }

  record(entry: AuditEntry): void {
    if (this.sink !== undefined) this.write(field(entry.action), entry.caller, this.rest(entry));
  }

  /**
   * A line of a credential check (`authenticate`, `caller.authenticate`), from its parts: the hot path of POST
   * /authenticate makes no entry, targets or text for it. Its ids, codes and addresses are plain ASCII, copied
   * into the line's bytes as they are; a line with any other text in it is written as text, escaped and cut.
   */
  recordAuthentication(
    action: string, caller: string | null, application: string | undefined, user: string | undefined, apikey: string | undefined,
    outcome: AuditOutcome, reason: string | undefined, address: string, peer: string | undefined,
  ): void {
    const sink = this.sink;
    if (sink === undefined) return;
    const end = sink.writeBytes === undefined ? -1 : this.authenticationBytes(action, caller, application, user, apikey, outcome, reason, address, peer);
    if (end >= 0) sink.writeBytes!(this.lineBytes.subarray(0, end));
    else this.write(field(action), caller, restText(authenticationTargets(application, user, apikey), outcome, address, reason, peer));
  }

  /** recordAuthentication's line into lineBytes, the bytes its text would encode to: where it ends, or -1 (see there). */
  private authenticationBytes(
    action: string, caller: string | null, application: string | undefined, user: string | undefined, apikey: string | undefined,
    outcome: AuditOutcome, reason: string | undefined, address: string, peer: string | undefined,
  ): number {
    const b = this.lineBytes;
    let at = copyBytes(b, writeDigits(b, this.lineBytesStart, Date.now()), this.serviceFieldBytes);
    at = copyBytes(b, plainField(b, at, action), callerBytes);
    at = copyBytes(b, caller === null ? copyBytes(b, at, nullBytes) : plainField(b, at, caller), targetsBytes);
    if (application !== undefined) at = plainField(b, copyBytes(b, at, applicationBytes), application);
    if (user !== undefined) at = plainField(b, copyBytes(b, at, application === undefined ? userBytes : userNextBytes), user);
    if (apikey !== undefined) at = plainField(b, copyBytes(b, at, application === undefined && user === undefined ? apikeyBytes : apikeyNextBytes), apikey);
    at = plainField(b, copyBytes(b, plainField(b, copyBytes(b, at, outcomeBytes), outcome), addressBytes), address);
    if (reason !== undefined) at = plainField(b, copyBytes(b, at, reasonBytes), reason);
    if (peer !== undefined && peer !== address) at = plainField(b, copyBytes(b, at, peerBytes), peer);
    return copyBytes(b, at, lineEndBytes);
  }

  /**
   * The same line but for its time and caller, made once: for an authentication that is recorded again and again
   * (a recognised one), kept for this caller. All of the line after its time is encoded once, and each line is its
   * bytes and a time. Made as text on every line, it would be a large share of what a recognised authentication
   * allocates, and encoding it a cost paid on every one.
   */
  prepareAuthentication(
    targets: string, outcome: AuditOutcome, reason: string | undefined, address: string, peer: string | undefined, keptFor: { readonly caller: string | null },
  ): PreparedEntry {
    const rest = restText(targets, outcome, address, reason, peer);
    const tail = Buffer.from(`${this.serviceField}${authenticateAction},"caller":${callerField(keptFor.caller)},${rest}`, 'utf8');
    return { action: authenticateAction, rest, encoded: { caller: keptFor.caller, tail } };
  }

  /** The line of a prepared entry, with this caller: the same text record() writes for the whole entry. */
  recordPrepared(prepared: PreparedEntry, caller: string | null): void {
    if (this.sink === undefined) return;
    const encoded = prepared.encoded;
    // Longer than the buffer can only be a line of hostile text cut to auditFieldCharsMax per field.
    if (encoded === undefined || encoded.caller !== caller || this.sink.writeBytes === undefined || this.lineBytesStart + timeDigitsMax + encoded.tail.length > this.lineBytes.length) {
      this.write(prepared.action, caller, prepared.rest);
      return;
    }
    const at = writeDigits(this.lineBytes, this.lineBytesStart, Date.now());
    this.lineBytes.set(encoded.tail, at);
    this.sink.writeBytes(this.lineBytes.subarray(0, at + encoded.tail.length));
  }

  private write(action: string, caller: string | null, rest: string): void {
    this.sink!.write(`${lineStart}${Date.now()}${this.serviceField}${action},"caller":${callerField(caller)},${rest}`);
  }

  /** What follows the caller. */
  private rest(entry: AuditEntry): string {
    let targets = '';
    for (const key in entry.targets) targets += `${targets === '' ? '' : ','}${field(key)}:${field(entry.targets[key]!)}`;
    return restText(targets, entry.outcome, entry.address, entry.reason, entry.peer);
  }
}

/** What follows the caller: targets (`"kind":"id",...`), outcome, address, reason, peer, and the line's end. */
function restText(targets: string, outcome: AuditOutcome, address: string, reason: string | undefined, peer: string | undefined): string {
  const why = reason === undefined ? '' : `,"reason":${field(reason)}`;
  const from = peer === undefined || peer === address ? '' : `,"peer":${field(peer)}`;
  return `"targets":{${targets}},"outcome":${field(outcome)},"address":${field(address)}${why}${from},"msg":"audit"}\n`;
}

/** The action of an authentication's line, as a JSON string. */
const authenticateAction = field('authenticate');

/** A credential check's targets as recordAuthentication takes them: those it has, in this order. */
export function authenticationTargets(applicationId: string | undefined, userId: string | undefined, apikeyId: string | undefined): string {
  let targets = applicationId === undefined ? '' : `"application":${field(applicationId)}`;
  if (userId !== undefined) targets += `${targets === '' ? '' : ','}"user":${field(userId)}`;
  if (apikeyId !== undefined) targets += `${targets === '' ? '' : ','}"apikey":${field(apikeyId)}`;
  return targets;
}

function callerField(caller: string | null): string {
  return caller === null ? 'null' : field(caller);
}

/** An Audit that writes nothing: for tools and tests that do not want the trail. */
export const noAudit = new Audit(undefined);
