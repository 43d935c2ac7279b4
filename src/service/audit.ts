// The audit trail: one structured log line per mutation and per authentication outcome (time, caller, action, target ids, outcome, client address), and never a secret.
//
// A line looks like (pino adds level, time in ms since the epoch, and service):
//   {"level":30,"time":1700000000000,"service":"authd","audit":"authenticate","caller":"<user id>",
//    "targets":{"application":"<id>","user":"<id>"},"outcome":"failure","reason":"wrong_secret",
//    "address":"203.0.113.9","peer":"10.0.0.5","msg":"audit"}
// Only ids, codes and addresses go in; every string is cut to auditFieldCharsMax, pino escapes control
// characters, and logSafe() the separators JSON allows raw, so a hostile value cannot forge or break a line.

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

export interface AuditSink {
  info(obj: object, msg: string): void;
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

function cut(s: string): string {
  return logSafe(s.length > auditFieldCharsMax ? s.slice(0, auditFieldCharsMax) : s);
}

export class Audit {
  constructor(private readonly sink: AuditSink | undefined) {}

  record(entry: AuditEntry): void {
    if (this.sink === undefined) return;
    const targets: Record<string, string> = {};
    for (const [k, v] of Object.entries(entry.targets)) targets[cut(k)] = cut(v);
    const line: Record<string, unknown> = {
      audit: cut(entry.action), caller: entry.caller, targets, outcome: cut(entry.outcome), address: cut(entry.address),
    };
    if (entry.reason !== undefined) line['reason'] = entry.reason;
    if (entry.peer !== undefined && entry.peer !== entry.address) line['peer'] = cut(entry.peer);
    this.sink.info(line, 'audit');
  }
}

/** An Audit that writes nothing: for tools and tests that do not want the trail. */
export const noAudit = new Audit(undefined);
