import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { isProduction } from '../config.ts';
import { ApiError } from '../errors.ts';
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

/** The one place errors become HTTP responses: `{status, message[, error_code]}`. */
export function errorResponse(error: unknown, headers: Record<string, string> = {}): APIGatewayProxyStructuredResultV2 {
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
