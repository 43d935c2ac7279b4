// Credential checks for callers (Basic) and for POST /authenticate: cache first, argon2 in workers, API keys by keyed hash.

import type { ApiKeySecrets } from '../auth/apikey-secrets.js';
import type { HashPool, Argon2Params } from '../auth/hash-pool.js';
import { needsRehash } from '../auth/hash-pool.js';
import type { VerifyCache } from '../auth/verify-cache.js';
import type { ApiKey, Application, User } from '../domain/entities.js';
import { isApikeyId } from '../store/ids.js';
import { rehashPassword } from '../store/decide.js';
import type { State } from '../store/state.js';
import type { Committer } from './committer.js';

export type CredentialType = 'username' | 'apikey';

export interface Logger {
  warn(obj: object, msg?: string): void;
}

export class Authenticator {
  /** Argon2 verifications under way, by keyed hash of the password and the stored hash. */
  private readonly inFlight = new Map<string, Promise<boolean>>();

  constructor(
    private readonly state: State,
    private readonly pool: HashPool,
    private readonly cache: VerifyCache,
    private readonly secrets: ApiKeySecrets,
    private readonly committer: Committer,
    private readonly argon2: Argon2Params,
    private readonly logger: Logger,
  ) {}

  /**
   * The User whose password this is, or undefined. Unknown usernames cost the same hashing work as known ones,
   * so the answer's timing does not tell which usernames exist.
   */
  async verifyPassword(username: string, password: string): Promise<User | undefined> {
    const user = this.state.userByEmail(username);
    if (user === undefined) {
      await this.pool.verifyDummy(password);
      return undefined;
    }
    if (this.cache.check(user.id, user, password)) return user;
    const ok = await this.verifyOnce(password, user.passwordHash);
    if (!ok) return undefined;
    // The User may have changed while a worker hashed: judge the current one, and only if its password is the one checked.
    const current = this.state.user(user.id);
    if (current === undefined || current.passwordHash !== user.passwordHash) return undefined;
    this.cache.remember(current.id, current, password);
    if (needsRehash(current.passwordHash, this.argon2)) this.rehash(current, password);
    return current;
  }

  /**
   * Concurrent checks of the same password against the same hash share one argon2 run: a burst of
   * logins on a cold cache (a restart, a client's connection pool warming up) costs one hash, not fifty.
   */
  private verifyOnce(password: string, passwordHash: string): Promise<boolean> {
    const key = `${this.cache.fingerprint(password)}\u0000${passwordHash}`;
    let flight = this.inFlight.get(key);
    if (flight === undefined) {
      flight = this.pool.verifyPassword(password, passwordHash).finally(() => this.inFlight.delete(key));
      this.inFlight.set(key, flight);
    }
    return flight;
  }

  /** API Key secrets are high-entropy: a keyed hash and a constant-time compare, no argon2. */
  verifyApikey(keyId: string, secret: string): { user: User; key: ApiKey } | undefined {
    if (!isApikeyId(keyId)) {
      this.secrets.verify('0'.repeat(25), '', secret);
      return undefined;
    }
    const user = this.state.userByApikey(keyId);
    const key = user?.apikeys.find((k) => k.id === keyId);
    if (user === undefined || key === undefined) {
      this.secrets.verify(keyId, '', secret);
      return undefined;
    }
    return this.secrets.verify(key.id, key.nonce, secret) ? { user, key } : undefined;
  }

  /** A caller of the admin API: a User of the base Application, not DISABLED, by password or by ENABLED API Key. */
  async caller(username: string, password: string): Promise<User | undefined> {
    const base = this.state.meta?.baseApplication;
    if (base === undefined) return undefined;
    const user = username.includes('@')
      ? await this.verifyPassword(username, password)
      : this.apikeyUser(this.verifyApikey(username, password));
    return user !== undefined && mayAuthenticate(user, this.state.application(base)) ? user : undefined;
  }

  /** POST /authenticate: the User, or undefined for every kind of failure alike. */
  async authenticate(applicationId: string, type: CredentialType, username: string, password: string): Promise<User | undefined> {
    const user = type === 'username'
      ? await this.verifyPassword(username, password)
      : this.apikeyUser(this.verifyApikey(username, password));
    return user !== undefined && mayAuthenticate(user, this.state.application(applicationId)) ? user : undefined;
  }

  private apikeyUser(found: { user: User; key: ApiKey } | undefined): User | undefined {
    return found !== undefined && found.key.status === 'ENABLED' ? found.user : undefined;
  }

  /** bcrypt from an import, or argon2id with old parameters: store a fresh argon2id hash; a failure only delays it. */
  private rehash(user: User, password: string): void {
    this.pool.hashPassword(password).then(
      (newHash) => this.committer.commit((state) => rehashPassword(state, user.id, user.passwordHash, newHash) ?? { ops: [], result: undefined }),
    ).catch((err: unknown) => {
      this.logger.warn({ userId: user.id, err: err instanceof Error ? err.name : 'unknown' }, 'password rehash failed; retried on next login');
    });
  }
}

/** A DISABLED User fails; UNVERIFIED and ENABLED pass, against an ENABLED Application they are associated with. */
export function mayAuthenticate(user: User, app: Application | undefined): boolean {
  return app !== undefined && app.status === 'ENABLED' && user.status !== 'DISABLED' && user.applications.includes(app.id);
}
