import { logger } from '../platform/logger.ts';

/*
 * A call advances by timed steps (dial, the callee's next line, hang-up, analysis): each
 * is a message due at a time, handled by `runCallStep` (engine.ts). In AWS and locally
 * they travel through the call-steps queue; until that lands the scheduler is in-process.
 */

export type CallStepName = 'dial' | 'user' | 'hangup' | 'analyze' | 'join_timeout' | 'join';

export interface CallStepMessage {
  call_id: string;
  workspace_id: string;
  step: CallStepName;
  /** The call's step sequence when scheduled: a step whose sequence is stale does nothing. */
  seq: number;
}

type Runner = (message: CallStepMessage) => Promise<void>;
let runner: Runner | undefined;

/** engine.ts registers the step handler (it imports this module, not the reverse). */
export function setStepRunner(run: Runner): void {
  runner = run;
}

// PLACEHOLDER transport until the call-steps queue lands (branch queue).
export async function scheduleStep(message: CallStepMessage, dueAtMs: number): Promise<void> {
  const delay = Math.max(0, dueAtMs - Date.now());
  setTimeout(() => {
    runner?.(message).catch((error) => logger.error('call step failed', { error, call_id: message.call_id, step: message.step }));
  }, delay).unref?.();
}
