/**
 * Which AWS service an error came from, for the errors that mean "not available right
 * now" rather than "this request is wrong". Clients are tagged once where they are
 * created (tagAwsClient); shared/platform/http/respond.ts turns such an error into a 503 with
 * retry-after. Domain code never looks at these errors.
 */
import { traceAwsClient } from '../observability/tracing.ts';

export type AwsService = 'DynamoDB' | 'KMS' | 'SQS' | 'Secrets Manager' | 'S3' | 'API Gateway';

const failedService = new WeakMap<object, AwsService>();

/** Network failures Node reports on a socket: the endpoint is down, unreachable or cut off. */
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
]);

/** Throttling and server faults the services name (after the SDK's own retries ran out). */
const UNAVAILABLE_NAMES = new Set([
  // The SDK's request and connection timeouts (the request timeout aborts the socket: some
  // handler versions surface that as an AbortError rather than a TimeoutError).
  'TimeoutError',
  'AbortError',
  'ThrottlingException',
  'ProvisionedThroughputExceededException',
  'RequestLimitExceeded',
  'LimitExceededException',
  'InternalServerError',
  'ServiceUnavailable',
  'KMSInternalException',
  'DependencyTimeoutException',
  'InternalServiceError',
]);

interface MiddlewareClient {
  middlewareStack: {
    add(
      middleware: (next: (args: never) => Promise<unknown>) => (args: never) => Promise<unknown>,
      options: { step: 'initialize'; name: string },
    ): void;
  };
}

/**
 * Marks every error a client's calls throw with the client's service, after the SDK's
 * retries (the initialize step wraps them), keeping the error itself unchanged so code
 * that checks a name (ConditionalCheckFailedException, ...) sees what it always did. Every
 * client passes here once, so this is also where its calls join the X-Ray trace (in Lambda).
 */
export function tagAwsClient<T extends MiddlewareClient>(client: T, service: AwsService): T {
  client.middlewareStack.add(
    (next) => async (args) => {
      try {
        return await next(args);
      } catch (error) {
        if (typeof error === 'object' && error !== null) failedService.set(error, service);
        throw error;
      }
    },
    { step: 'initialize', name: 'parleyServiceTag' },
  );
  return traceAwsClient(client);
}

/** The service an error says is unavailable (timeout, no connection, throttled, server fault), if any. */
export function unavailableService(error: unknown, depth = 0): AwsService | undefined {
  if (typeof error !== 'object' || error === null || depth > 5) return undefined;
  const service = failedService.get(error);
  // Code that wraps a failure keeps it as the cause.
  if (!service) return unavailableService((error as { cause?: unknown }).cause, depth + 1);
  const { name, code, $fault } = error as { name?: unknown; code?: unknown; $fault?: unknown };
  const unavailable =
    (typeof name === 'string' && UNAVAILABLE_NAMES.has(name)) ||
    (typeof code === 'string' && CONNECTION_CODES.has(code)) ||
    $fault === 'server';
  return unavailable ? service : undefined;
}

const WHAT: Record<AwsService, string> = {
  DynamoDB: 'the data store',
  KMS: 'the key service',
  SQS: 'the message queue',
  'Secrets Manager': 'the secrets store',
  S3: 'the object store',
  'API Gateway': 'the WebSocket service',
};

/** Seconds a client is asked to wait: long enough for a blip to pass, short enough to retry soon. */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 5;

export function unavailableMessage(service: AwsService): string {
  return `Service temporarily unavailable: ${WHAT[service]} did not answer. Retry in ${UNAVAILABLE_RETRY_AFTER_SECONDS}s.`;
}
