// ReDoS: every regular expression in src/ (found by parsing the source, so a new one is covered the day it is written) runs against long adversarial inputs in a worker; a catastrophic backtracker would never finish, a linear one finishes at once.
//
// Not a timing assertion: the deadline is there only to end a worker that would otherwise run for
// years; linear patterns on these inputs take milliseconds, so the margin is several orders of magnitude.

import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { Worker } from 'node:worker_threads';
import ts from 'typescript';

const srcDir = fileURLToPath(new URL('../../src', import.meta.url));
/** Ends a worker stuck in backtracking; a linear pattern is done with all its inputs in a few ms. */
const deadlineMs = 20_000;
const pumpChars = 20_000;

interface Found { file: string; line: number; source: string; flags: string }

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}

/** Regex literals and `new RegExp('literal')` calls, by parsing (not grepping) the TypeScript. */
function findRegexes(): Found[] {
  const found: Found[] = [];
  for (const file of sourceFiles(srcDir)) {
    const sf = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true);
    const visit = (node: ts.Node): void => {
      const line = sf.getLineAndCharacterOfPosition(node.getStart()).line + 1;
      if (node.kind === ts.SyntaxKind.RegularExpressionLiteral) {
        const text = node.getText();
        const end = text.lastIndexOf('/');
        found.push({ file: relative(srcDir, file), line, source: text.slice(1, end), flags: text.slice(end + 1) });
      } else if (ts.isNewExpression(node) && node.expression.getText() === 'RegExp' && node.arguments?.[0] !== undefined && ts.isStringLiteralLike(node.arguments[0])) {
        const flags = node.arguments[1] !== undefined && ts.isStringLiteralLike(node.arguments[1]) ? node.arguments[1].text : '';
        found.push({ file: relative(srcDir, file), line, source: node.arguments[0].text, flags });
      }
      ts.forEachChild(node, visit);
    };
    visit(sf);
  }
  return found;
}

/** Long strings that make backtracking patterns explode: runs of each character the pattern names, behind its literal prefix, with a tail that fails the match. */
function adversarialInputs(source: string): string[] {
  const named = new Set<string>(['a', 'A', '0', ' ', '\t', '/', '.', '-', '_', '@', ':', '%', '=', '\\', 'é', '\u2028', '\u0000']);
  for (const ch of source.replace(/\\[dDwWsS]/g, '')) if (ch.charCodeAt(0) >= 0x20 && !'^$()[]{}*+?|\\'.includes(ch)) named.add(ch);
  const literal = /^\^?((?:[A-Za-z0-9\-_:/.]|\\[/.\-])*)/.exec(source)?.[1]?.replace(/\\/g, '') ?? '';
  const prefixes = new Set<string>(['', literal, 'https://x/']);
  const chars = [...named];
  const inputs: string[] = [];
  for (const prefix of prefixes) {
    for (const c of chars) for (const tail of ['', '!\n']) inputs.push(prefix + c.repeat(pumpChars) + tail);
    for (let i = 0; i + 1 < chars.length; i += 2) inputs.push(prefix + (chars[i]! + chars[i + 1]!).repeat(pumpChars / 2) + '!');
  }
  return inputs;
}

const workerCode = `
const { parentPort, workerData } = require('node:worker_threads');
const re = new RegExp(workerData.source, workerData.flags);
let matched = 0;
for (const input of workerData.inputs) {
  re.lastIndex = 0;
  if (workerData.flags.includes('g')) { input.replace(re, ''); } else if (re.test(input)) matched++;
}
parentPort.postMessage({ done: workerData.inputs.length, matched });
`;

function runInWorker(found: Found, inputs: string[]): Promise<{ done: number } | 'stuck'> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(workerCode, { eval: true, workerData: { source: found.source, flags: found.flags, inputs } });
    const timer = setTimeout(() => {
      void worker.terminate();
      resolve('stuck');
    }, deadlineMs);
    worker.once('message', (m: { done: number }) => {
      clearTimeout(timer);
      void worker.terminate();
      resolve(m);
    });
    worker.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

const regexes = findRegexes();

test('the source holds the validation patterns this suite knows of (the parse finds them)', () => {
  // Ids are checked without a pattern (src/store/ids.ts, a linear loop); the audit escaper is one.
  assert.ok(regexes.some((r) => r.file.endsWith('audit.ts') && r.source.includes('\\u2028')), 'the audit log escaper');
  assert.ok(regexes.some((r) => r.file.endsWith('config.ts') && r.source.startsWith('^https?:')), 'the PUBLIC_URL pattern');
  assert.ok(regexes.length >= 8, `${regexes.length} patterns found`);
});

test('every pattern stays linear on adversarial input (one subtest per pattern, two workers at a time)', { concurrency: 2 }, async (t) => {
  await Promise.all(regexes.map((found) => t.test(`ReDoS: /${found.source}/${found.flags} (src/${found.file}:${found.line})`, async (st) => {
    const inputs = adversarialInputs(found.source);
    const outcome = await runInWorker(found, inputs);
    assert.notEqual(outcome, 'stuck', `still backtracking after ${deadlineMs} ms: catastrophic on one of ${inputs.length} inputs of ${pumpChars} characters`);
    st.diagnostic(`${inputs.length} inputs of ~${pumpChars} characters`);
  })));
});
