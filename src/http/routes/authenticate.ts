// POST /authenticate: the high-rate check of an end user's password or API Key against an Application.

import { OverloadedError } from '../../auth/hash-pool.js';
import type { User } from '../../domain/entities.js';
import type { Answer, CredentialType } from '../../service/authenticator.js';
import { whenReady } from '../../service/when-ready.js';
import { authenticate } from '../bodies.js';
import { obj, ref } from '../openapi.js';
import { auditsItself, route, type RouteDecl, type RouteDeps, type RouteResult } from '../route.js';

const notAuthenticated = '{"authenticated":false}';

function succeeded({ renderer, metrics }: RouteDeps, user: User, type: CredentialType): RouteResult {
  metrics.authenticated(type, true);
  return { result: ['{"authenticated":true,"user":', renderer.userAuthenticatedKept(user), '}'] };
}

export const authenticateRoutes: readonly RouteDecl[] = [
  route({
    method: 'POST', pattern: '/authenticate', operationId: 'authenticate', tag: 'Authenticate',
    summary: 'Check a User\'s password or API Key against an Application',
    description: 'Every failure answers `authenticated: false` alike; on success the User comes along, its memberships by id and name.',
    // Changes nothing; the Authenticator writes its audit line (with the end user's outcome).
    access: 'authenticate', audit: auditsItself, body: authenticate,
    result: obj({ authenticated: { type: 'boolean' }, user: ref('UserAuthenticated') }, ['authenticated']),
    recognise: (req, deps) => {
      const known = deps.authenticator.recognised(req.body, req.authorization, req.remoteAddress);
      if (known === undefined) return undefined;
      // The caller's credentials were recognised with the body: counted as the check they stand for.
      deps.metrics.callerChecked(true);
      return succeeded(deps, known.user, known.byPassword ? 'username' : 'apikey');
    },
    handler: ({ body: input, req, caller, deps }) => {
      const credential = input.credential!;
      // The end user's address, as the calling application saw it, counts for the brute-force limiter.
      const address = input.ip_address ?? req.remoteAddress;
      const type = input.type!;
      const answer = (user: Answer): RouteResult | OverloadedError => {
        // Shed, not evaluated: answered 503 and not counted as an authentication.
        if (user instanceof OverloadedError) return user;
        // Every failure looks the same: no hint of which check refused.
        if (user === undefined) {
          deps.metrics.authenticated(type, false);
          return { result: notAuthenticated };
        }
        return succeeded(deps, user, type);
      };
      const user = deps.authenticator.authenticate(
        input.application!, type, credential.username!, credential.password!,
        { address, peer: req.remoteAddress, caller: caller?.user.id, request: req.body, authorization: req.authorization },
      );
      return whenReady(user, answer);
    },
  }),
];
