// POST /authenticate and GET /health.

import { whenReady } from '../../service/when-ready.js';
import { authenticate } from '../bodies.js';
import { OverloadedError } from '../../auth/hash-pool.js';
import type { Answer } from '../../service/authenticator.js';
import type { RouteResult, RouteSpec } from '../pipeline.js';
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
      handler: ({ body, req, caller }) => {
        const input = authenticate.parse(body, 'body');
        const credential = input.credential!;
        // The end user's address, as the calling application saw it, counts for the brute-force limiter.
        const address = input.ip_address ?? req.remoteAddress;
        const type = input.type!;
        const answer = (user: Answer): RouteResult | OverloadedError => {
          // Shed, not evaluated: answered 503 and not counted as an authentication.
          if (user instanceof OverloadedError) return user;
          metrics.authenticated(type, user !== undefined);
          // Every failure looks the same: no hint of which check refused.
          return { result: user === undefined ? notAuthenticated : ['{"authenticated":true,"user":', renderer.userFull(user), '}'] };
        };
        const user = authenticator.authenticate(
          input.application!, type, credential.username!, credential.password!,
          { address, peer: req.remoteAddress, caller: caller?.id },
        );
        return whenReady(user, answer);
      },
    },
  ];
}
