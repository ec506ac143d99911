import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { runQueueSteps } from '../shared/platform/aws/queue-steps.ts';
import { logger } from '../shared/platform/logger.ts';
import { instrumented } from '../shared/platform/observability/telemetry.ts';
import { kbJobFailed, KbJobMessage, runKbJob } from '../shared/knowledge-bases/jobs.ts';

/**
 * The kb-jobs queue's consumer: each message is one ingestion of a knowledge base (its
 * pending sources, then its index), one step of a synced source's run, a new kb_sync
 * connection to sync, or a page of the daily auto-refresh sweep (shared/knowledge-bases/jobs.ts). A step that throws is reported alone, so SQS redelivers
 * only it; on its last receive the knowledge base is marked `error`. A malformed message is
 * logged and dropped.
 */
async function handle(event: SQSEvent, context: Context): Promise<SQSBatchResponse> {
  logger.addContext(context);
  return runQueueSteps(event, { job: 'kb-jobs', schema: KbJobMessage, run: runKbJob, failed: kbJobFailed });
}

/** Traced, and its business metrics flushed once per invocation (shared/platform/observability/telemetry.ts). */
export const handler = instrumented(handle);
