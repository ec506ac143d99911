import { config } from '../config.ts';

/**
 * Retries after the first try: one. The SDK retries timeouts, refused connections,
 * throttling and 5xx; each try is bounded by AWS_REQUEST_TIMEOUT_MS, so a store that
 * does not answer costs a request at most about twice that (plus a backoff of at most a
 * few hundred ms) before it is a 503, well inside API Gateway's 30 s and Lambda's limit.
 */
const AWS_MAX_ATTEMPTS = 2;

/**
 * Sockets per AWS endpoint (the SDK's default is 50). Both timeouts below start when a
 * call is made, so time spent waiting for a free socket counts against them: the pool
 * must hold every call a process makes at once. A Lambda instance serves one request at
 * a time, a few calls at once (the gate writes the IP window and the key in parallel); the
 * local runtime serves up to LOCAL_CONCURRENCY (64) requests at once in one process
 * (local/invocation-slots.ts), at most ~3 calls each: 192. Under a burst of 700 requests
 * the default 50 warned "socket usage at capacity=50". Sockets open only on demand, so
 * the cap costs Lambda nothing, and 256 stays well inside the 1,024 file descriptors a
 * Lambda (and a default shell) allows next to the server's own sockets.
 */
const AWS_MAX_SOCKETS = 256;

/**
 * The options every AWS client (DynamoDB, KMS, SQS, Secrets Manager) is created with:
 * bounded tries, each with a connection timeout and a whole-request timeout (including
 * waiting for a socket), so an unreachable or stalled service fails fast instead of
 * holding a request until Lambda kills it. The errors are mapped to 503 in one place
 * (shared/platform/aws/unavailable.ts, used by shared/platform/http/respond.ts).
 */
export function awsClientOptions() {
  const requestTimeout = config.AWS_REQUEST_TIMEOUT_MS;
  return {
    maxAttempts: AWS_MAX_ATTEMPTS,
    requestHandler: {
      connectionTimeout: Math.min(config.AWS_CONNECTION_TIMEOUT_MS, requestTimeout),
      requestTimeout,
      // Without it the SDK only logs a warning when requestTimeout passes.
      throwOnRequestTimeout: true,
      httpAgent: { keepAlive: true, maxSockets: AWS_MAX_SOCKETS },
      httpsAgent: { keepAlive: true, maxSockets: AWS_MAX_SOCKETS },
    },
  };
}
