import { logger } from '../platform/logger.ts';
import type { CallItem } from './store.ts';

/*
 * Other domains hearing of a call's life (the batches domain keeps its counters from
 * these, analytics its rollups). Calls may not import those domains (they import calls), so they register here:
 * each function whose code moves calls registers the listeners it needs at load
 * (functions/calls.ts, functions/call-steps.ts, functions/calls-media.ts, functions/batch-tick.ts).
 *
 * A listener runs after the transition it hears of was written, once per successful
 * transition (the transitions are conditional writes: a repeated step writes nothing and
 * notifies nothing). A failing listener is logged and does not fail the call's step.
 */

type CallLifecycleEventName = 'call_started' | 'call_ended' | 'call_analyzed';

export interface CallLifecycleEvent {
  event: CallLifecycleEventName;
  workspace_id: string;
  call_id: string;
  call_status: CallItem['call_status'];
  /** The analysis' verdict (call_analyzed). */
  call_successful?: boolean;
  /** Set when a batch task placed the call. */
  batch?: { batch_call_id: string; task_index: number };
  /** The call as written by the transition (the analytics rollups take its figures). */
  call: CallItem;
}

export type CallLifecycleListener = (event: CallLifecycleEvent) => Promise<void>;

const listeners: CallLifecycleListener[] = [];

/** Registers a listener (registering the same function again does nothing). */
export function onCallLifecycle(listener: CallLifecycleListener): void {
  if (!listeners.includes(listener)) listeners.push(listener);
}

const LIFECYCLE: ReadonlySet<string> = new Set(['call_started', 'call_ended', 'call_analyzed']);

export async function notifyCallLifecycle(call: CallItem, event: string): Promise<void> {
  if (!LIFECYCLE.has(event) || listeners.length === 0) return;
  const batch = call.engine?.batch;
  const payload: CallLifecycleEvent = {
    event: event as CallLifecycleEventName,
    workspace_id: call.workspace_id,
    call_id: call.call_id,
    call_status: call.call_status,
    ...(call.call_analysis ? { call_successful: (call.call_analysis as { call_successful?: boolean }).call_successful === true } : {}),
    ...(batch && call.batch_call_id ? { batch: { batch_call_id: batch.batch_call_id, task_index: batch.task_index } } : {}),
    call,
  };
  await Promise.all(
    listeners.map((listener) =>
      listener(payload).catch((error: unknown) =>
        logger.error('a call lifecycle listener failed', { call_id: call.call_id, event, error: error instanceof Error ? error.message : String(error) }),
      ),
    ),
  );
}
