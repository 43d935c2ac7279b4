// What the limiter's tests share: Keycloak-like settings, a clock the test moves, and one failed attempt.

import type { Admission, BruteForceLimiter, LimiterSettings } from '../../src/auth/limiter.js';

export const keycloakLike: LimiterSettings = {
  failureFactor: 30, addressFailureFactor: 100, waitIncrementMs: 60_000, maxWaitMs: 15 * 60_000,
  failureResetMs: 12 * 3600_000, tarpitStepMs: 250, tarpitMaxMs: 5_000,
};

export function clock(): { now: () => number; advance: (ms: number) => void } {
  let t = 1_700_000_000_000;
  return { now: () => t, advance: (ms) => { t += ms; } };
}

/** One wrong password: admitted (if it is) and failed. scope: the caller that named the address ('' for a Basic caller). */
export function fail(limiter: BruteForceLimiter, account: string, address: string, scope = ''): Admission {
  const a = limiter.admit(account, address, scope);
  if (a.admitted) limiter.failed(a.ticket);
  return a;
}
