import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import * as z from 'zod';
import { lazySchema } from '../shared/platform/http/schemas.ts';
import { runQueueSteps } from '../shared/platform/aws/queue-steps.ts';
import { logger } from '../shared/platform/logger.ts';
import { instrumented } from '../shared/platform/observability/telemetry.ts';
import { AccountDataJobMessage, runExport, runListingBackfill, runPrivacyRequest, runRetentionSweep, utcDay } from '../shared/account-data/jobs.ts';
import { runPurgeStep, WorkspacePurgeMessage } from '../shared/members/index.ts';
import { RollupBackfillMessage, runRollupBackfill } from '../shared/analytics/backfill/index.ts';

const ExportJobsMessage = lazySchema(() => z.union([AccountDataJobMessage, WorkspacePurgeMessage, RollupBackfillMessage]));

/**
 * The export-jobs queue's consumer: each message is one whole account-data job (an export,
 * a privacy erase, a retention run, a run of the daily retention sweep, of the listing counters' backfill or of the analytics rollups' backfill) or one bounded step
 * of a deleted workspace's purge (shared/members/purge.ts, which queues its own next step).
 * A job records its own failure (failed, with a reason); what throws past that (the table
 * unreachable) is reported alone, so SQS redelivers only it; a malformed message is logged
 * and dropped.
 */
async function handle(event: SQSEvent, context: Context): Promise<SQSBatchResponse> {
  logger.addContext(context);
  // One whole job per message (minutes for a large export): one after another.
  return runQueueSteps(event, {
    job: 'export-jobs',
    schema: ExportJobsMessage,
    run: async (message) => {
      if (message.kind === 'workspace-purge') return runPurgeStep(message);
      if (message.kind === 'export') return runExport(message.workspace_id, message.export_id);
      if (message.kind === 'retention-sweep') {
        const scheduled = message.scheduled_at ? Date.parse(message.scheduled_at) : NaN;
        await runRetentionSweep(message.day ?? utcDay(Number.isNaN(scheduled) ? Date.now() : scheduled));
        return;
      }
      if (message.kind === 'rollup-backfill') {
        // A message naming a workspace walks it alone, from where its previous run stopped.
        const { workspace_id: workspaceId, table, after } = message;
        await runRollupBackfill(workspaceId ? { workspaceId, position: { table: table ?? 'calls', ...(after ? { after } : {}) } } : {});
        return;
      }
      if (message.kind === 'listing-backfill') {
        await runListingBackfill();
        return;
      }
      return runPrivacyRequest(message.workspace_id, message.request_id);
    },
    sequential: true,
  });
}

/** Traced, and its business metrics flushed once per invocation (shared/platform/observability/telemetry.ts). */
export const handler = instrumented(handle);
