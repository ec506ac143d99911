import { logger } from '../logger.ts';
import { keys } from '../store/keys.ts';
import { table } from '../store/table.ts';

/*
 * The API's error answers per workspace and minute, for the alerts' `api_errors` and
 * `api_client_errors` metrics (docs/analytics.md, "Alerts"). A rollup cell like the
 * conversations' (the same key builder, partition `api#minute#all`, sort key
 * `<minute>#-#<shard>`), written by one atomic ADD when a request of a known workspace is
 * answered 4xx or 5xx: no read, no condition, on one of 4 shards picked at random, so a
 * burst of errors never makes one item hot. The platform writes it (the HTTP layer is
 * below the domains); shared/analytics reads it.
 */

/** The cells' partition name (the rollups' `<table>#<level>#<view>` form). */
export const API_ERROR_PARTITION = 'api#minute#all';
const SHARDS = 4;
/** As the rollups' minute cells: an alert window reads at most two days back. */
const RETENTION_MS = 3 * 86_400_000;

/**
 * Answers not counted. A 429 is the platform shedding load: a write per refusal would turn
 * a flood into table writes. A 503 says an AWS service (usually the table) did not answer:
 * the count would wait out the same timeouts before the answer could go. Both are seen by
 * the operator's alarms (docs/operations.md), not by a workspace's alerts.
 */
const NOT_COUNTED: ReadonlySet<number> = new Set([429, 503]);

/**
 * Counts one error answer (status 400 to 599, but 429 and 503) of a workspace's request:
 * `x_4xx` or `x_5xx` of the minute's cell. Never throws: a failed count is logged, the
 * answer goes out as it is.
 */
export async function countApiError(workspaceId: string, status: number, nowMs = Date.now()): Promise<void> {
  if (status < 400 || status > 599 || NOT_COUNTED.has(status)) return;
  const bucket = new Date(nowMs).toISOString().slice(0, 16);
  const minuteStart = Math.floor(nowMs / 60_000) * 60_000;
  try {
    await table.update({
      Key: keys.rollupCell(workspaceId, API_ERROR_PARTITION, bucket, '-', Math.floor(Math.random() * SHARDS)),
      UpdateExpression: 'SET #bucket = :bucket, #value = :value, expires_at = :expires ADD #counter :one',
      ExpressionAttributeNames: { '#bucket': 'bucket', '#value': 'value', '#counter': status >= 500 ? 'x_5xx' : 'x_4xx' },
      ExpressionAttributeValues: { ':bucket': bucket, ':value': '-', ':expires': Math.floor((minuteStart + RETENTION_MS) / 1000), ':one': 1 },
    });
  } catch (error) {
    logger.warn('counting an API error for alerts failed', { workspace_id: workspaceId, status, error: error instanceof Error ? error.message : String(error) });
  }
}
