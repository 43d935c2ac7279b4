// The search index's id -> doc table answers what a Map would, through adds, deletes (backward shifts) and growth.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DocsById } from '../src/store/docs-by-id.js';
import { prng } from './helpers/prng.js';

test('id -> doc answers as a Map through adds, deletes and growth', () => {
  for (const seed of [1, 2, 3]) {
    const rand = prng(seed);
    /** What the index's docs hold: each doc's id, read by the table. */
    const ids: string[] = [];
    const table = new DocsById((doc) => ids[doc]!);
    const model = new Map<string, number>();
    if (seed === 3) table.reserve(3000);
    for (let op = 0; op < 20_000; op++) {
      if (rand() < 0.6 || model.size === 0) {
        // Ids that come back after a delete get a new doc, as a User created again does.
        const id = `u${Math.floor(rand() * 4000)}`;
        if (model.has(id)) continue;
        ids.push(id);
        table.add(id, ids.length - 1);
        model.set(id, ids.length - 1);
      } else {
        const id = `u${Math.floor(rand() * 4000)}`;
        assert.equal(table.delete(id), model.delete(id), `seed ${seed}: delete ${id}`);
      }
      if (op % 997 === 0) {
        for (const [id, doc] of model) assert.equal(table.get(id), doc, `seed ${seed}, op ${op}: ${id}`);
        for (let i = 0; i < 200; i++) {
          const id = `u${Math.floor(rand() * 5000)}`;
          assert.equal(table.get(id), model.get(id), `seed ${seed}, op ${op}: ${id}`);
        }
      }
      assert.equal(table.size, model.size);
    }
  }
});
