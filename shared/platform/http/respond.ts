import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { isProduction } from '../config.ts';
import { unavailableMessage, unavailableService, UNAVAILABLE_RETRY_AFTER_SECONDS } from '../aws/unavailable.ts';
import { ApiError, TimedOut, unavailable } from '../errors.ts';
import { TransactionCancelled } from '../store/table.ts';
import { logger } from '../logger.ts';
import type { ErrorFormat } from './route.ts';

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
 * The one place errors become HTTP responses: `{status, message[, error_code]}`, or the
 * route's own format (`errorFormat`, RouteDefinition). An AWS service that did not answer
 * (timeout, refused connection, throttling, server fault, after the SDK's bounded retries)
 * is a 503 with retry-after, never a 500.
 */
export function errorResponse(error: unknown, headers: Record<string, string> = {}, format?: ErrorFormat): APIGatewayProxyStructuredResultV2 {
  const service = unavailableService(error);
  if (service) {
    logger.warn('AWS service unavailable', { service, error: error as Error });
    error = unavailable(unavailableMessage(service), UNAVAILABLE_RETRY_AFTER_SECONDS);
  } else if (isMiddyTimeout(error)) {
    // middy answers just before Lambda would kill the invocation: the work may be partly done
    // (each step is written to be safe to repeat), and the client learns it timed out.
    logger.warn('Request ran out of time', { error: error as Error });
    error = new TimedOut('The request did not finish within the time allowed; retry it, or split the work');
  } else if (error instanceof TransactionCancelled && error.conflicted) {
    // Another write held an item this one needed (DynamoDB cancels rather than waits): the
    // same request goes through once it is done, so it is a retry, not a server fault.
    logger.warn('Transaction conflicted with another write', { error });
    error = unavailable('A conflicting write was in progress; retry the request', 1);
  }
  const failure = error instanceof ApiError ? error : internalError(error);
  if (format) {
    return { statusCode: failure.status, headers: { ...headers, ...failure.headers, 'content-type': format.mediaType }, body: JSON.stringify(format.body(failure)) };
  }
  return jsonResponse(
    failure.status,
    { status: failure.status, message: failure.message, ...(failure.errorCode ? { error_code: failure.errorCode } : {}) },
    { ...headers, ...failure.headers },
  );
}

/** What middy throws when the function's remaining time runs out (its timeoutEarly). */
const isMiddyTimeout = (error: unknown) =>
  error instanceof Error && error.name === 'TimeoutError' && (error.cause as { package?: string } | undefined)?.package === '@middy/core';

/** Anything else thrown: logged whole, answered 500 (its message only outside production). */
function internalError(error: unknown): ApiError {
  logger.error('Unhandled error', error as Error);
  const message = isProduction
    ? 'Internal server error'
    : `Internal server error: ${error instanceof Error ? error.message : String(error)}`;
  return new ApiError(500, message);
}
