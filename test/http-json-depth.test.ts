// HTTP: a request body nested deeper than bodyJsonDepthMax is refused before it is parsed (issue 23: deep nesting held the event loop).

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { bodyJsonDepthMax, customDataDepthMax } from '../src/config/limits.js';
import { fails, failsOnField, okKey, type ApplicationJson } from './helpers/http-shapes.js';
import { startServer, type Api, type HttpResult, type ServerProcess } from './helpers/server.js';

let server: ServerProcess;
let api: Api;

before(async () => {
  server = await startServer();
  api = server.api();
});

after(async () => {
  await server?.dispose();
});

function postApplication(text: string): Promise<HttpResult> {
  return api.request('POST', '/applications/application', { raw: text, headers: { 'Content-Type': 'application/json' } });
}

/** `depth` objects nested in one another, the innermost holding a scalar. */
function nestedObjects(depth: number): string {
  return '{"k":'.repeat(depth - 1) + '{"k":1}' + '}'.repeat(depth - 1);
}

test('100,000 nested arrays are refused as invalid_json, with a message naming the bound', async () => {
  const res = await postApplication('['.repeat(100_000) + ']'.repeat(100_000));
  const error = fails(res, 400, 'invalid_json');
  assert.match(error.message, new RegExp(`more than ${bodyJsonDepthMax} levels deep`));
  // The service still answers.
  assert.equal((await api.get('/health', { credentials: null })).status, 200);
});

test('a body one level over the bound is refused; at the bound it is judged by its fields', async () => {
  // The body object is level 1 and custom_data starts at level 2.
  const over = `{"name":"over","custom_data":${nestedObjects(bodyJsonDepthMax)}}`;
  fails(await postApplication(over), 400, 'invalid_json');
  const atBound = `{"name":"at-bound","custom_data":${nestedObjects(bodyJsonDepthMax - 1)}}`;
  const error = failsOnField(await postApplication(atBound), 'custom_data');
  assert.match(error.message, new RegExp(`at most ${customDataDepthMax} levels deep`));
});

test('brackets and escaped quotes inside strings do not count as nesting', async () => {
  const name = `${'['.repeat(bodyJsonDepthMax + 10)}\\"{{{{`;
  const text = `{"name":"${name}","custom_data":{"s":"\\\\","t":"${'{'.repeat(200)}"}}`;
  const made = okKey<ApplicationJson>(await postApplication(text), 'application');
  assert.equal(made.name, JSON.parse(`"${name}"`));
});
