/**
 * The one error taxonomy. Domain code throws these; the HTTP layer maps them to
 * `{status, message[, error_code]}` in one place (shared/platform/http/respond.ts).
 */
export type ErrorCode =
  | 'credit_exhausted'
  | 'budget_reached'
  | 'invoice_overdue'
  | 'verification_needed'
  | 'conductor_credits_exhausted'
  | 'conductor_limit_reached'
  | 'provisioning_failed';

/**
 * The base of every error a request may answer with. Each kind is its own class, so code
 * decides what to do by the kind it caught (`instanceof NotFound`), never by an HTTP
 * status or a message; `status` is read only where errors become responses
 * (shared/platform/http/respond.ts) and by tests.
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly errorCode?: ErrorCode,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/** 400: the request itself is wrong (a field, a reference it makes, a malformed body). */
export class Invalid extends ApiError {
  constructor(message: string) {
    super(400, message);
  }
}
/** 401: no valid credential. */
export class Unauthorized extends ApiError {
  constructor() {
    super(401, 'Missing or invalid API key / session');
  }
}
/** 402: the workspace cannot spend (spec Errors, with an error_code). */
export class PaymentRequired extends ApiError {
  constructor(message: string, code?: ErrorCode) {
    super(402, message, code);
  }
}
/** 403: authenticated, but not allowed. */
export class Forbidden extends ApiError {
  constructor(message: string) {
    super(403, message);
  }
}
/** 404: the resource (or route) does not exist for this caller. */
export class NotFound extends ApiError {
  constructor(message = 'Not found') {
    super(404, message);
  }
}
/** 404 for a version of a resource that exists: a caller may turn it into a field error. */
export class VersionNotFound extends NotFound {}
/** 409: the request conflicts with the resource's state (exists, in use, changed meanwhile). */
export class Conflict extends ApiError {
  constructor(message = 'Already exists') {
    super(409, message);
  }
}
/** 413: the body or an upload is too large. */
export class TooLarge extends ApiError {
  constructor(message: string) {
    super(413, message);
  }
}
/** 415: a body of a type the route does not take. */
export class UnsupportedMediaType extends ApiError {
  constructor(message: string) {
    super(415, message);
  }
}
/** 422: well-formed, but a vendor or rule cannot act on it. */
export class Unprocessable extends ApiError {
  constructor(message: string) {
    super(422, message);
  }
}
/** Which limit refused a request with a 429: the `kind` dimension of the RateLimited metric. */
export type RateLimitKind = 'ip' | 'key' | 'outbound' | 'concurrency' | 'cps' | 'chat_busy' | 'other';

/** 429: over a limit; retry after the given seconds. */
export class TooManyRequests extends ApiError {
  constructor(
    message: string,
    retryAfterSeconds: number,
    readonly kind: RateLimitKind = 'other',
  ) {
    super(429, message, undefined, { 'retry-after': String(retryAfterSeconds) });
  }
}
/** 502: a vendor or provider failed. */
export class VendorFailed extends ApiError {
  constructor(message: string, code?: ErrorCode) {
    super(502, message, code);
  }
}
/** 503: a service Parley depends on is unavailable; retry after the given seconds. */
export class Unavailable extends ApiError {
  constructor(message: string, retryAfterSeconds: number) {
    super(503, message, undefined, { 'retry-after': String(retryAfterSeconds) });
  }
}

/** 504: the request ran out of the function's time before it was done. */
export class TimedOut extends ApiError {
  constructor(message: string) {
    super(504, message);
  }
}

export const badRequest = (message: string) => new Invalid(message);
export const unauthorized = () => new Unauthorized();
export const paymentRequired = (message: string, code?: ErrorCode) => new PaymentRequired(message, code);
export const forbidden = (message: string) => new Forbidden(message);
export const notFound = (message = 'Not found') => new NotFound(message);
export const routeNotFound = (method: string, path: string) => new NotFound(`Route ${method} ${path} not found`);
export const conflict = (message = 'Already exists') => new Conflict(message);
export const payloadTooLarge = (message: string) => new TooLarge(message);
export const unprocessable = (message: string) => new Unprocessable(message);
export const tooManyRequests = (message: string, retryAfterSeconds: number, kind?: RateLimitKind) =>
  new TooManyRequests(message, retryAfterSeconds, kind);
export const badGateway = (message: string, code?: ErrorCode) => new VendorFailed(message, code);
export const unavailable = (message: string, retryAfterSeconds: number) => new Unavailable(message, retryAfterSeconds);
export const unsupportedMediaType = (message: string) => new UnsupportedMediaType(message);

export const missingScope = (scope: string) => forbidden(`This API key lacks the "${scope}" scope`);
export const ipNotAllowed = (ip: string) => forbidden(`This API key is not allowed from ${ip}`);
export const publicKeyRestricted = () => forbidden('A public key can only start web calls and chats');
export const invalidJson = (detail?: string) =>
  badRequest(detail ? `Invalid JSON body: ${detail}` : 'Invalid JSON body');
export const notJsonContentType = (contentType: string | undefined) =>
  unsupportedMediaType(
    `${contentType ? `Unsupported content type "${contentType.slice(0, 100)}"` : 'Missing content type'}: ` +
      'this route takes a JSON body, sent with "Content-Type: application/json"',
  );
export const invalidUtf8 = () => badRequest('Invalid request body: not valid UTF-8');
export const invalidPaginationKey = () => badRequest('Invalid pagination_key');
