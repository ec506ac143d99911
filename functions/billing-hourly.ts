import type { Context, ScheduledEvent } from 'aws-lambda';
import { runHourlyBilling, type HourlyBillingResult } from '../shared/billing/hourly-job.ts';
import { logger } from '../shared/platform/logger.ts';
import { instrumented } from '../shared/platform/observability/telemetry.ts';

/** EventBridge invokes this every hour. */
async function handle(_event: ScheduledEvent, context: Context): Promise<HourlyBillingResult> {
  logger.addContext(context);
  const result = await runHourlyBilling();
  logger.info('hourly billing', { ...result });
  return result;
}

/** Traced, and its business metrics flushed once per invocation (shared/platform/observability/telemetry.ts). */
export const handler = instrumented(handle);
