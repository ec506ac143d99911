import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { runQueueSteps } from '../shared/platform/aws/queue-steps.ts';
import { logger } from '../shared/platform/logger.ts';
import { instrumented } from '../shared/platform/observability/telemetry.ts';
import { callHistoryPage } from '../shared/calls/records/index.ts';
import { ContactJobMessage, importStepFailed, runBackfillStep, runImportStep, type CallPageReader } from '../shared/contacts/index.ts';

/** The calls domain's history, as the contacts backfill reads it (the job sits above both domains). */
const readCalls: CallPageReader = (workspaceId, input) => callHistoryPage(workspaceId, input);

/**
 * The contact-jobs queue's consumer: each message is one step of a contacts job (a page of
 * the backfill, a chunk of an import). A step that throws is reported alone, so SQS
 * redelivers only it (an import step that failed its last receive stops its job as failed);
 * a malformed message is logged and dropped.
 */
async function handle(event: SQSEvent, context: Context): Promise<SQSBatchResponse> {
  logger.addContext(context);
  return runQueueSteps(event, {
    job: 'contact-jobs',
    schema: ContactJobMessage,
    run: (message) => (message.kind === 'import' ? runImportStep(message) : runBackfillStep(message, readCalls)),
    failed: async (message, error, receives) => {
      if (message.kind === 'import') await importStepFailed(message, error, receives);
    },
  });
}

/** Traced, and its business metrics flushed once per invocation (shared/platform/observability/telemetry.ts). */
export const handler = instrumented(handle);
