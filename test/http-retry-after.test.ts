// Issue 23 (argon2 exhaustion finding): every 503 carries Retry-After, its own where it has one, else unavailableRetryAfterS.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hashRetryAfterS, unavailableRetryAfterS } from '../src/config/limits.js';
import type { HttpRequest } from '../src/http/adapter.js';
import { errorReply } from '../src/http/pipeline.js';

const req = { startedAt: performance.now() } as HttpRequest;

function retryAfter(headers: readonly (readonly [string, string])[] | undefined): string | undefined {
  return headers?.find(([name]) => name.toLowerCase() === 'retry-after')?.[1];
}

test('every 503 says when to retry; other errors do not', () => {
  assert.equal(retryAfter(errorReply(req, 'storage_unavailable').headers), String(unavailableRetryAfterS));
  assert.equal(retryAfter(errorReply(req, 'starting').headers), String(unavailableRetryAfterS));
  assert.equal(retryAfter(errorReply(req, 'overloaded', undefined, { retryAfterS: hashRetryAfterS + 4 }).headers), String(hashRetryAfterS + 4));
  assert.equal(retryAfter(errorReply(req, 'invalid_json').headers), undefined);
  assert.equal(retryAfter(errorReply(req, 'internal').headers), undefined);
});
