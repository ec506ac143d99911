import { onCallLifecycle, type CallItem, type CallLifecycleEvent } from '../../calls/records/index.ts';
import type { AnalysisFacts, ConversationFacts } from '../rollups/index.ts';

/*
 * A call's figures in the rollups (docs/analytics.md, "Recording"): added when it ends
 * (`call_ended`) and when its analysis lands (`call_analyzed`), from the call item the
 * transition wrote. Calls may not import analytics (analytics reads calls), so this is a
 * call lifecycle listener that every function moving calls registers at load.
 */

/** The terminal statuses: a call in one has sent `call_ended`. */
export const ENDED_CALL_STATUSES: ReadonlySet<string> = new Set(['ended', 'not_connected', 'error']);

/** What the rollups take from a call: its dimensions, duration, combined cost (cents) and e2e latency p50, and its end counters. */
export function callFacts(call: CallItem): ConversationFacts {
  const reason = call.disconnection_reason ?? undefined;
  return {
    table: 'calls',
    workspace_id: call.workspace_id,
    id: call.call_id,
    // A call that never started (not connected) is bucketed by its creation.
    start_timestamp: call.start_timestamp ?? call.created_timestamp,
    dimensions: {
      agent_id: call.agent_id,
      agent_version: call.agent_version,
      call_type: call.call_type,
      direction: 'direction' in call ? call.direction : undefined,
      call_status: call.call_status,
      disconnection_reason: reason,
      batch_call_id: call.batch_call_id,
      // The workspace's own number that placed the call. An inbound call's from_number is
      // the caller's: personal data a privacy erase must remove, and one value per caller,
      // so it is not kept (docs/analytics.md, "Recording").
      from_number: 'from_number' in call && call.direction === 'outbound' ? call.from_number : undefined,
    },
    figures: {
      duration_ms: call.duration_ms,
      cost: call.combined_cost ?? (call.call_cost as { combined_cost?: number } | undefined)?.combined_cost,
      latency_ms: call.e2e_latency_p50,
    },
    counters: {
      ...(call.in_voicemail ? { voicemail: 1 } : {}),
      ...(reason?.startsWith('error') ? { error: 1 } : {}),
      ...(call.transfers_failed ? { transfer_failed: call.transfers_failed } : {}),
    },
  };
}

/** The call's analysis verdicts, or undefined when it has none. */
export function callAnalysisFacts(call: CallItem): AnalysisFacts | undefined {
  const analysis = call.call_analysis as { call_successful?: boolean; user_sentiment?: string } | undefined;
  if (!analysis) return undefined;
  return { successful: analysis.call_successful ?? null, sentiment: analysis.user_sentiment ?? null };
}

/**
 * The rollups' writer (and its sketch library), loaded on a function's first call end: the
 * functions that move calls carry it in a lazy chunk, not in their cold start (they sit near
 * the 700 KiB budget; docs/performance.md, "Sizes: cold and lazy").
 */
const rollups = () => import('../rollups/index.ts');

/** The listener: an end adds the call, an analysis its verdicts. A failure throws to the listener mechanism, which logs it. */
async function recordCallLifecycle(event: CallLifecycleEvent): Promise<void> {
  if (event.event !== 'call_ended' && event.event !== 'call_analyzed') return;
  const { recordConversation } = await rollups();
  if (event.event === 'call_ended') {
    await recordConversation(callFacts(event.call), 'ended');
    return;
  }
  const analysis = callAnalysisFacts(event.call);
  if (analysis) await recordConversation(callFacts(event.call), 'analyzed', analysis);
}

/**
 * Registers the rollups' recording with the calls engine. Every function whose code moves
 * calls (functions/calls.ts, call-steps.ts, calls-media.ts, batch-tick.ts) calls it at load.
 */
export function registerRollupRecording(): void {
  onCallLifecycle(recordCallLifecycle);
}
