import type { Context, ScheduledEvent } from 'aws-lambda';
import { logger } from '../shared/platform/logger.ts';
import { instrumented } from '../shared/platform/observability/telemetry.ts';
import { runOAuthRefresh, type OAuthRefreshRun } from '../shared/integrations/oauth-refresh.ts';

/**
 * EventBridge invokes this every minute; the pass runs under the job lease, so a duplicate
 * or overlapping invocation does nothing. A failure is not retried (the next minute's run
 * picks the same connections up): see the stack's async-invoke settings.
 */
async function handle(_event: ScheduledEvent, context: Context): Promise<OAuthRefreshRun> {
  logger.addContext(context);
  const result = await runOAuthRefresh();
  logger.info('oauth refresh', { ...result });
  return result;
}

/** Traced, and its business metrics flushed once per invocation (shared/platform/observability/telemetry.ts). */
export const handler = instrumented(handle);
