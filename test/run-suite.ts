// `npm test`: every test file on the front end this host picks, then the files that start a server again on node:http when that pick was uWS.
//
// `npm test -- name ...` runs only the files whose names contain one of the words; FRONT_END=uws|node
// runs the whole suite once on that front end.

import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadUws } from '../src/http/uws-loader.js';

const testDir = fileURLToPath(new URL('.', import.meta.url));
const sourceDir = fileURLToPath(new URL('../../test/', import.meta.url));
/** A file that starts the real server, so runs once per front end. */
const startsServer = /helpers\/server\.js|src\/main\.js/;

function run(label: string, files: readonly string[], env: NodeJS.ProcessEnv): boolean {
  // node --test without files would run every file its default patterns find, test/long/ included.
  if (files.length === 0) return true;
  process.stdout.write(`# ${label}: ${files.length} files on Node ${process.versions.node}\n`);
  const result = spawnSync(process.execPath, ['--test', '--test-concurrency=2', ...files], { stdio: 'inherit', env });
  return result.status === 0;
}

const words = process.argv.slice(2);
const files = readdirSync(testDir)
  .filter((name) => name.endsWith('.test.js') && (words.length === 0 || words.some((w) => name.includes(w))))
  // A compiled file whose source is gone is left over from an earlier build.
  .filter((name) => existsSync(join(sourceDir, name.replace(/\.js$/, '.ts'))))
  .sort()
  .map((name) => join(testDir, name));
const forced = process.env['FRONT_END'];
let passed: boolean;
if (forced !== undefined && forced !== '' && forced !== 'auto') {
  passed = run(`front end ${forced}`, files, process.env);
} else {
  const uws = loadUws({ untraceable: false });
  const first = uws.loaded ? `front end uws (${uws.build})` : `front end node (${uws.reason})`;
  passed = run(first, files, { ...process.env, FRONT_END: 'auto' });
  if (uws.loaded) {
    const serverFiles = files.filter((file) => startsServer.test(readFileSync(file, 'utf8')));
    passed = run('front end node', serverFiles, { ...process.env, FRONT_END: 'node' }) && passed;
  }
}
process.exit(passed ? 0 : 1);
