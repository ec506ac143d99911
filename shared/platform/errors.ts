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

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly errorCode?: ErrorCode,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export const badRequest = (message: string) => new ApiError(400, message);
export const unauthorized = () => new ApiError(401, 'Missing or invalid API key / session');
export const paymentRequired = (message: string, code?: ErrorCode) => new ApiError(402, message, code);
export const forbidden = (message: string) => new ApiError(403, message);
export const notFound = (message = 'Not found') => new ApiError(404, message);
export const routeNotFound = (method: string, path: string) =>
  new ApiError(404, `Route ${method} ${path} not found`);
export const conflict = (message = 'Already exists') => new ApiError(409, message);
export const payloadTooLarge = (message: string) => new ApiError(413, message);
export const unprocessable = (message: string) => new ApiError(422, message);
export const tooManyRequests = (message: string, retryAfterSeconds: number) =>
  new ApiError(429, message, undefined, { 'retry-after': String(retryAfterSeconds) });
export const badGateway = (message: string, code?: ErrorCode) => new ApiError(502, message, code);

export const missingScope = (scope: string) => forbidden(`This API key lacks the "${scope}" scope`);
export const ipNotAllowed = (ip: string) => forbidden(`This API key is not allowed from ${ip}`);
export const publicKeyRestricted = () => forbidden('A public key can only start web calls and chats');
export const invalidJson = (detail?: string) =>
  badRequest(detail ? `Invalid JSON body: ${detail}` : 'Invalid JSON body');
export const invalidPaginationKey = () => badRequest('Invalid pagination_key');
