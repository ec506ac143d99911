import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { logger } from '../shared/platform/logger.ts';
import { ingestionFailed, KbJobMessage, runIngestion } from '../shared/knowledge-bases/ingest.ts';

/**
 * The kb-jobs queue's consumer: each message is one ingestion of a knowledge base (its
 * pending sources, then its index). A step that throws is reported alone, so SQS redelivers
 * only it; on its last receive the knowledge base is marked `error`. A malformed message is
 * logged and dropped.
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
      const parsed = KbJobMessage.safeParse(body);
      if (!parsed.success) {
        logger.error('kb-jobs: malformed message dropped', { messageId: record.messageId });
        return;
      }
      try {
        await runIngestion(parsed.data);
      } catch (error) {
        logger.error('kb-jobs: ingestion failed', { messageId: record.messageId, error: error instanceof Error ? error.message : String(error) });
        failures.push({ itemIdentifier: record.messageId });
        await ingestionFailed(parsed.data, error, Number(record.attributes?.ApproximateReceiveCount ?? 1)).catch(() => undefined);
      }
    }),
  );
  return { batchItemFailures: failures };
}
