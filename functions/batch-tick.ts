import type { Context, ScheduledEvent } from 'aws-lambda';
import { registerBatchCallCounters } from '../shared/batches/counters.ts';
import { registerRollupRecording } from '../shared/analytics/recording/index.ts';
import { runBatchTicks, type BatchTickResult } from '../shared/batches/scheduler.ts';
import { BATCH_DUE_SHARDS } from '../shared/batches/shards.ts';
import type { ScheduledInput } from '../shared/jobs.ts';
import { logger } from '../shared/platform/logger.ts';
import { instrumented } from '../shared/platform/observability/telemetry.ts';

// Batch counters hear of the calls the passes end at once (a refused spend check).
registerBatchCallCounters();
// The analytics rollups count every call this function ends or analyses (docs/analytics.md, Recording).
registerRollupRecording();

/**
 * The shards an invocation passes: its event's one shard (the deployed schedule invokes the
 * function once per shard a minute, shared/jobs.ts), or every shard for an event without
 * one (an operator's manual invocation). A shard out of range is a broken schedule: it fails
 * rather than pass nothing.
 */
function shardsOf(event: ScheduledEvent | ScheduledInput): number[] | undefined {
  if (!('shard' in event)) return undefined;
  const { shard } = event;
  if (!Number.isInteger(shard) || shard < 0 || shard >= BATCH_DUE_SHARDS) {
    throw new Error(`batch-tick was invoked for shard ${String(shard)}; the due-batch index has shards 0 to ${BATCH_DUE_SHARDS - 1}`);
  }
  return [shard];
}

/**
 * EventBridge invokes this once a minute (its floor) for each shard of the due-batch index;
 * it runs 60000 / BATCH_TICK_MS passes of the shard spaced BATCH_TICK_MS apart, each under
 * the shard's lease (shared/batches/scheduler.ts). The optional third argument is for the
 * local scheduler, so stopping need not wait out the minute; it has a default, so the
 * handler still declares two parameters and Lambda treats it as an async handler.
 */
async function handle(
  event: ScheduledEvent | ScheduledInput,
  context: Context,
  options: { signal?: AbortSignal } = {},
): Promise<BatchTickResult> {
  logger.addContext(context);
  const signal = options.signal instanceof AbortSignal ? options.signal : undefined;
  const shards = shardsOf(event);
  const result = await runBatchTicks({ signal, shards });
  logger.info('batch tick', { shards: shards ?? 'all', passes_run: result.passes_run, passes_skipped: result.passes_skipped, passes_idle: result.passes_idle });
  return result;
}

/** Traced, and its business metrics flushed once per invocation (shared/platform/observability/telemetry.ts). */
export const handler = instrumented(handle);
