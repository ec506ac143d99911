import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { runQueueSteps } from '../shared/platform/aws/queue-steps.ts';
import { logger } from '../shared/platform/logger.ts';
import { instrumented } from '../shared/platform/telemetry.ts';
import { AccountDataJobMessage, runExport, runPrivacyRequest } from '../shared/account-data/index.ts';

/**
 * The export-jobs queue's consumer: each message is one whole account-data job (an export,
 * a privacy erase, a retention run). A job records its own failure (failed, with a reason);
 * what throws past that (the table unreachable) is reported alone, so SQS redelivers only
 * it; a malformed message is logged and dropped.
 */
async function handle(event: SQSEvent, context: Context): Promise<SQSBatchResponse> {
  logger.addContext(context);
  // One whole job per message (minutes for a large export): one after another.
  return runQueueSteps(event, {
    job: 'export-jobs',
    schema: AccountDataJobMessage,
    run: (message) => (message.kind === 'export' ? runExport(message.workspace_id, message.export_id) : runPrivacyRequest(message.workspace_id, message.request_id)),
    sequential: true,
  });
}

/** Traced, and its business metrics flushed once per invocation (shared/platform/telemetry.ts). */
export const handler = instrumented(handle);
