import { onCallLifecycle, type CallLifecycleEvent } from '../calls/records/index.ts';
import { countPickedUp, countSuccessful, getTask } from './store.ts';

/*
 * The batch counters (picked_up_count, successful_count) kept from the calls' lifecycle:
 * a module of its own, so the functions that move calls (calls, call-steps, batch-tick)
 * register them without loading the batch API operations and schemas (batches.ts) at cold
 * start (docs/performance.md, "Narrow entries"). index.ts exports both.
 */

/** Keeps picked_up_count and successful_count from the calls' lifecycle (registered by registerBatchCallCounters). */
async function applyCallLifecycle(event: CallLifecycleEvent): Promise<void> {
  if (!event.batch) return;
  const { batch_call_id: batchCallId, task_index: index } = event.batch;
  if (event.event === 'call_started') {
    await countPickedUp(event.workspace_id, batchCallId, index, event.call_id);
    return;
  }
  if (event.event !== 'call_analyzed' || event.call_successful === undefined) return;
  for (let attempt = 0; attempt < 5; attempt++) {
    const task = await getTask(event.workspace_id, batchCallId, index);
    if (!task || task.successful === event.call_successful) return;
    if (await countSuccessful(event.workspace_id, batchCallId, task, event.call_successful)) return;
  }
}

/**
 * Registers the counters' listener with the calls engine. Every function whose code moves
 * calls (functions/calls.ts, functions/call-steps.ts, functions/batch-tick.ts) calls it at load.
 */
export function registerBatchCallCounters(): void {
  onCallLifecycle(applyCallLifecycle);
}
