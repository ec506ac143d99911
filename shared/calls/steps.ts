import { logger } from '../platform/logger.ts';

/**
 * One timed step of a call ("dial now", "the callee's next line", "hang up", "run
 * analysis"), sent with sendAt('call-steps', …) and handled by functions/call-steps.ts.
 * A placeholder: the call engine replaces this module.
 */
export interface CallStepMessage {
  call_id: string;
  workspace_id: string;
  step: string;
  [k: string]: unknown;
}

export async function runCallStep(message: CallStepMessage): Promise<void> {
  logger.info('call step', { call_id: message.call_id, workspace_id: message.workspace_id, step: message.step });
}
