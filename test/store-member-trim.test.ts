// Pins MemberIndex's trim (the lists copied to their size in steps after a load): members, their order and counts stay what they were, whatever is added or removed between steps.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MemberIndex } from '../src/store/members.js';

test('a trim in small steps keeps every list, with adds and removes between the steps', () => {
  const members = new Map<string, Set<string>>();
  const index = new MemberIndex((key, id) => members.get(key)?.has(id) === true);
  const join = (key: string, id: string): void => {
    let set = members.get(key);
    if (set === undefined) members.set(key, (set = new Set()));
    set.add(id);
    index.add(key, id);
  };
  const leave = (key: string, id: string): void => {
    members.get(key)!.delete(id);
    index.remove(key, id);
  };
  for (let i = 0; i < 3000; i++) join(`org${i % 3}`, `u${i}`);
  for (let i = 0; i < 50; i++) join(`small${i}`, `u${i}`);
  index.startTrim();
  assert.equal(index.trimming, true);
  let steps = 0;
  for (let i = 3000; index.trimStep(97); i++, steps++) {
    // A new member of the list being copied, a member gone (enough of them compact a list), a new list.
    join(`org${i % 3}`, `u${i}`);
    if (i % 2 === 0) leave(`org${i % 3}`, `u${i - 2970}`);
    if (i % 5 === 0) join(`new${i}`, `u${i}`);
  }
  assert.ok(steps > 30, `${steps} steps`);
  assert.equal(index.trimming, false);
  for (const [key, set] of members) {
    assert.deepEqual(index.members(key), [...set], key);
    assert.equal(index.count(key), set.size, key);
  }
});

test('a trim step with nothing under way does nothing and says so', () => {
  const index = new MemberIndex(() => true);
  assert.equal(index.trimStep(10), false);
  index.add('a', 'u1');
  index.startTrim();
  assert.equal(index.trimStep(10), false);
  assert.deepEqual(index.members('a'), ['u1']);
});
