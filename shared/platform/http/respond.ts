import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { isProduction } from '../config.ts';
import { unavailableMessage, unavailableService, UNAVAILABLE_RETRY_AFTER_SECONDS } from '../aws/unavailable.ts';
import { ApiError, serviceUnavailable } from '../errors.ts';
import { logger } from '../logger.ts';

const JSON_HEADERS = { 'content-type': 'application/json' };

export function jsonResponse(
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): APIGatewayProxyStructuredResultV2 {
  if (status === 204 || body === undefined) return { statusCode: status, headers };
  return { statusCode: status, headers: { ...JSON_HEADERS, ...headers }, body: JSON.stringify(body) };
}

/**
 * The one place errors become HTTP responses: `{status, message[, error_code]}`. An AWS
 * service that did not answer (timeout, refused connection, throttling, server fault,
 * after the SDK's bounded retries) is a 503 with retry-after, never a 500.
 */
export function errorResponse(error: unknown, headers: Record<string, string> = {}): APIGatewayProxyStructuredResultV2 {
  const unavailable = unavailableService(error);
  if (unavailable) {
    logger.warn('AWS service unavailable', { service: unavailable, error: error as Error });
    error = serviceUnavailable(unavailableMessage(unavailable), UNAVAILABLE_RETRY_AFTER_SECONDS);
  }
  if (error instanceof ApiError) {
    return jsonResponse(
      error.status,
      { status: error.status, message: error.message, ...(error.errorCode ? { error_code: error.errorCode } : {}) },
      { ...headers, ...error.headers },
    );
  }
  logger.error('Unhandled error', error as Error);
  const message = isProduction
    ? 'Internal server error'
    : `Internal server error: ${error instanceof Error ? error.message : String(error)}`;
  return jsonResponse(500, { status: 500, message }, headers);
}
