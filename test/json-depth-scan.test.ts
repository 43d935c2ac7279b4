// The raw-bytes nesting scan of src/http/json-depth.ts: brackets in strings, escapes, multi-byte text, the bound itself.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { nestsDeeperThan } from '../src/http/json-depth.js';

function deeper(text: string, depthMax: number): boolean {
  return nestsDeeperThan(Buffer.from(text, 'utf8'), depthMax);
}

test('counts arrays and objects alike, and passes nesting exactly at the bound', () => {
  assert.equal(deeper('[[{"a":[1]}]]', 4), false);
  assert.equal(deeper('[[{"a":[1]}]]', 3), true);
  assert.equal(deeper('{}', 0), true);
  assert.equal(deeper('1', 0), false);
  assert.equal(deeper('[1,[2],[3],{"a":1}]', 2), false, 'siblings do not add up');
});

test('brackets and braces inside strings are not nesting', () => {
  assert.equal(deeper('{"a":"[[[[{{{{"}', 1), false);
  assert.equal(deeper('["]]]]"]', 1), false, 'closers in a string do not lower the count either');
  assert.equal(deeper('[["]]]]",1]]', 2), false);
  assert.equal(deeper('[["]]]]",[1]]]', 2), true);
});

test('an escaped quote does not end a string; an escaped backslash before a quote does', () => {
  assert.equal(deeper('["\\"[[[["]', 1), false, '\\" stays inside the string');
  assert.equal(deeper('["\\\\",[[1]]]', 2), true, '\\\\ ends in a backslash, then the quote closes the string');
  assert.equal(deeper('["\\\\\\"[[",1]', 1), false, '\\\\ then \\" : still inside');
  assert.equal(deeper('["\\u005b\\u007b",[1]]', 2), false, 'a \\u escape of a bracket is text');
});

test('multi-byte UTF-8 in strings and keys is passed over', () => {
  assert.equal(deeper('{"ключ":["日本語 [[[ 🙂",{"é":[1]}]}', 4), false);
  assert.equal(deeper('{"ключ":["日本語 [[[ 🙂",{"é":[[1]]}]}', 4), true);
});

test('a deep run of 100,000 arrays is found without recursion', () => {
  assert.equal(nestsDeeperThan(Buffer.from('['.repeat(100_000) + ']'.repeat(100_000)), 64), true);
  assert.equal(nestsDeeperThan(Buffer.from('[]'.repeat(100_000)), 1), false);
});

test('openers counted past the bound in strings or side by side still leave the verdict to the nesting', () => {
  // More openers than the bound, none of them nesting: the count alone cannot decide, the scan does.
  assert.equal(deeper(`{"a":"${'{['.repeat(40)}"}`, 2), false, 'openers in a string');
  assert.equal(deeper(`[${'{},'.repeat(70)}{}]`, 2), false, 'openers side by side');
  assert.equal(deeper(`[${'{},'.repeat(70)}[[1]]]`, 2), true);
  // At most the bound in all: never deeper, whatever they are.
  assert.equal(deeper(`${'['.repeat(64)}${']'.repeat(64)}`, 64), false);
  assert.equal(deeper(`${'['.repeat(32)}${'{'.repeat(33)}${'}'.repeat(33)}${']'.repeat(32)}`, 64), true, 'braces and brackets add up');
});
