import type { Context, ScheduledEvent } from 'aws-lambda';
import { runHourlyBilling, type HourlyBillingResult } from '../shared/billing-job.ts';
import { logger } from '../shared/logger.ts';

/** EventBridge invokes this every hour. */
export async function handler(_event: ScheduledEvent, context: Context): Promise<HourlyBillingResult> {
  logger.addContext(context);
  const result = await runHourlyBilling();
  logger.info('hourly billing', { ...result });
  return result;
}
