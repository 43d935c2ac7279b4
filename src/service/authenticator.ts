// Credential checks for callers (Basic) and for POST /authenticate: the brute-force limiter first, then the cache, argon2 in workers, API keys by keyed hash; one audit line per outcome.

import { setTimeout as sleep } from 'node:timers/promises';
import type { ApiKeySecrets } from '../auth/apikey-secrets.js';
import type { HashPool, HashTurn, Argon2Params } from '../auth/hash-pool.js';
import { needsRehash, overloaded, OverloadedError } from '../auth/hash-pool.js';
import { KnownCallers, type KnownCaller } from '../auth/known-callers.js';
import { unpackPasswordHash } from '../auth/packed-hash.js';
import { BruteForceLimiter, type Admission, type Ticket } from '../auth/limiter.js';
import type { VerifyCache } from '../auth/verify-cache.js';
import { knownAttemptsMax, knownCallersMax, knownCallerTtlMs } from '../config/limits.js';
import { emailKey } from '../domain/email.js';
import type { ApiKey, Application, User } from '../domain/entities.js';
import { isApikeyId } from '../domain/ids.js';
import { rehashPassword } from '../store/decide.js';
import type { State } from '../store/state.js';
import { authenticationTargets, noAudit, type Audit, type PreparedEntry } from './audit.js';
import type { Commits } from './committer.js';

export type CredentialType = 'username' | 'apikey';

export interface Logger {
  warn(obj: object, msg?: string): void;
}

/** Where an attempt comes from, for the per-address counters and the audit line. */
export interface AttemptContext {
  /** The end user's address (`ip_address` of POST /authenticate), else the TCP peer. */
  readonly address: string;
  /** The TCP peer, when `address` came from the request body. */
  readonly peer?: string;
  /**
   * The authenticated caller on whose behalf (POST /authenticate): its User id, which is also the scope of
   * `address` for the brute-force limiter (an address counts only within the caller that named it).
   */
  readonly caller?: string;
  /** The request's exact body (POST /authenticate): a success is remembered by it, authorization and the peer (see recognised()). */
  readonly request?: Uint8Array;
  /** The Authorization header the caller's credentials came in. */
  readonly authorization?: string;
}

/** A success as remembered: what a repeat must find unchanged, and since when nothing in the State has moved. */
interface Remembered extends KnownCaller {
  /** The State's version when the User (and Application) were last found current; -1 until the first repeat looks. */
  checkedAt: number;
  /** The API Key used, if one was: a caller's narrows its User's roles (src/domain/roles.ts); an authentication's is named in its token. */
  readonly keyId?: string | undefined;
}

/** A caller of the admin API whose credentials passed: its User and, when it used one, its API Key's id. */
export interface CallerIdentity {
  readonly user: User;
  readonly keyId?: string | undefined;
}

/** What a caller check answers: the caller, undefined for every kind of failure alike, or `overloaded`. */
export type CallerAnswer = CallerIdentity | undefined | OverloadedError;

/** A POST /authenticate that passed, as remembered by its body, Authorization header and peer: what a repeat must find unchanged, and its audit line. */
interface KnownAttempt extends Remembered {
  readonly application: Application;
  /** The entry by which its caller was known (knownCaller()): the repeat's caller check is that entry's. */
  readonly caller: Remembered;
  /** The success's audit line, made but for its time and caller. */
  readonly line: PreparedEntry;
}

/** A password check: the User it belongs to (else undefined), and whether the verify cache answered. */
interface Verified {
  readonly user: User | undefined;
  readonly cached: boolean;
}

/** What a credential check found, before the Application's rules are applied. */
interface Checked {
  readonly user: User | undefined;
  readonly outcome: 'success' | 'failure' | 'locked' | 'overloaded';
  /** For the audit line only: the client is never told which check refused. */
  readonly reason?: string;
  /** The account the credential names, when it exists (audit only). */
  readonly userId?: string;
  /** A password success answered by the verify cache: no new authentication happened. */
  readonly cached?: boolean;
  /** A success's settled ticket: what the limiter knew of the attempt (see KnownCallers). */
  readonly ticket?: Ticket;
}

/** A POST /authenticate attempt's context: always on behalf of a caller, whose User id scopes its address. */
export interface AuthenticateContext extends AttemptContext {
  readonly caller: string;
}

/** What a check answers: the User, undefined for every kind of failure alike, or `overloaded` (the hash queue is full). */
export type Answer = User | undefined | OverloadedError;

/** A password check refused because the hash queue is full: nothing was evaluated, the attempt counts for nothing. */
const shed: Checked = { user: undefined, outcome: 'overloaded' };

/** Limits that let nothing through: for tools and tests that want no brute-force protection. */
const unlimited = new BruteForceLimiter({
  failureFactor: 0, addressFailureFactor: 0, waitIncrementMs: 0, maxWaitMs: 0, failureResetMs: 0, tarpitStepMs: 0, tarpitMaxMs: 0,
});

/** Weight of the newest argon2 duration in the running mean that locked answers imitate. */
const verifyMsSmoothing = 0.1;

export class Authenticator {
  /** Running mean of an argon2 verification as callers see it (queue wait included). */
  private typicalVerifyMs = 0;
  /** Argon2 verifications under way (see once()). */
  private readonly inFlight = new Map<string, Promise<boolean>>();
  private readonly known = new KnownCallers<Remembered>({ ttlMs: knownCallerTtlMs, entriesMax: knownCallersMax });
  private readonly knownAttempts = new KnownCallers<KnownAttempt>({ ttlMs: knownCallerTtlMs, entriesMax: knownAttemptsMax });

  constructor(
    private readonly state: State,
    private readonly pool: HashPool,
    private readonly cache: VerifyCache,
    private readonly secrets: ApiKeySecrets,
    private readonly committer: Commits,
    private readonly argon2: Argon2Params,
    private readonly logger: Logger,
    private readonly guard: { readonly limiter: BruteForceLimiter; readonly audit: Audit } = { limiter: unlimited, audit: noAudit },
  ) {}

  /**
   * `user` (the User `username` names, looked up by the caller) if this is its password, else undefined. Unknown
   * usernames cost the same hashing work as known ones, so the answer's timing does not tell which usernames
   * exist. No limiter here: callers go through check(). Answered at once (no promise) when the verify cache
   * knows the password, and refused at once (`overloaded`, returned rather than thrown: see there) when it
   * would need a hash the full queue cannot take. A burst of refusals (clients retrying together) costs
   * the event loop that many times a refusal's cost, which every reply in the burst waits behind.
   * The hash pool serves the attempts of pairs the limiter knows to be good first, and bounds each
   * address's and each caller's share of the rest (HashTurn): a flood of guesses waits behind the logins that succeed.
   */
  private verifyPassword(user: User | undefined, username: string, password: string, ticket: Ticket): Verified | Promise<Verified> | OverloadedError {
    if (user !== undefined && this.cache.check(user.id, user, password)) return { user, cached: true };
    // Concurrent checks of the same password against the same hash share one argon2 run (see once()).
    // The stored hash (packed, src/auth/packed-hash.ts) names the hash as well as its PHC string would.
    const fingerprint = this.cache.fingerprint(password);
    const key = user === undefined ? `${fingerprint}\u0000unknown\u0000${emailKey(username)}` : `${fingerprint}\u0000${user.passwordHash}`;
    const shared = this.inFlight.get(key);
    const turn: HashTurn = { knownGood: user !== undefined && this.guard.limiter.trusted(ticket), address: ticket.addressKey, caller: ticket.scope };
    if (shared === undefined && this.pool.refuses(turn)) return overloaded;
    return user === undefined
      ? this.timed(shared ?? this.once(key, this.pool.verifyDummy(password, turn))).then(() => ({ user: undefined, cached: false }))
      : this.verifiedPassword(user, password, shared ?? this.once(key, this.pool.verifyPassword(password, unpackPasswordHash(user.passwordHash), turn)));
  }

  /** The User once its password checked out: the current one, and only if its password is still the one checked. */
  private async verifiedPassword(user: User, password: string, verification: Promise<boolean>): Promise<Verified> {
    const ok = await this.timed(verification);
    if (!ok) return { user: undefined, cached: false };
    // The User may have changed while a worker hashed: judge the current one, and only if its password is the one checked.
    const current = this.state.user(user.id);
    if (current === undefined || current.passwordHash !== user.passwordHash) return { user: undefined, cached: false };
    this.cache.remember(current.id, current, password);
    if (needsRehash(unpackPasswordHash(current.passwordHash), this.argon2)) this.rehash(current, password);
    return { user: current, cached: false };
  }

  /**
   * Concurrent checks of the same password against the same hash share one argon2 run: a burst of
   * logins on a cold cache (a restart, a client's connection pool warming up) costs one hash, not fifty.
   * Unknown usernames share runs the same way, so a burst of identical guesses costs the same work
   * whether the account exists or not. Keys hold the verify cache's keyed hash, never the password.
   */
  private once(key: string, verification: Promise<boolean>): Promise<boolean> {
    const flight = verification.finally(() => this.inFlight.delete(key));
    this.inFlight.set(key, flight);
    return flight;
  }

  /** API Key secrets are high-entropy: a keyed hash and a constant-time compare, no argon2. `user`: the owner of keyId, looked up by the caller. */
  private verifyApikey(user: User | undefined, keyId: string, secret: string): { user: User; key: ApiKey } | undefined {
    const key = isApikeyId(keyId) ? user?.apikeys.find((k) => k.id === keyId) : undefined;
    if (user === undefined || key === undefined) {
      // Costs what a wrong secret for a key in use costs; a key's first check after start-up derives its secret
      // (microseconds more), which says no more than that the id exists: ids are 25 random characters, not guessable.
      this.secrets.refuse(secret);
      return undefined;
    }
    return this.secrets.verify(key.id, key.nonce, secret) ? { user, key } : undefined;
  }

  /**
   * The caller whose check passed lately with this very Authorization header from this peer, if nothing
   * it rested on has changed since (see KnownCallers); else undefined, and caller() decides. The base
   * Application is not asked again: it can be neither disabled nor deleted, and the User's own
   * membership and status are part of the User object.
   */
  knownCaller(authorization: string, peer: string): CallerIdentity | undefined {
    const key = this.known.key(authorization, peer);
    const entry = key === undefined ? undefined : this.known.get(key);
    if (key === undefined || entry === undefined) return undefined;
    if (this.unchanged(entry)) return entry;
    this.known.forget(key);
    return undefined;
  }

  /**
   * Whether what a remembered success rested on still holds: the very User (and Application), the limiter's
   * view of the pair, and a password's verification. The State is asked only when it has moved since it was
   * last asked: two Map lookups in a million entries are a noticeable part of a recognised authentication.
   */
  private unchanged(entry: Remembered, application?: Application): boolean {
    const { user, ticket, byPassword } = entry;
    const version = this.state.version;
    if (entry.checkedAt !== version) {
      if (this.state.user(user.id) !== user) return false;
      if (application !== undefined && this.state.application(application.id) !== application) return false;
      entry.checkedAt = version;
    }
    return this.guard.limiter.standing(ticket) && (!byPassword || this.cache.holds(user.id, user));
  }

  /**
   * POST /authenticate with the very body that passed lately, from this peer with this Authorization header: the
   * User, audited like any success, if nothing it rested on has changed (as for knownCaller, and the Application
   * object too) and nothing its caller rested on either; else undefined, and the request takes the full way (the
   * caller check, then authenticate()). One keyed hash for both credentials: a second one, for the caller alone,
   * would add a keyed hash and a lookup to every repeat. Failures are never remembered, and a success only once
   * its request has come before (attemptSlot).
   */
  recognised(request: Uint8Array, authorization: string, peer: string): { readonly user: User; readonly application: Application; readonly byPassword: boolean; readonly keyId?: string | undefined } | undefined {
    const key = this.knownAttempts.keyOfRequest(request, authorization, peer);
    const entry = key === undefined ? undefined : this.knownAttempts.get(key);
    if (key === undefined || entry === undefined) return undefined;
    if (!this.unchanged(entry, entry.application) || !this.unchanged(entry.caller)) {
      this.knownAttempts.forget(key);
      return undefined;
    }
    this.guard.audit.recordPrepared(entry.line, entry.caller.user.id);
    return entry;
  }

  /**
   * A caller of the admin API: a User of the base Application, not DISABLED, by password or by ENABLED API Key.
   * `overloaded` when the password needs a hash the full queue cannot take (the HTTP layer answers 503).
   * With the Authorization header the credentials came in, a caller that passes is remembered for knownCaller().
   */
  caller(username: string, password: string, address = '', authorization?: string): CallerAnswer | Promise<CallerAnswer> {
    const type: CredentialType = username.includes('@') ? 'username' : 'apikey';
    // Scope '': a Basic caller is known by its TCP peer alone (see src/auth/limiter.ts).
    const checked = this.checkAudited(type, username, password, { address }, '', 'caller.authenticate');
    return checked instanceof Promise
      ? checked.then((c) => this.callerOutcome(type, username, address, authorization, c))
      : this.callerOutcome(type, username, address, authorization, checked);
  }

  private callerOutcome(type: CredentialType, username: string, address: string, authorization: string | undefined, checked: Checked): CallerAnswer {
    const base = this.state.meta?.baseApplication;
    const why = checked.user === undefined ? checked.reason : refusal(checked.user, base === undefined ? undefined : this.state.application(base));
    const user = why === undefined ? checked.user : undefined;
    const caller: CallerIdentity | undefined = user === undefined ? undefined : { user, keyId: type === 'apikey' ? username : undefined };
    if (user !== undefined && authorization !== undefined && checked.ticket !== undefined) {
      const key = this.known.key(authorization, address);
      if (key !== undefined) this.known.remember(key, { user, keyId: caller!.keyId, byPassword: type === 'username', ticket: checked.ticket, checkedAt: -1 });
    }
    // An admin's repeated requests ride the verify cache like a session: audited when the password was
    // really checked (and on every failure), not once per request, which would double the log per call.
    if (caller !== undefined && checked.cached === true) return caller;
    this.guard.audit.recordAuthentication('caller.authenticate', user?.id ?? null, undefined, checked.userId, keyIdOf(type, username), outcomeOf(user, checked), why, address, undefined);
    return checked === shed ? overloaded : caller;
  }

  /**
   * POST /authenticate: the User, or undefined for every kind of failure alike; `overloaded` as for caller(). The
   * attempt's address counts within its caller's scope (context.caller), whether the caller named it or not.
   */
  authenticate(
    applicationId: string, type: CredentialType, username: string, password: string, context: AuthenticateContext,
  ): Answer | Promise<Answer> {
    const checked = this.checkAudited(type, username, password, context, context.caller, 'authenticate', applicationId);
    return checked instanceof Promise
      ? checked.then((c) => this.authenticateOutcome(applicationId, type, username, context, c))
      : this.authenticateOutcome(applicationId, type, username, context, checked);
  }

  private authenticateOutcome(applicationId: string, type: CredentialType, username: string, context: AttemptContext, checked: Checked): Answer {
    const application = this.state.application(applicationId);
    const why = checked.user === undefined ? checked.reason : refusal(checked.user, application);
    const user = why === undefined ? checked.user : undefined;
    const success = user !== undefined && application !== undefined && checked.ticket !== undefined;
    const slot = success ? this.attemptSlot(context) : undefined;
    const caller = context.caller ?? null;
    if (success && slot !== undefined) {
      // Made once: written now, and kept for the repeats of this success (recognised()).
      const targets = authenticationTargets(applicationId, checked.userId, keyIdOf(type, username));
      const line = this.guard.audit.prepareAuthentication(targets, 'success', why, context.address, context.peer, { caller });
      this.guard.audit.recordPrepared(line, caller);
      this.knownAttempts.remember(slot.key, {
        user, byPassword: type === 'username', keyId: keyIdOf(type, username), ticket: checked.ticket, checkedAt: -1, application, line, caller: slot.caller.entry,
      }, slot.caller.expiresAtMs);
    } else {
      this.guard.audit.recordAuthentication(
        'authenticate', caller, applicationId, checked.userId, keyIdOf(type, username), outcomeOf(user, checked), why, context.address, context.peer,
      );
    }
    return checked === shed ? overloaded : user;
  }

  /**
   * Where a success of this request would be remembered: its key, and its caller's entry, made or found by
   * this request's caller check (the same header and peer); undefined when either is missing, or when the
   * request has not been seen before (most never repeat: remembering each would cost an entry, an eviction and
   * an audit line encoded for keeping), and the success is not remembered.
   */
  private attemptSlot(context: AttemptContext): { readonly key: string; readonly caller: { readonly entry: Remembered; readonly expiresAtMs: number } } | undefined {
    const { request, authorization, peer } = context;
    if (request === undefined || authorization === undefined || peer === undefined) return undefined;
    const key = this.knownAttempts.keyOfRequest(request, authorization, peer);
    if (key === undefined || !this.knownAttempts.repeated(key)) return undefined;
    const callerKey = this.known.key(authorization, peer);
    const caller = callerKey === undefined ? undefined : this.known.held(callerKey);
    return caller === undefined ? undefined : { key, caller };
  }

  /** check(), with an audit line when it throws (the hash pool failed, or filled up while a job waited for the dummy hash at start-up). */
  private checkAudited(
    type: CredentialType, username: string, password: string, context: AttemptContext, scope: string, action: string, applicationId?: string,
  ): Checked | Promise<Checked> {
    try {
      const checked = this.check(type, username, password, context.address, scope);
      return checked instanceof Promise ? checked.catch((err: unknown) => this.auditThrown(err, type, username, context, action, applicationId)) : checked;
    } catch (err) {
      return this.auditThrown(err, type, username, context, action, applicationId);
    }
  }

  /** The audit line of a check that threw, then the error again. A method, not a closure: the common path allocates nothing for it. */
  private auditThrown(err: unknown, type: CredentialType, username: string, context: AttemptContext, action: string, applicationId: string | undefined): never {
    const outcome = (err as { name?: string }).name === 'OverloadedError' ? 'overloaded' : 'error';
    this.guard.audit.recordAuthentication(action, context.caller ?? null, applicationId, undefined, keyIdOf(type, username), outcome, undefined, context.address, context.peer);
    throw err;
  }

  /**
   * The limiter decides before anything is evaluated. A locked-out attempt is answered like a wrong
   * credential and about as late (a running mean of argon2 checks), without spending a hash on it.
   * Answered at once (no promise) when nothing has to wait: an API Key, or a password the cache knows.
   */
  private check(type: CredentialType, username: string, password: string, address: string, scope: string): Checked | Promise<Checked> {
    // By emailKey, so the NFC, NFD and case spellings of one address count against one account.
    const admission = this.guard.limiter.acquire(type === 'username' ? `u:${emailKey(username)}` : `k:${username}`, address, scope);
    return admission instanceof Promise
      ? admission.then((a) => this.admitted(type, username, password, a))
      : this.admitted(type, username, password, admission);
  }

  /** The User a credential names (by email or by API Key id), if any: looked up once per attempt. */
  private named(type: CredentialType, username: string): User | undefined {
    if (type === 'username') return this.state.userByEmail(username);
    return isApikeyId(username) ? this.state.userByApikey(username) : undefined;
  }

  private admitted(type: CredentialType, username: string, password: string, admission: Admission): Checked | Promise<Checked> {
    if (!admission.admitted) {
      const delayMs = Math.max(admission.delayMs, type === 'username' ? this.typicalVerifyMs : 0);
      const locked: Checked = { user: undefined, outcome: 'locked', reason: `locked_${admission.lockedBy}`, userId: this.named(type, username)?.id };
      return delayMs > 0 ? sleep(delayMs).then(() => locked) : locked;
    }
    const { ticket } = admission;
    if (admission.delayMs > 0) {
      // Looked up after the wait: the account may have changed meanwhile.
      return sleep(admission.delayMs).then(() => this.evaluate(type, username, password, ticket, this.named(type, username)));
    }
    return this.evaluate(type, username, password, ticket, this.named(type, username));
  }

  /** Checks the credential of an admitted attempt and settles its ticket exactly once, whatever happens. */
  private evaluate(type: CredentialType, username: string, password: string, ticket: Ticket, named: User | undefined): Checked | Promise<Checked> {
    const userId = named?.id;
    try {
      if (type === 'username') {
        const verified = this.verifyPassword(named, username, password, ticket);
        if (verified instanceof OverloadedError) {
          this.guard.limiter.released(ticket);
          return shed;
        }
        return verified instanceof Promise
          ? verified.then((v) => this.settlePassword(ticket, userId, v), (err: unknown) => this.release(ticket, err))
          : this.settlePassword(ticket, userId, verified);
      }
      const found = this.verifyApikey(named, username, password);
      if (found === undefined) return this.wrongCredential(ticket, userId);
      // The secret was right: that is not a guess to count, even if the key is DISABLED.
      this.guard.limiter.succeeded(ticket);
      if (found.key.status !== 'ENABLED') return { user: undefined, outcome: 'failure', reason: 'key_disabled', userId: found.user.id };
      return { user: found.user, outcome: 'success', userId: found.user.id, ticket };
    } catch (err) {
      return this.release(ticket, err);
    }
  }

  private settlePassword(ticket: Ticket, userId: string | undefined, { user, cached }: Verified): Checked {
    if (user === undefined) return this.wrongCredential(ticket, userId);
    this.guard.limiter.succeeded(ticket);
    return { user, outcome: 'success', userId: user.id, cached, ticket };
  }

  /** A wrong password or secret, or an account that does not exist: one more failure for the limiter. */
  private wrongCredential(ticket: Ticket, userId: string | undefined): Checked {
    this.guard.limiter.failed(ticket);
    return { user: undefined, outcome: 'failure', reason: userId === undefined ? 'unknown_account' : 'wrong_secret', userId };
  }

  /** The attempt was not evaluated (the hash queue was full, an internal error): its slot goes back, then the error again. */
  private release(ticket: Ticket, err: unknown): never {
    this.guard.limiter.released(ticket);
    throw err;
  }

  private async timed<T>(work: Promise<T>): Promise<T> {
    const started = performance.now();
    const value = await work;
    const ms = performance.now() - started;
    this.typicalVerifyMs = this.typicalVerifyMs === 0 ? ms : this.typicalVerifyMs + (ms - this.typicalVerifyMs) * verifyMsSmoothing;
    return value;
  }

  /** bcrypt from an import, or argon2id with old parameters: store a fresh argon2id hash; a failure only delays it. */
  private rehash(user: User, password: string): void {
    this.pool.hashPassword(password).then(
      (newHash) => this.committer.commit((state) => rehashPassword(state, user.id, user.passwordHash, newHash) ?? { ops: [], result: undefined }),
    ).then((changed) => {
      if (changed !== undefined) {
        this.guard.audit.record({ action: 'user.rehash', caller: null, targets: { user: user.id }, outcome: 'success', address: 'internal' });
      }
    }).catch((err: unknown) => {
      this.logger.warn({ userId: user.id, err: err instanceof Error ? err.name : 'unknown' }, 'password rehash failed; retried on next login');
    });
  }
}

/** The key id an authentication's audit line names (beside the Application asked about and the account when it exists): the credential's, when well-formed. */
function keyIdOf(type: CredentialType, username: string): string | undefined {
  return type === 'apikey' && isApikeyId(username) ? username : undefined;
}

function outcomeOf(user: User | undefined, checked: Checked): Checked['outcome'] {
  return user !== undefined ? 'success' : checked.outcome === 'success' ? 'failure' : checked.outcome;
}

/** Why this User may not authenticate against app, or undefined if it may. */
function refusal(user: User, app: Application | undefined): string | undefined {
  if (app === undefined) return 'unknown_application';
  if (app.status !== 'ENABLED') return 'application_disabled';
  if (user.status === 'DISABLED') return 'user_disabled';
  if (!user.applications.includes(app.id)) return 'not_in_application';
  return undefined;
}

/** A DISABLED User fails; UNVERIFIED and ENABLED pass, against an ENABLED Application they are associated with. */
export function mayAuthenticate(user: User, app: Application | undefined): boolean {
  return refusal(user, app) === undefined;
}
