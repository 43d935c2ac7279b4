// POST /authenticate: the high-rate check of an end user's password or API Key against an Application, with an access token where it issues them.

import { OverloadedError } from '../../auth/hash-pool.js';
import type { Application, User } from '../../domain/entities.js';
import { DomainError } from '../../domain/errors.js';
import type { Answer, CredentialType } from '../../service/authenticator.js';
import type { Issued } from '../../tokens/token-service.js';
import { authenticate } from '../bodies.js';
import { obj, ref } from '../openapi.js';
import { auditsItself, route, type HandlerDeps, type RouteDecl, type RouteResult } from '../route.js';

const notAuthenticated = '{"authenticated":false}';

/** `apikeyId`: the API Key the success was by (its token says so); undefined for a password. */
function succeeded(deps: HandlerDeps, user: User, app: Application | undefined, type: CredentialType, apikeyId: string | undefined): RouteResult | Promise<RouteResult> {
  deps.metrics.authenticated(type, true);
  const rendered = deps.renderer.userAuthenticatedKept(user);
  const issued = app === undefined ? undefined : deps.tokens.issue(user, app, apikeyId);
  if (issued === undefined) return { result: ['{"authenticated":true,"user":', rendered, '}'] };
  return issued.then((token) => {
    deps.metrics.tokenIssued(token.alg);
    return { result: ['{"authenticated":true,"user":', rendered, tokenFields(token)] };
  });
}

function tokenFields({ token, expiresIn }: Issued): string {
  // A JWT is base64url and dots: nothing in it needs escaping.
  return `,"access_token":"${token}","token_type":"Bearer","expires_in":${expiresIn}}`;
}

export const authenticateRoutes: readonly RouteDecl[] = [
  route({
    method: 'POST', pattern: '/authenticate', operationId: 'authenticate', tag: 'Authenticate',
    summary: 'Check a User\'s password or API Key against an Application',
    description: 'Every failure answers `authenticated: false` alike; on success the User comes along, its memberships by id and name, ' +
      'and, when the Application issues tokens, an access token (a JWT) with its type and lifetime in seconds.',
    // Changes nothing; the Authenticator writes its audit line (with the end user's outcome).
    access: 'authenticate', audit: auditsItself, body: authenticate,
    result: obj({
      authenticated: { type: 'boolean' }, user: ref('UserAuthenticated'),
      access_token: { type: 'string', description: 'A JWT; only when the Application\'s `tokens.enabled` is true.' },
      token_type: { type: 'string', const: 'Bearer' }, expires_in: { type: 'integer', description: 'Seconds.' },
    }, ['authenticated']),
    recognise: (req, deps) => {
      const known = deps.authenticator.recognised(req.body, req.authorization, req.remoteAddress);
      if (known === undefined) return undefined;
      // The caller's credentials were recognised with the body: counted as the check they stand for.
      deps.metrics.callerChecked(true);
      return succeeded(deps, known.user, known.application, known.byPassword ? 'username' : 'apikey', known.keyId);
    },
    handler: ({ body: input, req, caller, deps }) => {
      // The pipeline lets no request without a caller reach a route that asks for one; the caller scopes the address.
      if (caller === undefined) throw new DomainError('unauthorized');
      const credential = input.credential!;
      // The end user's address as the calling application saw it, else the TCP peer: either counts for the
      // brute-force limiter only within this caller's scope (src/auth/limiter.ts), never another caller's.
      const address = input.ip_address ?? req.remoteAddress;
      const type = input.type!;
      const answer = (user: Answer): RouteResult | OverloadedError | Promise<RouteResult> => {
        // Shed, not evaluated: answered 503 and not counted as an authentication.
        if (user instanceof OverloadedError) return user;
        // Every failure looks the same: no hint of which check refused.
        if (user === undefined) {
          deps.metrics.authenticated(type, false);
          return { result: notAuthenticated };
        }
        return succeeded(deps, user, deps.state.application(input.application!), type, type === 'apikey' ? credential.username! : undefined);
      };
      const user = deps.authenticator.authenticate(
        input.application!, type, credential.username!, credential.password!,
        { address, peer: req.remoteAddress, caller: caller.user.id, request: req.body, authorization: req.authorization },
      );
      // then() flattens a token's promise; whenReady's types would not.
      return user instanceof Promise ? user.then(answer) : answer(user);
    },
  }),
];
