// Pins the adapter's list of requests still receiving their body (ReceivingList) to an array model: oldest first, whatever order entries leave in.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ReceivingList, type Linked } from '../src/http/adapter.js';

interface Entry extends Linked<Entry> { readonly n: number }

/** The entries from oldest to newest, as the sweep walks them (it removes each one it reaches). */
function walk(list: ReceivingList<Entry>): number[] {
  const order: number[] = [];
  const taken: Entry[] = [];
  for (let entry = list.oldest; entry !== undefined; entry = list.oldest) {
    order.push(entry.n);
    taken.push(entry);
    list.remove(entry);
  }
  for (const entry of taken) list.add(entry);
  return order;
}

test('random adds and removes, in any order and twice over, leave the list what an array model is', () => {
  const seed = Number(process.env['LIST_SEED'] ?? 7);
  let x = seed;
  const random = (n: number): number => { x = (Math.imul(x, 1103515245) + 12345) >>> 0; return x % n; };
  const list = new ReceivingList<Entry>();
  let model: Entry[] = [];
  let next = 0;
  for (let step = 0; step < 5000; step++) {
    const roll = random(10);
    if (roll < 5 || model.length === 0) {
      const entry: Entry = { n: next++, older: undefined, newer: undefined };
      list.add(entry);
      model.push(entry);
    } else {
      // Mostly the newest (a body that arrived whole at once), else any: a slow body, the oldest by the sweep.
      const at = roll < 8 ? model.length - 1 : random(model.length);
      const entry = model[at]!;
      list.remove(entry);
      list.remove(entry);
      model = model.filter((e) => e !== entry);
    }
    if (step % 97 === 0) assert.deepEqual(walk(list), model.map((e) => e.n), `seed ${seed}, step ${step}`);
    assert.equal(list.oldest, model[0], `seed ${seed}, step ${step}`);
  }
  for (const entry of [...model]) list.remove(entry);
  assert.equal(list.oldest, undefined);
  const removed: Entry = { n: -1, older: undefined, newer: undefined };
  list.remove(removed);
  assert.equal(list.oldest, undefined, 'removing an entry never added does nothing');
});
