// Routes of a User's API Keys: create (with its secret), read (without), update (with), delete.

import * as decide from '../../store/decide.js';
import { apikeyCreate, apikeyUpdate } from '../bodies.js';
import type { RouteSpec } from '../pipeline.js';
import { deletedTrue, keyed, pathId, type RouteDeps } from './context.js';

export function apikeyRoutes({ state, committer, renderer, secrets }: RouteDeps): RouteSpec[] {
  const update: RouteSpec['handler'] = async ({ params, body }) => {
    const userId = pathId(params, 'userid');
    const keyId = pathId(params, 'apikeyid');
    decide.mustApikey(state, userId, keyId);
    const input = apikeyUpdate.parse(body, 'body');
    const { key } = await committer.commit((s, ctx) => decide.updateApikey(s, userId, keyId, input, ctx));
    return { result: keyed('apikey', renderer.apikey(userId, key, secrets.secretFor(key.id, key.nonce))) };
  };
  return [
    {
      method: 'POST', pattern: '/users/user/:userid/apikey',
      handler: async ({ params, body }) => {
        const userId = pathId(params, 'userid');
        decide.mustUser(state, userId);
        const input = apikeyCreate.parse(body, 'body');
        const { key } = await committer.commit((s, ctx) => decide.createApikey(s, userId, input, ctx));
        return { result: keyed('apikey', renderer.apikey(userId, key, secrets.secretFor(key.id, key.nonce))) };
      },
    },
    {
      method: 'GET', pattern: '/users/user/:userid/apikey/:apikeyid',
      handler: ({ params }) => {
        const userId = pathId(params, 'userid');
        const { key } = decide.mustApikey(state, userId, pathId(params, 'apikeyid'));
        return { result: keyed('apikey', renderer.apikey(userId, key)) };
      },
    },
    { method: 'PUT', pattern: '/users/user/:userid/apikey/:apikeyid', handler: update },
    // The spec's own sample request for this update uses POST; accept it as the same operation.
    { method: 'POST', pattern: '/users/user/:userid/apikey/:apikeyid', handler: update },
    {
      method: 'DELETE', pattern: '/users/user/:userid/apikey/:apikeyid',
      handler: async ({ params }) => {
        const userId = pathId(params, 'userid');
        const keyId = pathId(params, 'apikeyid');
        await committer.commit((s, ctx) => decide.deleteApikey(s, userId, keyId, ctx));
        return { result: deletedTrue };
      },
    },
  ];
}
