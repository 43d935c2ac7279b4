// Pins pageResult's byte budget: a page ends where the next item's UTF-8 bytes would pass pageBytesMax, counted exactly, whatever mix of one-, two- and three-byte characters the items hold.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pageBytesMax } from '../src/config/limits.js';
import { pageResult } from '../src/http/paging.js';
import type { Page } from '../src/store/creation-order.js';

interface Item { readonly createdAt: number; readonly id: string; readonly json: string }

function pageOf(texts: readonly string[]): Page<Item> {
  return { items: texts.map((json, i) => ({ createdAt: i + 1, id: `id${i}`, json })), more: false };
}

/** Items kept on the page, and whether it says more follow. */
function cut(texts: readonly string[]): { kept: number; more: boolean } {
  const pieces = pageResult('items', pageOf(texts), (item) => item.json);
  const body = JSON.parse(pieces.join('')) as { items: string[]; next?: string };
  return { kept: body.items.length, more: body.next !== undefined };
}

/** n items that use the budget exactly: their bytes and a separator each (pageResult counts one per item). */
function filling(n: number, char: string): string[] {
  const size = Math.floor((pageBytesMax - n) / n);
  return Array.from({ length: n }, (_, i) => item(i === 0 ? pageBytesMax - n - (n - 1) * size : size, char));
}

/** A JSON string literal of exactly `bytes` UTF-8 bytes (quotes included), of `char` (1, 2 or 3 bytes) padded with ASCII. */
function item(bytes: number, char: string): string {
  const charBytes = Buffer.byteLength(char);
  const count = Math.floor((bytes - 2) / charBytes);
  return JSON.stringify(char.repeat(count) + 'a'.repeat(bytes - 2 - count * charBytes));
}

test('ASCII items that fill the budget exactly all stay, though their bound at 3 bytes a unit is three times over', () => {
  const n = 4;
  const texts = filling(n, 'a');
  assert.equal(texts.reduce((sum, t) => sum + Buffer.byteLength(t) + 1, 0), pageBytesMax);
  assert.deepEqual(cut(texts), { kept: n, more: false });
  // One byte more and the last item goes to the next page.
  texts[n - 1] = item(Buffer.byteLength(texts[n - 1]!) + 1, 'a');
  assert.deepEqual(cut(texts), { kept: n - 1, more: true });
});

test('the same with two- and three-byte characters: the cut is by bytes, not by characters', () => {
  for (const char of ['é', '€']) {
    const n = 4;
    const texts = filling(n, char);
    assert.equal(texts.reduce((sum, t) => sum + Buffer.byteLength(t) + 1, 0), pageBytesMax, char);
    assert.deepEqual(cut(texts), { kept: n, more: false }, char);
    texts.push(item(10, char));
    assert.deepEqual(cut(texts), { kept: n, more: true }, char);
    // Counted by characters, a page of these would seem a third or half as large as it is.
    texts[0] = item(Buffer.byteLength(texts[0]!) + 1, char);
    assert.deepEqual(cut(texts), { kept: n - 1, more: true }, char);
  }
});

test('an item over the budget alone still comes, as the first of its page', () => {
  const r = cut([item(pageBytesMax + 10, '€'), item(10, 'a')]);
  assert.equal(r.kept, 1);
  assert.equal(r.more, true);
});
