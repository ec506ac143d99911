import * as z from 'zod';
import { sendAt } from '../platform/aws/due-time.ts';

/*
 * A call advances by timed steps (dial, the callee's next line, hang-up, analysis): each
 * is a message due at a time, handled by `runCallStep` (engine.ts) in the call-steps job
 * (functions/call-steps.ts). In AWS they travel through SQS; locally through the durable
 * local queue, so a restart of `npm start` mid-call loses no step.
 */

export const CALL_STEP_NAMES = ['dial', 'user', 'hangup', 'analyze', 'join_timeout', 'join', 'transfer', 'transfer_end'] as const;
export type CallStepName = (typeof CALL_STEP_NAMES)[number];

export interface CallStepMessage {
  call_id: string;
  workspace_id: string;
  step: CallStepName;
  /** The call's step sequence when scheduled: a step whose sequence is stale does nothing. */
  seq: number;
}

/** The message as the call-steps consumer checks it before the engine reads it. */
export const CallStepSchema = z.lazy(() =>
  z.object({
    call_id: z.string().min(1).max(128),
    workspace_id: z.string().min(1).max(128),
    step: z.enum(CALL_STEP_NAMES),
    seq: z.number().int().min(0),
  }),
);

/** Queues a step for its due time (shared/platform/aws/due-time.ts: SQS delays in AWS, the local queue here). */
export async function scheduleStep(message: CallStepMessage, dueAtMs: number): Promise<void> {
  await sendAt('call-steps', message, dueAtMs);
}
