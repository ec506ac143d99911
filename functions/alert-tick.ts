import type { Context, ScheduledEvent } from 'aws-lambda';
import { runAlertTick, type AlertTickResult } from '../shared/analytics/alerts/index.ts';
import { logger } from '../shared/platform/logger.ts';
import { instrumented } from '../shared/platform/observability/telemetry.ts';

/**
 * EventBridge invokes this every minute: the rules due are evaluated (docs/analytics.md,
 * "Alerts"). Each rule is taken by a conditional write, so an overlapping or duplicate
 * invocation evaluates nothing twice. A failure is not retried: the rules it left stay due
 * and the next minute's run takes them.
 */
async function handle(_event: ScheduledEvent, context: Context): Promise<AlertTickResult> {
  logger.addContext(context);
  const result = await runAlertTick();
  logger.info('alert tick', { ...result });
  return result;
}

/** Traced, and its business metrics flushed once per invocation (shared/platform/observability/telemetry.ts). */
export const handler = instrumented(handle);
