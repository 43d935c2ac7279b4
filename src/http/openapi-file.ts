// `npm run openapi`: writes the OpenAPI document of the route table to docs/openapi.json, or with --check says whether it is current.

import { readFileSync, writeFileSync } from 'node:fs';
import { openApiJson } from './openapi.js';
import { routeTable } from './routes/index.js';

const [mode, file = 'docs/openapi.json'] = process.argv.slice(2);
const json = openApiJson(routeTable);
if (mode === '--write') {
  writeFileSync(file, json);
  process.stderr.write(`wrote ${file}\n`);
} else if (mode === '--check') {
  let current = '';
  try { current = readFileSync(file, 'utf8'); } catch { /* missing: differs */ }
  if (current !== json) {
    process.stderr.write(`${file} is out of date: run npm run openapi\n`);
    process.exitCode = 1;
  }
} else {
  process.stdout.write(json);
}
