// The audit trail: one structured log line per mutation and per authentication outcome (time, caller, action, target ids, outcome, client address), and never a secret.
//
// A line looks like a pino info line (time in ms since the epoch):
//   {"level":30,"time":1700000000000,"service":"authd","audit":"authenticate","caller":"<user id>",
//    "targets":{"application":"<id>","user":"<id>"},"outcome":"failure","address":"203.0.113.9",
//    "reason":"wrong_secret","peer":"10.0.0.5","msg":"audit"}
// Only ids, codes and addresses go in; every string is cut to auditFieldCharsMax, JSON.stringify escapes
// control characters, and logSafe() the separators JSON allows raw, so a hostile value cannot forge or break a line.

import { auditFieldCharsMax } from '../config/limits.js';

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
}

/** Where finished lines go (the service's log output, src/service/log-writer.ts): one JSON object and a newline per call. */
export interface AuditSink {
  write(line: string): void;
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

/** Printable ASCII but the quote and the backslash: text that is its own JSON string body. Ids, codes and addresses are. */
const plainText = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

/** A JSON string literal of s, cut and made safe as above; JSON.stringify escapes quotes, control characters and lone surrogates. */
function field(s: string): string {
  const text = s.length > auditFieldCharsMax ? s.slice(0, auditFieldCharsMax) : s;
  return plainText.test(text) ? `"${text}"` : JSON.stringify(logSafe(text));
}

/**
 * s as one flat string. Text built by concatenation is a tree of its pieces, which V8 walks and copies
 * every time the text is encoded; a prepared line's pieces, kept and written again and again, were
 * walked on every line (3.5% of the server's samples under POST /authenticate, perf). Decoding makes a
 * new flat string, the same text: every piece a line holds is well-formed (field() leaves only ASCII,
 * or JSON.stringify's output, which escapes lone surrogates).
 */
function flat(s: string): string {
  return Buffer.from(s, 'utf8').toString('utf8');
}

/** pino's number for info: audit lines read like the rest of the log. */
const infoLevel = 30;

export class Audit {
  /** `,"service":"<name>","audit":`, made once. */
  private readonly serviceField: string;

  /**
   * Lines are written as text rather than through the logger: the entries hold only ids, codes and
   * addresses (never a secret), so the logger's redaction pass and generic serialiser, a third of an
   * authentication's cost under load, buy nothing here.
   */
  constructor(private readonly sink: AuditSink | undefined, service = 'authd') {
    this.serviceField = flat(`,"service":${JSON.stringify(service)},"audit":`);
  }

  record(entry: AuditEntry): void {
    if (this.sink !== undefined) this.write(field(entry.action), entry.caller, this.rest(entry));
  }

  /**
   * An entry's line but for its time and caller, made once: for an outcome that is recorded again and again
   * (a recognised authentication). `kept`: it will be (its pieces are made flat, ~0.5 us once).
   */
  prepare(entry: Omit<AuditEntry, 'caller'>, kept = false): PreparedEntry {
    const action = field(entry.action);
    const rest = this.rest(entry);
    return kept ? { action: flat(action), rest: flat(rest) } : { action, rest };
  }

  /** The line of a prepared entry, with this caller: the same text record() writes for the whole entry. */
  recordPrepared(prepared: PreparedEntry, caller: string | null): void {
    if (this.sink !== undefined) this.write(prepared.action, caller, prepared.rest);
  }

  private write(action: string, caller: string | null, rest: string): void {
    this.sink!.write(`{"level":${infoLevel},"time":${Date.now()}${this.serviceField}${action},"caller":${caller === null ? 'null' : field(caller)},${rest}`);
  }

  /** What follows the caller: targets, outcome, address, reason, peer, and the line's end. */
  private rest(entry: Omit<AuditEntry, 'caller'>): string {
    let targets = '';
    for (const key in entry.targets) targets += `${targets === '' ? '' : ','}${field(key)}:${field(entry.targets[key]!)}`;
    const reason = entry.reason === undefined ? '' : `,"reason":${field(entry.reason)}`;
    const peer = entry.peer === undefined || entry.peer === entry.address ? '' : `,"peer":${field(entry.peer)}`;
    return `"targets":{${targets}},"outcome":${field(entry.outcome)},"address":${field(entry.address)}${reason}${peer},"msg":"audit"}\n`;
  }
}

/** An Audit that writes nothing: for tools and tests that do not want the trail. */
export const noAudit = new Audit(undefined);
