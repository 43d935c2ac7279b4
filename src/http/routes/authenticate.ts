// POST /authenticate and GET /health.

import { authenticate } from '../bodies.js';
import type { RouteSpec } from '../pipeline.js';
import type { RouteDeps } from './context.js';

const notAuthenticated = '{"authenticated":false}';

export function authenticateRoutes({ authenticator, renderer }: RouteDeps): RouteSpec[] {
  return [
    {
      method: 'GET', pattern: '/health', public: true,
      handler: () => ({ result: '{"status":"ok"}' }),
    },
    {
      method: 'POST', pattern: '/authenticate',
      handler: async ({ body }) => {
        const input = authenticate.parse(body, 'body');
        const credential = input.credential!;
        const user = await authenticator.authenticate(
          input.application!, input.type!, credential.username!, credential.password!,
        );
        // Every failure looks the same: no hint of which check refused.
        if (user === undefined) return { result: notAuthenticated };
        return { result: `{"authenticated":true,"user":${renderer.userFull(user)}}` };
      },
    },
  ];
}
