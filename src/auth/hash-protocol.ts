// The messages between the hash pool (main thread) and its workers; types only, shared by both sides.

import type { Argon2Params } from './password-hash-format.js';

export type HashJob =
  /** Make a new argon2id PHC string with a fresh random salt. */
  | { readonly kind: 'hashArgon2id'; readonly password: string; readonly params: Argon2Params; readonly saltBytes: number; readonly hashBytes: number }
  /** Recompute argon2id with a stored hash's salt and params and compare in constant time. */
  | { readonly kind: 'verifyArgon2id'; readonly password: string; readonly params: Argon2Params; readonly salt: Uint8Array; readonly hash: Uint8Array }
  | { readonly kind: 'verifyBcrypt'; readonly password: string; readonly hash: string };

export type HashRequest = HashJob & { readonly id: number };

/** A failure carries only a fixed description: never the password, never text a library built from its input. */
export type HashReply =
  | { readonly id: number; readonly ok: true; readonly value: string | boolean }
  | { readonly id: number; readonly ok: false; readonly error: string };

/** Sent once, after the worker's modules loaded: from then on a death is a crash, not a failure to start. */
export interface WorkerReady { readonly ready: true }

export type WorkerMessage = HashReply | WorkerReady;
