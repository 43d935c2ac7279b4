// The one error catalog: every error the service answers with, its stable code and HTTP status; imports nothing.

export const errorCatalog = {
  invalid_json: { status: 400, message: 'The request body is not valid JSON.' },
  invalid_field: { status: 400, message: 'A field of the request is invalid.' },
  unknown_reference: { status: 400, message: 'A field names an entity that does not exist.' },
  base_join_needs_password: { status: 400, message: 'A User joins the base Application only with a new password, given in the same request.' },
  invalid_id: { status: 400, message: 'An identifier in the path is malformed.' },
  invalid_query: { status: 400, message: 'A query parameter is invalid.' },
  bad_request: { status: 400, message: 'The request is not well-formed HTTP/1.1.' },
  unauthorized: { status: 401, message: 'Valid credentials of a User of the base Application are required.' },
  forbidden: { status: 403, message: 'The caller\'s roles do not allow this.' },
  not_found: { status: 404, message: 'No such entity.' },
  route_not_found: { status: 404, message: 'No such route.' },
  method_not_allowed: { status: 405, message: 'The method is not allowed on this route.' },
  request_timeout: { status: 408, message: 'The request body did not arrive in time.' },
  duplicate_email: { status: 409, message: 'A User with this email already exists.' },
  duplicate_name: { status: 409, message: 'The name is already taken.' },
  delete_refused: { status: 409, message: 'The entity cannot be deleted in its current state.' },
  base_application_protected: { status: 409, message: 'The base Application cannot be deleted or disabled.' },
  last_admin: { status: 409, message: 'The last enabled User of the base Application cannot be disabled or removed from it.' },
  limit_exceeded: { status: 409, message: 'A per-entity limit would be exceeded.' },
  payload_too_large: { status: 413, message: 'The request body is too large.' },
  unsupported_media_type: { status: 415, message: 'The request body must be application/json.' },
  headers_too_large: { status: 431, message: 'The request\'s header fields are too large.' },
  overloaded: { status: 503, message: 'The service is overloaded; retry later.' },
  storage_unavailable: { status: 503, message: 'The service cannot make changes durable right now; retry later.' },
  starting: { status: 503, message: 'The service is starting.' },
  internal: { status: 500, message: 'Internal error.' },
} as const satisfies Record<string, { status: number; message: string }>;

export type ErrorCode = keyof typeof errorCatalog;

/**
 * For the constructor of an expected error: `const limit = stacksOff(); super(message); Error.stackTraceLimit = limit;`.
 * Refusals are answers, not bugs, and capturing a stack costs more than the rest of a refused request
 * (a burst of 503s or 400s under load).
 */
export function stacksOff(): number {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  return limit;
}

/** A refusal the caller can act on. `message` must name the field and never carry a secret. Carries no stack. */
export class DomainError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  /** Extra result keys sent beside the error (a refused delete carries {"deleted": false}). */
  readonly result: Record<string, unknown> | undefined;
  /** Seconds, for 503s. */
  readonly retryAfterS: number | undefined;
  /** For the audit line only (a 403's missing role), never sent. */
  readonly auditReason: string | undefined;
  /** Response header fields sent with it (a 404 a cluster node could not confirm says so). */
  readonly headers: readonly (readonly [string, string])[] | undefined;

  constructor(
    code: ErrorCode, message?: string,
    extra?: { result?: Record<string, unknown>; retryAfterS?: number; auditReason?: string; headers?: readonly (readonly [string, string])[] },
  ) {
    const limit = stacksOff();
    super(message ?? errorCatalog[code].message);
    Error.stackTraceLimit = limit;
    this.code = code;
    this.status = errorCatalog[code].status;
    this.result = extra?.result;
    this.retryAfterS = extra?.retryAfterS;
    this.auditReason = extra?.auditReason;
    this.headers = extra?.headers;
  }
}

export function invalidField(field: string, why: string): DomainError {
  return new DomainError('invalid_field', `${field}: ${why}`);
}

/** A call outside the caller's roles: 403, audited with the role it lacked. */
export function forbidden(role: string, what: string): DomainError {
  return new DomainError('forbidden', `${what} requires the ${role} role.`, { auditReason: `lacks_role_${role}` });
}
