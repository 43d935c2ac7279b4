// POST /authenticate and GET /health.

import { authenticate } from '../bodies.js';
import type { RouteSpec } from '../pipeline.js';
import type { RouteDeps } from './context.js';

const notAuthenticated = '{"authenticated":false}';

export function authenticateRoutes({ authenticator, renderer, metrics }: RouteDeps): RouteSpec[] {
  return [
    {
      method: 'GET', pattern: '/health', public: true,
      handler: () => ({ result: '{"status":"ok"}' }),
    },
    {
      // Changes nothing; the Authenticator writes its audit line (with the end user's outcome).
      method: 'POST', pattern: '/authenticate', mutation: false,
      handler: async ({ body, req, caller }) => {
        const input = authenticate.parse(body, 'body');
        const credential = input.credential!;
        // The end user's address, as the calling application saw it, counts for the brute-force limiter.
        const address = input.ip_address ?? req.remoteAddress;
        const user = await authenticator.authenticate(
          input.application!, input.type!, credential.username!, credential.password!,
          { address, peer: req.remoteAddress, caller: caller?.id },
        );
        metrics.authenticated(input.type!, user !== undefined);
        // Every failure looks the same: no hint of which check refused.
        if (user === undefined) return { result: notAuthenticated };
        return { result: `{"authenticated":true,"user":${renderer.userFull(user)}}` };
      },
    },
  ];
}
