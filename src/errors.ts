/**
 * The closed set of error codes (docs/api.md, "Errors") and the HTTP status of each.
 * Every failure a client sees is one of these, in the envelope `{ error: { code, message, details } }`.
 */
export const ERROR_STATUS = {
  invalid_request: 400,
  invalid_json: 400,
  unauthorized: 401,
  payment_required: 402,
  forbidden: 403,
  not_found: 404,
  idempotency_key_in_use: 409,
  not_yet_integrated: 409,
  not_yet_anchored: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  request_timeout: 408,
  idempotency_key_reused: 422,
  rate_limited: 429,
  headers_too_large: 431,
  internal_error: 500,
  payment_unavailable: 502,
  service_unavailable: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export interface ErrorEnvelope {
  error: { code: ErrorCode; message: string; details: Record<string, unknown> };
}

/** The one error type domain code throws; the error handler renders it as it is. */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly statusCode: number;
  readonly details: Record<string, unknown>;
  /** Response headers that belong to this error (Retry-After, PAYMENT-REQUIRED …). */
  readonly headers: Record<string, string>;

  constructor(
    code: ErrorCode,
    message: string,
    details: Record<string, unknown> = {},
    headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'AppError';
    this.code = code;
    this.statusCode = ERROR_STATUS[code];
    this.details = details;
    this.headers = headers;
  }

  toEnvelope(): ErrorEnvelope {
    return { error: { code: this.code, message: this.message, details: this.details } };
  }
}

export function isAppError(error: unknown): error is AppError {
  return error instanceof AppError;
}
