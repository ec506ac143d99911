import { logger } from '../platform/logger.ts';
import { runCallStep } from './engine.ts';
import { admitInboundSipCaller } from './inbound-sip.ts';
import type { CallQueueMessage } from './schedule.ts';

/** What the call-steps job does with one due message: a call's timed step, or an inbound SIP caller's admission. */
export async function runCallQueueMessage(message: CallQueueMessage): Promise<void> {
  if (message.step === 'inbound_sip') {
    const { applied } = await admitInboundSipCaller(message);
    logger.info('inbound SIP caller', { call_id: message.call_id, room: message.room, applied });
    return;
  }
  await runCallStep(message);
}
