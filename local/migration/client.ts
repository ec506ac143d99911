import Retell, { APIConnectionError, APIError } from 'retell-sdk';

/*
 * The two ends of an import, each a retell-sdk client: the source is any account that
 * speaks Retell's API (Retell itself, or another Parley), the target a Parley. The SDK's
 * own retries are off: a 429 is waited out here, by its Retry-After, through an injected
 * sleep, so tests never wait for real and the wait is reported.
 */

export type Sleep = (ms: number) => Promise<void>;
export const realSleep: Sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** A problem that stops the whole run (a refused key, an unreachable end, an interruption): nothing more is tried. */
export class FatalError extends Error {}

/** How many times one request is sent when the server keeps answering 429. */
const MAX_ATTEMPTS = 8;
/** The wait when a 429 names none, and the most any one wait may be. */
const DEFAULT_WAIT_MS = 1000;
const MAX_WAIT_MS = 120_000;

export function clientFor(baseUrl: string, apiKey: string): Retell {
  return new Retell({ apiKey, baseURL: baseUrl, maxRetries: 0, timeout: 120_000 });
}

/** Retry-After as seconds or an HTTP date (RFC 9110), in milliseconds from `nowMs`. */
function retryAfterMs(header: string | null | undefined, nowMs: number): number {
  if (!header) return DEFAULT_WAIT_MS;
  const seconds = Number(header);
  const ms = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(header) - nowMs;
  return Math.min(MAX_WAIT_MS, Math.max(0, Number.isFinite(ms) ? ms : DEFAULT_WAIT_MS));
}

export interface Caller {
  /** Runs one request of `end`, waiting out 429s; a connection failure or a refused key is fatal. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- answers are read as plain JSON
  (end: 'source' | 'target', request: () => PromiseLike<unknown>): Promise<any>;
  /** Total time waited on 429s. */
  waitedMs(): number;
}

export function caller(options: { sleep: Sleep; now: () => number; urls: { source: string; target: string }; onWait?: (ms: number, end: string) => void }): Caller {
  let waited = 0;
  const call = async (end: 'source' | 'target', request: () => PromiseLike<unknown>) => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await request();
      } catch (error) {
        if (error instanceof APIError && error.status === 429 && attempt < MAX_ATTEMPTS) {
          const ms = retryAfterMs(error.headers?.get('retry-after'), options.now());
          options.onWait?.(ms, end);
          waited += ms;
          await options.sleep(ms);
          continue;
        }
        if (error instanceof APIConnectionError) {
          throw new FatalError(`cannot reach the ${end} at ${options.urls[end]}: ${rootCause(error)}`);
        }
        if (error instanceof APIError && (error.status === 401 || error.status === 403)) {
          throw new FatalError(`the ${end} (${options.urls[end]}) refused the key: ${error.status} ${messageOf(error)}`);
        }
        throw error;
      }
    }
  };
  return Object.assign(call, { waitedMs: () => waited });
}

/** The innermost reason of a failed connection (`connect ECONNREFUSED …` rather than `fetch failed`). */
function rootCause(error: Error): string {
  let reason: unknown = error;
  while (reason instanceof Error && reason.cause instanceof Error) reason = reason.cause;
  return reason instanceof Error ? reason.message : String(reason);
}

/** The server's own message of a failed request (Parley and Retell answer `{status, message}`). */
export function messageOf(error: unknown): string {
  if (error instanceof APIError) {
    const body = error.error as { message?: unknown } | undefined;
    const message = typeof body?.message === 'string' ? body.message : error.message;
    return error.status ? `${message}` : message;
  }
  return error instanceof Error ? error.message : String(error);
}

export const statusOf = (error: unknown): number | undefined => (error instanceof APIError ? error.status : undefined);
