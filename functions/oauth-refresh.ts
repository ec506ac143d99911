import type { Context, ScheduledEvent } from 'aws-lambda';
import { logger } from '../shared/logger.ts';
import { refreshExpiringConnections, type OAuthRefreshResult } from '../shared/oauth-refresh.ts';

/** EventBridge invokes this every minute. */
export async function handler(_event: ScheduledEvent, context: Context): Promise<OAuthRefreshResult> {
  logger.addContext(context);
  const result = await refreshExpiringConnections();
  logger.info('oauth refresh', { ...result });
  return result;
}
