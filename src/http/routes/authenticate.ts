// POST /authenticate and GET /health.

import { whenReady } from '../../service/when-ready.js';
import { authenticate } from '../bodies.js';
import { OverloadedError } from '../../auth/hash-pool.js';
import type { Answer, CredentialType } from '../../service/authenticator.js';
import type { User } from '../../domain/entities.js';
import type { RouteResult, RouteSpec } from '../pipeline.js';
import type { RouteDeps } from './context.js';

const notAuthenticated = '{"authenticated":false}';

export function authenticateRoutes({ authenticator, renderer, metrics }: RouteDeps): RouteSpec[] {
  const succeeded = (user: User, type: CredentialType): RouteResult => {
    metrics.authenticated(type, true);
    return { result: ['{"authenticated":true,"user":', renderer.userAuthenticatedBytes(user), '}'] };
  };
  return [
    {
      method: 'GET', pattern: '/health', public: true,
      handler: () => ({ result: '{"status":"ok"}' }),
    },
    {
      // Changes nothing; the Authenticator writes its audit line (with the end user's outcome).
      method: 'POST', pattern: '/authenticate', mutation: false,
      recognise: (req) => {
        const known = authenticator.recognised(req.body, req.authorization, req.remoteAddress);
        if (known === undefined) return undefined;
        // The caller's credentials were recognised with the body: counted as the check they stand for.
        metrics.callerChecked(true);
        return succeeded(known.user, known.byPassword ? 'username' : 'apikey');
      },
      handler: ({ body, req, caller }) => {
        const input = authenticate.parse(body, 'body');
        const credential = input.credential!;
        // The end user's address, as the calling application saw it, counts for the brute-force limiter.
        const address = input.ip_address ?? req.remoteAddress;
        const type = input.type!;
        const answer = (user: Answer): RouteResult | OverloadedError => {
          // Shed, not evaluated: answered 503 and not counted as an authentication.
          if (user instanceof OverloadedError) return user;
          // Every failure looks the same: no hint of which check refused.
          if (user === undefined) {
            metrics.authenticated(type, false);
            return { result: notAuthenticated };
          }
          return succeeded(user, type);
        };
        const user = authenticator.authenticate(
          input.application!, type, credential.username!, credential.password!,
          { address, peer: req.remoteAddress, caller: caller?.id, request: req.body, authorization: req.authorization },
        );
        return whenReady(user, answer);
      },
    },
  ];
}
