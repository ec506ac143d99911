import { createHash } from 'node:crypto';
import { idPrefix } from '../platform/ids.ts';
import { CALL_STATUSES } from './schemas.ts';
import { findCallItem, transitionCall } from './store.ts';

/*
 * A batch's links to its calls, apart from the dialling (batch-dial.ts) so that the batches
 * API reaches them through the calls domain's narrow entry (records/index.ts) without the engine.
 */

/** The call ID a task's dial uses: 12 hex of the claim time, then 12 of a hash of batch and task. */
export function batchCallIdFor(batchCallId: string, taskIndex: number, claimedAt: number): string {
  const tail = createHash('sha256').update(`${batchCallId}:${taskIndex}`).digest('hex').slice(0, 12);
  return idPrefix.call + Math.max(0, Math.floor(claimedAt)).toString(16).padStart(12, '0') + tail;
}

/**
 * Removes a call's link to its batch (the batch was deleted: its calls stay in the call
 * history, unlinked). Only while the call still names that batch; a missing call is fine.
 */
export async function unlinkBatchCall(callId: string, batchCallId: string): Promise<void> {
  const call = await findCallItem(callId);
  if (!call || call.batch_call_id !== batchCallId) return;
  await transitionCall(callId, { from: CALL_STATUSES, remove: ['batch_call_id'] });
}
