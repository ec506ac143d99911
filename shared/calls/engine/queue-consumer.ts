import { logger } from '../../platform/logger.ts';
import { sweepHeldSlots } from '../calls.ts';
import { runCallStep } from './engine.ts';
import { admitInboundSipCaller } from '../inbound/sip.ts';
import type { CallQueueMessage } from './schedule.ts';

/** What the call-steps job does with one due message: a call's timed step, an inbound SIP caller's admission, or the scheduled concurrency sweep. */
export async function runCallQueueMessage(message: CallQueueMessage): Promise<void> {
  if ('kind' in message) {
    const result = await sweepHeldSlots();
    logger.info('concurrency sweep', {
      scheduled_at: message.scheduled_at,
      checked: result.checked,
      released: result.released.length,
      rescheduled: result.rescheduled,
      ended: result.ended.length,
    });
    return;
  }
  if (message.step === 'inbound_sip') {
    const { applied } = await admitInboundSipCaller(message);
    logger.info('inbound SIP caller', { call_id: message.call_id, room: message.room, applied });
    return;
  }
  await runCallStep(message);
}
