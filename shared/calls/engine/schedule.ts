import * as z from 'zod';
import { lazySchema } from '../../platform/http/schemas.ts';
import { sendAt } from '../../platform/aws/due-time.ts';

/*
 * A call advances by timed steps (dial, the callee's next line, hang-up, analysis, its data
 * storage setting applied): each is a message due at a time, handled by `runCallStep`
 * (engine.ts) in the call-steps job (functions/call-steps.ts). In AWS they travel through
 * SQS; locally through the durable local queue, so a restart of `npm start` mid-call loses
 * no step.
 */

export const CALL_STEP_NAMES = ['dial', 'dial_timeout', 'user', 'hangup', 'analyze', 'data_storage', 'join_timeout', 'join', 'transfer', 'transfer_end', 'transfer_timeout', 'say'] as const;
export type CallStepName = (typeof CALL_STEP_NAMES)[number];

export interface CallStepMessage {
  call_id: string;
  workspace_id: string;
  step: CallStepName;
  /** The call's step sequence when scheduled: a step whose sequence is stale does nothing. */
  seq: number;
}

/** The step `step` of a call, numbered `seq` (its guard against a stale or repeated delivery). */
export function stepFor(call: { call_id: string; workspace_id: string }, step: CallStepName, seq: number): CallStepMessage {
  return { call_id: call.call_id, workspace_id: call.workspace_id, step, seq };
}

/** Pause between the agent finishing and the callee's next line in a sandbox call. */
export const SANDBOX_LINE_GAP_MS = 1000;

/** The message as the call-steps consumer checks it before the engine reads it. */
export const CallStepSchema = lazySchema(() =>
  z.object({
    call_id: z.string().min(1).max(128),
    workspace_id: z.string().min(1).max(128),
    step: z.enum(CALL_STEP_NAMES),
    seq: z.number().int().min(0),
  }),
);

/**
 * A SIP caller waiting in an inbound dispatch rule's room (inbound/sip.ts). Admission (the
 * `call_inbound` webhook with its retries, the pre-call workflow, up to
 * INBOUND_QUEUE_TIMEOUT_MS waiting for a slot) can take longer than an API request may, so
 * the LiveKit webhook only claims the room and queues this message for the call-steps job.
 */
export interface InboundSipMessage {
  step: 'inbound_sip';
  /** The call ID the room was claimed for (the `call_inbound` webhook's call_id, identical on a redelivery). */
  call_id: string;
  room: string;
  participant: { identity: string; attributes: Record<string, string> };
  /** When the caller joined (the webhook's time, epoch ms): its SIP leg's first callStatus (sip-leg.ts). */
  joined_at?: number;
}

export const InboundSipSchema = lazySchema(() =>
  z.object({
    step: z.literal('inbound_sip'),
    call_id: z.string().min(1).max(128),
    room: z.string().min(1).max(256),
    participant: z.object({
      identity: z.string().max(256),
      attributes: z.record(z.string().max(256), z.string().max(8192)),
    }),
    joined_at: z.number().int().min(0).optional(),
  }),
);

/**
 * The scheduled concurrency sweep (shared/jobs.ts: an EventBridge rule puts it on the queue
 * every minute, with the firing's time): `sweepHeldSlots` in calls.ts.
 */
export interface ConcurrencySweepMessage {
  kind: 'concurrency-sweep';
  scheduled_at?: string;
}

export const ConcurrencySweepSchema = lazySchema(() =>
  z.object({
    kind: z.literal('concurrency-sweep'),
    scheduled_at: z.string().max(64).optional(),
  }),
);

/** What the call-steps queue carries: a timed step of a call, an inbound SIP caller to admit, or the scheduled concurrency sweep. */
export type CallQueueMessage = CallStepMessage | InboundSipMessage | ConcurrencySweepMessage;

export const CallQueueMessageSchema = lazySchema(() => z.union([CallStepSchema, InboundSipSchema, ConcurrencySweepSchema]));

/** Queues an inbound SIP caller's admission to run now on the call-steps job. */
export async function queueInboundSipCaller(message: InboundSipMessage): Promise<void> {
  await sendAt('call-steps', message, Date.now());
}

/** Queues a step for its due time (shared/platform/aws/due-time.ts: SQS delays in AWS, the local queue here). */
export async function scheduleStep(message: CallStepMessage, dueAtMs: number): Promise<void> {
  await sendAt('call-steps', message, dueAtMs);
}
