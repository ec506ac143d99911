import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { logger } from '../shared/platform/logger.ts';
import { AccountDataJobMessage, runExport, runPrivacyRequest } from '../shared/account-data/index.ts';

/**
 * The export-jobs queue's consumer: each message is one whole account-data job (an export,
 * a privacy erase, a retention run). A job records its own failure (failed, with a reason);
 * what throws past that (the table unreachable) is reported alone, so SQS redelivers only
 * it; a malformed message is logged and dropped.
 */
export async function handler(event: SQSEvent, context: Context): Promise<SQSBatchResponse> {
  logger.addContext(context);
  const failures: SQSBatchResponse['batchItemFailures'] = [];
  for (const record of event.Records) {
    let body: unknown;
    try {
      body = JSON.parse(record.body);
    } catch {
      body = undefined;
    }
    const parsed = AccountDataJobMessage.safeParse(body);
    if (!parsed.success) {
      logger.error('export-jobs: malformed message dropped', { messageId: record.messageId });
      continue;
    }
    const message = parsed.data;
    try {
      if (message.kind === 'export') await runExport(message.workspace_id, message.export_id);
      else await runPrivacyRequest(message.workspace_id, message.request_id);
    } catch (error) {
      logger.error('export-jobs: job failed', { messageId: record.messageId, error: error instanceof Error ? error.message : String(error) });
      failures.push({ itemIdentifier: record.messageId });
    }
  }
  return { batchItemFailures: failures };
}
