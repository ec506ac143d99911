import type { Context, ScheduledEvent } from 'aws-lambda';
import { registerBatchCallCounters } from '../shared/batches/counters.ts';
import { runBatchTicks, type BatchTickResult } from '../shared/batches/scheduler.ts';
import { logger } from '../shared/platform/logger.ts';
import { instrumented } from '../shared/platform/observability/telemetry.ts';

// Batch counters hear of the calls the passes end at once (a refused spend check).
registerBatchCallCounters();

/**
 * EventBridge invokes this once a minute (its floor); it runs 60000 / BATCH_TICK_MS passes
 * spaced BATCH_TICK_MS apart for each shard of the due-batch index, each under its shard's
 * lease (shared/batches/scheduler.ts). The optional third argument is
 * for the local scheduler, so stopping need not wait out the minute; it has a default, so
 * the handler still declares two parameters and Lambda treats it as an async handler.
 */
async function handle(
  _event: ScheduledEvent,
  context: Context,
  options: { signal?: AbortSignal } = {},
): Promise<BatchTickResult> {
  logger.addContext(context);
  const signal = options.signal instanceof AbortSignal ? options.signal : undefined;
  const result = await runBatchTicks({ signal });
  logger.info('batch tick', { passes_run: result.passes_run, passes_skipped: result.passes_skipped, passes_idle: result.passes_idle });
  return result;
}

/** Traced, and its business metrics flushed once per invocation (shared/platform/observability/telemetry.ts). */
export const handler = instrumented(handle);
