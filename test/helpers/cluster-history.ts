// The history of a cluster fault run (every operation with its client, node, times and outcome) and the checker of its invariants.
//
// Pure: the run (cluster-faults.ts) records operations and the nodes' final states; this file judges them. Times
// are monotonic milliseconds since the run began. An operation whose outcome is unknown (a timeout, a connection
// cut after the request was sent, a 5xx on a write) is indeterminate: it may have taken effect at any time after it
// began, even after the client gave up, and it never counts as a failure.

import { emailKey } from '../../src/domain/email.js';

export type OperationKind = 'create' | 'update' | 'read';

/** A User as a node answered it. */
export interface UserView {
  readonly id: string;
  readonly email: string;
  readonly name: string;
}

export type Outcome =
  | { readonly type: 'ok'; readonly user: UserView }
  /** A definite answer that nothing changed (or, for a read, that nothing was found): 4xx, a 503 read, a refused connection. */
  | { readonly type: 'failed'; readonly status: number; readonly code: string }
  /** Unknown: no answer in time, a connection cut after sending, or a 5xx on a write (its status kept for the counts). */
  | { readonly type: 'indeterminate'; readonly why: string; readonly status?: number };

export interface Operation {
  readonly id: number;
  readonly client: number;
  /** The authd node the request went to. */
  readonly node: number;
  readonly kind: OperationKind;
  /** create: the email as sent (its letter case and normal form vary). */
  readonly email?: string;
  /** update and read: the User's id. */
  readonly userId?: string;
  /** create and update: the name written, unique to this operation, so a name read back names its write. */
  readonly name?: string;
  /** Creates sent at once to several nodes for one email share a race number. */
  readonly race?: number;
  readonly startMs: number;
  endMs: number;
  outcome: Outcome;
}

/** Collects operations as clients start and finish them. */
export class History {
  readonly operations: Operation[] = [];
  private readonly began = performance.now();

  now(): number {
    return performance.now() - this.began;
  }

  /** Records an operation as started; finish() gives it its outcome. */
  begin(op: Omit<Operation, 'id' | 'startMs' | 'endMs' | 'outcome'>): Operation {
    const started: Operation = {
      ...op, id: this.operations.length, startMs: this.now(), endMs: Infinity, outcome: { type: 'indeterminate', why: 'not finished' },
    };
    this.operations.push(started);
    return started;
  }

  finish(op: Operation, outcome: Outcome): void {
    op.endMs = this.now();
    op.outcome = outcome;
  }
}

/** What each node answered to the final strong listing: its Users by id. */
export type FinalStates = readonly (ReadonlyMap<string, UserView> | undefined)[];

export type Invariant =
  | 'acknowledged-create-present'
  | 'one-user-per-email'
  | 'acknowledged-update-kept'
  | 'strong-read-fresh'
  | 'nodes-agree';

/** The five invariants, numbered as the issue and the reports number them. */
export const invariants: readonly Invariant[] = [
  'acknowledged-create-present', 'one-user-per-email', 'acknowledged-update-kept', 'strong-read-fresh', 'nodes-agree',
];

export interface Violation {
  readonly invariant: Invariant;
  readonly message: string;
  /** The operations involved, from the history. */
  readonly operations: readonly Operation[];
}

/**
 * A refusal a node gave from state older than a write acknowledged before the request began: an update answered
 * 404 for a User whose create was acknowledged before it. Not one of the five invariants (nothing wrong was
 * stored), counted beside them.
 */
export interface StaleRefusal {
  readonly operation: Operation;
  readonly create: Operation;
}

export interface CheckResult {
  readonly violations: Violation[];
  readonly staleRefusals: StaleRefusal[];
}

/** The end of a write for "may it come after": an indeterminate one may take effect at any later time. */
function effectEnd(op: Operation): number {
  return op.outcome.type === 'indeterminate' ? Infinity : op.endMs;
}

function isWrite(op: Operation): boolean {
  return op.kind === 'create' || op.kind === 'update';
}

/** The indexes the checks look things up in, built once. */
class HistoryIndex {
  /** Every write by the name it wrote (names are unique per operation). */
  readonly writeByName = new Map<string, Operation>();
  /** Acknowledged creates by the id they answered. */
  readonly createById = new Map<string, Operation>();
  /** Acknowledged updates by User id, in order of their start. */
  readonly ackedUpdatesById = new Map<string, Operation[]>();

  constructor(readonly operations: readonly Operation[]) {
    for (const op of operations) {
      if (isWrite(op) && op.name !== undefined) this.writeByName.set(op.name, op);
      if (op.outcome.type !== 'ok') continue;
      if (op.kind === 'create') this.createById.set(op.outcome.user.id, op);
      if (op.kind === 'update') {
        const list = this.ackedUpdatesById.get(op.userId!) ?? [];
        list.push(op);
        this.ackedUpdatesById.set(op.userId!, list);
      }
    }
  }

  /**
   * Whether the value written by `write` may be what User `id` holds, given the acknowledged updates in `before`:
   * the write must be one that could have taken effect on this User and not be strictly followed by any of them.
   * Returns the reason it may not, or undefined.
   */
  whyNotPossible(write: Operation | undefined, id: string, email: string, before: readonly Operation[]): string | undefined {
    if (write === undefined) return 'no operation wrote this name';
    if (write.outcome.type === 'failed') return `op ${write.id} wrote it and was refused (${write.outcome.status} ${write.outcome.code})`;
    if (write.kind === 'update' && write.userId !== id) return `op ${write.id} wrote it to another User (${write.userId})`;
    if (write.kind === 'create') {
      const created = write.outcome.type === 'ok' ? write.outcome.user.id : undefined;
      if (created !== undefined ? created !== id : emailKey(write.email!) !== emailKey(email)) return `op ${write.id} created another User`;
    }
    const overwritten = before.find((update) => update !== write && effectEnd(write) < update.startMs);
    if (overwritten !== undefined) return `op ${write.id} ended before acknowledged op ${overwritten.id} began`;
    return undefined;
  }
}

function describeUser(user: UserView): string {
  return `${user.id} ${JSON.stringify(user.email)} name ${JSON.stringify(user.name)}`;
}

/** Invariant 1: every acknowledged create is present on every node. */
function checkCreatesPresent(index: HistoryIndex, finals: FinalStates, out: Violation[]): void {
  for (const [id, create] of index.createById) {
    for (const [node, state] of finals.entries()) {
      if (state === undefined) continue;
      if (!state.has(id)) out.push({ invariant: 'acknowledged-create-present', message: `node ${node} lacks User ${id}, created and acknowledged`, operations: [create] });
    }
  }
}

/** Invariant 2: one User per email key, both in what was acknowledged and in every node's final state. */
function checkOneUserPerEmail(index: HistoryIndex, finals: FinalStates, out: Violation[]): void {
  const acknowledged = new Map<string, Operation[]>();
  for (const create of index.createById.values()) {
    const key = emailKey(create.email!);
    acknowledged.set(key, [...(acknowledged.get(key) ?? []), create]);
  }
  for (const [key, creates] of acknowledged) {
    if (creates.length > 1) {
      out.push({ invariant: 'one-user-per-email', message: `${creates.length} creates of email key ${JSON.stringify(key)} acknowledged, with different Users`, operations: creates });
    }
  }
  for (const [node, state] of finals.entries()) {
    if (state === undefined) continue;
    const byKey = new Map<string, UserView[]>();
    for (const user of state.values()) byKey.set(emailKey(user.email), [...(byKey.get(emailKey(user.email)) ?? []), user]);
    for (const [key, users] of byKey) {
      if (users.length < 2) continue;
      const ops = index.operations.filter((op) => op.kind === 'create' && emailKey(op.email!) === key && op.outcome.type !== 'failed');
      out.push({ invariant: 'one-user-per-email', message: `node ${node} holds ${users.length} Users for email key ${JSON.stringify(key)}: ${users.map(describeUser).join('; ')}`, operations: ops });
    }
  }
}

/** Invariant 3: a User's final name is its last acknowledged update's, or a write's that may have come after it. */
function checkUpdatesKept(index: HistoryIndex, finals: FinalStates, out: Violation[]): void {
  for (const [node, state] of finals.entries()) {
    if (state === undefined) continue;
    for (const user of state.values()) {
      const acked = index.ackedUpdatesById.get(user.id) ?? [];
      const write = index.writeByName.get(user.name);
      // The admin and any User no operation of this run touched are not this check's business.
      if (write === undefined && acked.length === 0 && !index.createById.has(user.id)) continue;
      const why = index.whyNotPossible(write, user.id, user.email, acked);
      if (why === undefined) continue;
      const ops = [...(write === undefined ? [] : [write]), ...acked.slice(-3)];
      out.push({ invariant: 'acknowledged-update-kept', message: `node ${node}: User ${describeUser(user)}: ${why}`, operations: ops });
    }
  }
}

/** Invariant 4: no strong read is older than a write acknowledged before the read began. */
function checkStrongReads(index: HistoryIndex, out: Violation[], stale: StaleRefusal[]): void {
  for (const op of index.operations) {
    if (op.kind === 'update' && op.outcome.type === 'failed' && op.outcome.status === 404) {
      const create = index.createById.get(op.userId!);
      if (create !== undefined && create.endMs < op.startMs) stale.push({ operation: op, create });
    }
    if (op.kind !== 'read') continue;
    const create = index.createById.get(op.userId!);
    if (create === undefined || create.endMs >= op.startMs) continue;
    if (op.outcome.type === 'failed' && op.outcome.status === 404) {
      out.push({ invariant: 'strong-read-fresh', message: `strong read op ${op.id} on node ${op.node} found no User ${op.userId}, created and acknowledged (op ${create.id}) before it began`, operations: [create, op] });
      continue;
    }
    if (op.outcome.type !== 'ok') continue;
    const before = (index.ackedUpdatesById.get(op.userId!) ?? []).filter((update) => update.endMs < op.startMs);
    const write = index.writeByName.get(op.outcome.user.name);
    let why = index.whyNotPossible(write, op.userId!, op.outcome.user.email, before);
    if (why === undefined && write !== undefined && write.startMs > op.endMs) why = `op ${write.id} began after the read ended`;
    if (why === undefined) continue;
    out.push({
      invariant: 'strong-read-fresh',
      message: `strong read op ${op.id} on node ${op.node} answered name ${JSON.stringify(op.outcome.user.name)}: ${why}`,
      operations: [...(write === undefined ? [] : [write]), ...before.slice(-2), op],
    });
  }
}

/** Invariant 5: every node answers the same Users with the same emails and names. */
function checkNodesAgree(finals: FinalStates, out: Violation[]): void {
  const answered = finals.map((state, node) => ({ state, node })).filter((entry) => entry.state !== undefined);
  const [first, ...rest] = answered;
  if (first === undefined) return;
  for (const other of rest) {
    const differences: string[] = [];
    const ids = new Set([...first.state!.keys(), ...other.state!.keys()]);
    for (const id of ids) {
      const a = first.state!.get(id);
      const b = other.state!.get(id);
      if (a?.email === b?.email && a?.name === b?.name) continue;
      differences.push(`${id}: ${a === undefined ? 'missing' : describeUser(a)} vs ${b === undefined ? 'missing' : describeUser(b)}`);
    }
    if (differences.length === 0) continue;
    out.push({
      invariant: 'nodes-agree',
      message: `nodes ${first.node} and ${other.node} differ in ${differences.length} Users (${first.state!.size} vs ${other.state!.size}); first: ${differences.slice(0, 5).join('; ')}`,
      operations: [],
    });
  }
}

/** Checks the five invariants over a history and the nodes' final states (undefined: that node gave no final answer). */
export function checkHistory(operations: readonly Operation[], finals: FinalStates): CheckResult {
  const index = new HistoryIndex(operations);
  const violations: Violation[] = [];
  const staleRefusals: StaleRefusal[] = [];
  for (const [node, state] of finals.entries()) {
    if (state === undefined) violations.push({ invariant: 'nodes-agree', message: `node ${node} gave no final strong listing`, operations: [] });
  }
  checkCreatesPresent(index, finals, violations);
  checkOneUserPerEmail(index, finals, violations);
  checkUpdatesKept(index, finals, violations);
  checkStrongReads(index, violations, staleRefusals);
  checkNodesAgree(finals, violations);
  return { violations, staleRefusals };
}

// ---- reporting ----

function formatMs(ms: number): string {
  return Number.isFinite(ms) ? `${(ms / 1000).toFixed(3)}s` : 'never';
}

function formatOutcome(outcome: Outcome): string {
  switch (outcome.type) {
    case 'ok': return `ok ${describeUser(outcome.user)}`;
    case 'failed': return `failed ${outcome.status} ${outcome.code}`;
    case 'indeterminate': return `indeterminate (${outcome.why})`;
  }
}

/** One line per operation, as a violation report quotes them. */
export function formatOperation(op: Operation): string {
  const args = op.kind === 'create' ? `email ${JSON.stringify(op.email)} name ${op.name}` : op.kind === 'update' ? `${op.userId} name ${op.name}` : `${op.userId}`;
  const race = op.race === undefined ? '' : ` race ${op.race}`;
  return `op ${op.id} client ${op.client} node ${op.node} ${op.kind} ${args}${race} [${formatMs(op.startMs)} .. ${formatMs(op.endMs)}] -> ${formatOutcome(op.outcome)}`;
}

export function formatViolation(violation: Violation): string {
  const number = invariants.indexOf(violation.invariant) + 1;
  return [`invariant ${number} (${violation.invariant}): ${violation.message}`, ...violation.operations.map((op) => `    ${formatOperation(op)}`)].join('\n');
}

/** Operations counted by kind and outcome, with 409s and 503s apart: `create ok 512`, `update failed-409 3`. */
export function countOperations(operations: readonly Operation[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const op of operations) {
    const outcome = op.outcome.type === 'failed' ? `failed-${op.outcome.status}`
      : op.outcome.type === 'indeterminate' && op.outcome.status !== undefined ? `indeterminate-${op.outcome.status}` : op.outcome.type;
    const key = `${op.kind} ${outcome}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return counts;
}
