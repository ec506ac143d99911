import type { Context, ScheduledEvent } from 'aws-lambda';
import { runHourlyBilling, type HourlyBillingResult } from '../shared/billing/hourly-job.ts';
import { logger } from '../shared/platform/logger.ts';

/** EventBridge invokes this every hour. */
export async function handler(_event: ScheduledEvent, context: Context): Promise<HourlyBillingResult> {
  logger.addContext(context);
  const result = await runHourlyBilling();
  logger.info('hourly billing', { ...result });
  return result;
}
