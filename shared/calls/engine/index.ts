/**
 * The call engine (docs/calls.md): a call advances by timed steps (schedule.ts) that the
 * call-steps queue delivers (queue-consumer.ts) to `runCallStep` (engine.ts: dial, answer,
 * the sandbox's turns); every end goes through finish.ts (the end, its price, the
 * analysis). media.ts is the media layer (LiveKit or the sandbox), agent-runtime.ts the
 * conversation runtime, call-webhooks.ts the call's webhook events, pricing.ts its cost.
 * This is what the calls domain's index.ts offers of it; the domain's own modules import
 * these files directly (queue-consumer.ts reaches calls.ts and inbound/, which reach the
 * engine, so they could not go through this index without a cycle).
 */
;
export { runCallQueueMessage } from './queue-consumer.ts';
export { CallQueueMessageSchema,  type CallQueueMessage, type CallStepMessage } from './schedule.ts';
