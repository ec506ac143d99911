import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import type * as z from 'zod';
import { logger } from '../logger.ts';

/**
 * The one shape of a queue job's consumer (contact-jobs, export-jobs, integration-jobs,
 * kb-jobs): each record is one message of the job's schema. A malformed message is logged
 * and dropped (redelivering it cannot help); a message whose run throws is reported alone in
 * `batchItemFailures`, so SQS redelivers only it, and `failed` hears of it with the
 * record's receive count (a job marks itself failed on its last receive). Records run
 * concurrently unless `sequential` (whole jobs that each hold the function for minutes).
 */
export interface QueueStepsOptions<T> {
  /** The job's name, for the log. */
  job: string;
  schema: z.ZodType<T>;
  run: (message: T) => Promise<void>;
  failed?: (message: T, error: unknown, receiveCount: number) => Promise<void>;
  sequential?: boolean;
}

export async function runQueueSteps<T>(event: SQSEvent, options: QueueStepsOptions<T>): Promise<SQSBatchResponse> {
  const failures: SQSBatchResponse['batchItemFailures'] = [];
  const step = async (record: SQSEvent['Records'][number]) => {
    let body: unknown;
    try {
      body = JSON.parse(record.body);
    } catch {
      body = undefined;
    }
    const parsed = options.schema.safeParse(body);
    if (!parsed.success) {
      logger.error(`${options.job}: malformed message dropped`, { messageId: record.messageId });
      return;
    }
    try {
      await options.run(parsed.data);
    } catch (error) {
      logger.error(`${options.job}: step failed`, { messageId: record.messageId, error: error instanceof Error ? error.message : String(error) });
      failures.push({ itemIdentifier: record.messageId });
      const receives = Number(record.attributes?.ApproximateReceiveCount ?? 1);
      await options.failed?.(parsed.data, error, receives).catch((reported: unknown) =>
        logger.error(`${options.job}: recording the failure failed`, { messageId: record.messageId, error: reported instanceof Error ? reported.message : String(reported) }),
      );
    }
  };
  if (options.sequential) for (const record of event.Records) await step(record);
  else await Promise.all(event.Records.map(step));
  return { batchItemFailures: failures };
}
