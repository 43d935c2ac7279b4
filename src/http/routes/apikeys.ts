// Routes of a User's API Keys: create (with its secret), read (without), update (with), delete. Keys of base-Application Users are an admin's.

import * as decide from '../../store/decide.js';
import { apikeyCreate, apikeyUpdate } from '../bodies.js';
import { deleted, one, ref } from '../openapi.js';
import { deletedTrue, guardNow, keyed, pathId, route, type RouteContext, type RouteDecl, type RouteResult } from '../route.js';
import { userGuard } from './users.js';

type ApikeyBody = ReturnType<typeof apikeyUpdate.parse>;

const tag = 'API Keys';
const pattern = '/users/user/:userid/apikey/:apikeyid';

async function update(ctx: RouteContext<ApikeyBody>): Promise<RouteResult> {
  const { state, renderer, secrets } = ctx.deps;
  const userId = pathId(ctx.params, 'userid');
  const keyId = pathId(ctx.params, 'apikeyid');
  decide.mustApikey(state, userId, keyId);
  const guard = guardNow(ctx, userGuard(userId));
  const { key } = await ctx.commit((s, dc) => decide.updateApikey(s, userId, keyId, ctx.body, dc), guard);
  return { result: keyed('apikey', renderer.apikey(userId, key, secrets.secretFor(key.id, key.nonce))) };
}

export const apikeyRoutes: readonly RouteDecl[] = [
  route({
    method: 'POST', pattern: '/users/user/:userid/apikey', operationId: 'createApikey', tag, summary: 'Create an API Key (answer carries its secret)',
    description: '`roles` narrows what a caller using the key may do: the owner\'s roles intersected with the key\'s. Only a key of a User of the base Application has roles.',
    access: 'manage', audit: 'apikey.create', body: apikeyCreate, result: one('apikey', ref('ApiKeyWithSecret')),
    handler: async (ctx) => {
      const { state, renderer, secrets } = ctx.deps;
      const userId = pathId(ctx.params, 'userid');
      decide.mustUser(state, userId);
      const guard = guardNow(ctx, userGuard(userId));
      const { key } = await ctx.commit((s, dc) => decide.createApikey(s, userId, ctx.body, dc), guard);
      return { result: keyed('apikey', renderer.apikey(userId, key, secrets.secretFor(key.id, key.nonce))), targets: { apikey: key.id } };
    },
  }),
  route({
    method: 'GET', pattern, operationId: 'getApikey', tag, summary: 'Read an API Key (without its secret)',
    access: 'read', audit: 'none', result: one('apikey', ref('ApiKey')),
    handler: ({ params, deps: { state, renderer } }) => {
      const userId = pathId(params, 'userid');
      const { key } = decide.mustApikey(state, userId, pathId(params, 'apikeyid'));
      return { result: keyed('apikey', renderer.apikey(userId, key)) };
    },
  }),
  route({
    method: 'PUT', pattern, operationId: 'updateApikey', tag, summary: 'Update an API Key (answer carries its secret)',
    access: 'manage', audit: 'apikey.update', body: apikeyUpdate, result: one('apikey', ref('ApiKeyWithSecret')), handler: update,
  }),
  // The spec's own sample request for this update uses POST; accept it as the same operation.
  route({
    method: 'POST', pattern, operationId: 'updateApikeyByPost', tag, summary: 'Update an API Key, as PUT (the spec\'s sample request uses POST)',
    access: 'manage', audit: 'apikey.update', body: apikeyUpdate, result: one('apikey', ref('ApiKeyWithSecret')), handler: update,
  }),
  route({
    method: 'DELETE', pattern, operationId: 'deleteApikey', tag, summary: 'Delete a DISABLED API Key',
    access: 'manage', audit: 'apikey.delete', result: deleted,
    handler: async (ctx) => {
      const userId = pathId(ctx.params, 'userid');
      const keyId = pathId(ctx.params, 'apikeyid');
      const guard = guardNow(ctx, userGuard(userId));
      await ctx.commit((s, dc) => decide.deleteApikey(s, userId, keyId, dc), guard);
      return { result: deletedTrue };
    },
  }),
];
