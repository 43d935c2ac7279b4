// Before-images of a record: the ops that take an applied record back out of the state, for a log write that failed and was cut back.
//
// The Committer applies a record to memory before its log write is durable (so decide and apply are one
// synchronous step). When the write fails, the record was never made, and memory must forget it exactly.
// Records are effects (whole entities), so the before-image of every entity a record touches, put back
// through the same apply, restores the state: indexes included, because apply maintains them.

import type { EntityKind, Op, User } from '../domain/entities.js';
import type { State } from '../store/state.js';

function currentValue(state: State, kind: EntityKind, id: string): unknown {
  switch (kind) {
    case 'application': return state.application(id);
    case 'group': return state.group(id);
    case 'organization': return state.organization(id);
    case 'user': return state.user(id);
    case 'meta': return state.meta;
  }
}

function idOf(op: Op): string {
  if (op.op === 'del') return op.id;
  return op.kind === 'meta' ? 'meta' : op.value.id;
}

/**
 * The ops that, applied after `ops`, give back the state as it is now. Must be called before `ops` are
 * applied. Deletes change more than their entity inside apply (a deleted Group leaves its Users, a
 * deleted Application its Users and Groups): those entities' before-images are taken too.
 */
export function undoOps(state: State, ops: readonly Op[]): Op[] {
  const seen = new Set<string>();
  const undo: Op[] = [];
  const keep = (kind: EntityKind, id: string, before: unknown): void => {
    const key = `${kind}\u0000${id}`;
    if (seen.has(key)) return; // the first before-image is the one from before the record
    seen.add(key);
    undo.push(before === undefined ? { op: 'del', kind, id } : { op: 'put', kind, value: before } as Op);
  };
  const keepUsers = (users: readonly User[]): void => {
    for (const user of users) keep('user', user.id, user);
  };
  for (const op of ops) {
    const id = idOf(op);
    keep(op.kind, id, currentValue(state, op.kind, id));
    if (op.op !== 'del') continue;
    if (op.kind === 'group') keepUsers(state.usersOfGroup(id));
    if (op.kind === 'organization') keepUsers(state.usersOfOrganization(id));
    if (op.kind === 'application') {
      keepUsers(state.usersOfApplication(id));
      for (const group of state.groupsOfApplication(id)) keep('group', group.id, group);
    }
  }
  // Reverse order, so that if a record touched the same index twice, the oldest image is applied last.
  return undo.reverse();
}
