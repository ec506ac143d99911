import type { MiddlewareObj } from '@middy/core';
import type { Context } from 'aws-lambda';
import { ApiError, PaymentRequired, TooManyRequests } from '../errors.ts';
import { countMetric, flushMetrics } from './metrics.ts';
import { closeInvocation, openInvocation, type OpenedSegment } from './tracing.ts';

/**
 * One invocation's telemetry, for both kinds of handler: the trace's handler subsegment
 * (shared/platform/observability/tracing.ts) around it, and the business metrics it counted flushed once
 * at its end (shared/platform/observability/metrics.ts), whether it succeeded or failed.
 */

/** Counts a refusal the request is answered with: a 429 by its limit, a 402 by its error_code. */
function countRefusal(error: unknown): void {
  if (error instanceof TooManyRequests) countMetric('RateLimited', { kind: error.kind });
  else if (error instanceof PaymentRequired) countMetric('SpendBlocked', { error_code: error.errorCode ?? 'none' });
}

const OPENED = Symbol('parley.telemetry');
type WithOpened = { [OPENED]?: OpenedSegment };

/** The HTTP pipeline's first middleware (shared/platform/http/handler.ts): outermost, so its after runs last. */
export function telemetry<E, R>(): MiddlewareObj<E, R, Error, Context> {
  return {
    before: async (request) => {
      (request.context as WithOpened)[OPENED] = await openInvocation();
    },
    after: (request) => {
      closeInvocation((request.context as WithOpened)[OPENED]);
      flushMetrics();
    },
    onError: (request) => {
      countRefusal(request.error);
      // A refusal (4xx) is an answer, not a failure of the function: only a 5xx marks the trace.
      const failed = !(request.error instanceof ApiError) || request.error.status >= 500;
      closeInvocation((request.context as WithOpened)[OPENED], failed ? request.error : undefined);
      flushMetrics();
    },
  };
}

/**
 * Wraps a queue or schedule handler (functions/webhook-delivery.ts, …) the same way. The
 * wrapper declares two parameters, as the handler does, so Lambda calls it as an async
 * handler; further arguments (the local scheduler's options) pass through.
 */
export function instrumented<E, R, A extends unknown[]>(
  handler: (event: E, context: Context, ...rest: A) => Promise<R>,
): (event: E, context: Context, ...rest: A) => Promise<R> {
  return async (event: E, context: Context, ...rest: A): Promise<R> => {
    const opened = await openInvocation();
    let failure: unknown;
    try {
      return await handler(event, context, ...rest);
    } catch (error) {
      failure = error;
      throw error;
    } finally {
      closeInvocation(opened, failure);
      flushMetrics();
    }
  };
}
