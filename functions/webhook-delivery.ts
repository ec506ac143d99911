import type { Context, SQSBatchItemFailure, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { logger } from '../shared/platform/logger.ts';
import { countMetric } from '../shared/platform/observability/metrics.ts';
import { instrumented } from '../shared/platform/observability/telemetry.ts';
import { deliverWebhook, parseWebhookMessage } from '../shared/webhooks/webhooks.ts';

/**
 * The webhook queue's consumer. A failed delivery is not a failed message: deliverWebhook
 * records it and queues the retry itself. Only a message whose attempt could not be
 * recorded or whose retry could not be queued is reported, so SQS redelivers just that one;
 * and a copy of a message whose attempt another consumer holds right now, so that it comes
 * back after the visibility timeout: by then that consumer has finished the attempt (the
 * copy is dropped) or died before its POST (the copy delivers it). A delivery whose
 * workspace holds all its in-flight slots is sent back with a delay by deliverWebhook (a
 * copy is queued, so this message is done): it never waits here for a slot.
 */
export const handler = instrumented(async (event: SQSEvent, context: Context): Promise<SQSBatchResponse> => {
  logger.addContext(context);
  const batchItemFailures: SQSBatchItemFailure[] = [];
  await Promise.all(
    event.Records.map(async (record) => {
      const message = parseWebhookMessage(record.body);
      if (!message) {
        // Redelivering cannot fix a malformed message.
        logger.error('dropping malformed webhook message', { message_id: record.messageId });
        return;
      }
      try {
        const result = await deliverWebhook(message, { remainingMs: () => context.getRemainingTimeInMillis() });
        if (result === 'in_progress') batchItemFailures.push({ itemIdentifier: record.messageId });
      } catch (error) {
        logger.error('webhook attempt not recorded or retry not queued', {
          message_id: record.messageId,
          workspace_id: message.workspace_id,
          delivery_id: message.delivery_id,
          attempt: message.attempt,
          error: error instanceof Error ? error.message : String(error),
        });
        batchItemFailures.push({ itemIdentifier: record.messageId });
        countMetric('WebhookAttempt', { result: 'failed' });
      }
    }),
  );
  return { batchItemFailures };
});
