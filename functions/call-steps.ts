import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import * as z from 'zod';
import { dueTimeBatch } from '../shared/platform/aws/due-time.ts';
import { logger } from '../shared/platform/logger.ts';
import { runCallStep, type CallStepMessage } from '../shared/calls/index.ts';

/** What every step names; the rest of the message is the step's own (the call engine reads it). */
const CallStepShape = z.looseObject({ call_id: z.string().min(1), workspace_id: z.string().min(1), step: z.string().min(1) });

const parseCallStep = (message: unknown): CallStepMessage | undefined => {
  const parsed = CallStepShape.safeParse(message);
  return parsed.success ? (parsed.data as CallStepMessage) : undefined;
};

/**
 * The call-steps queue's consumer: a step not yet due is re-sent for its next hop, a due one
 * goes to the call engine. Only a step whose re-send or run failed is reported, so SQS
 * redelivers just that one (shared/platform/aws/due-time.ts).
 */
export async function handler(event: SQSEvent, context: Context): Promise<SQSBatchResponse> {
  logger.addContext(context);
  return dueTimeBatch('call-steps', event, { parse: parseCallStep, handle: (message) => runCallStep(message) });
}
