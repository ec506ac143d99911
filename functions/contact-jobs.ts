import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { logger } from '../shared/platform/logger.ts';
import { callHistoryPage } from '../shared/calls/index.ts';
import { ContactJobMessage, importStepFailed, runBackfillStep, runImportStep, type CallPageReader } from '../shared/contacts/index.ts';

/** The calls domain's history, as the contacts backfill reads it (the job sits above both domains). */
const readCalls: CallPageReader = (workspaceId, input) => callHistoryPage(workspaceId, input);

/**
 * The contact-jobs queue's consumer: each message is one step of a contacts job (a page of
 * the backfill, a chunk of an import). A step that throws is reported alone, so SQS
 * redelivers only it (an import step that failed its last receive stops its job as failed);
 * a malformed message is logged and dropped.
 */
export async function handler(event: SQSEvent, context: Context): Promise<SQSBatchResponse> {
  logger.addContext(context);
  const failures: SQSBatchResponse['batchItemFailures'] = [];
  await Promise.all(
    event.Records.map(async (record) => {
      let body: unknown;
      try {
        body = JSON.parse(record.body);
      } catch {
        body = undefined;
      }
      const parsed = ContactJobMessage.safeParse(body);
      if (!parsed.success) {
        logger.error('contact-jobs: malformed message dropped', { messageId: record.messageId });
        return;
      }
      const message = parsed.data;
      try {
        if (message.kind === 'import') await runImportStep(message);
        else await runBackfillStep(message, readCalls);
      } catch (error) {
        logger.error('contact-jobs: step failed', { messageId: record.messageId, error: error instanceof Error ? error.message : String(error) });
        failures.push({ itemIdentifier: record.messageId });
        if (message.kind === 'import') {
          await importStepFailed(message, error, Number(record.attributes?.ApproximateReceiveCount ?? 1)).catch(() => undefined);
        }
      }
    }),
  );
  return { batchItemFailures: failures };
}
