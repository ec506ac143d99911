import { recordCallCharge } from '../../billing/index.ts';
import { logger } from '../../platform/logger.ts';
import type { WorkerLatency } from '../../vendors/media/index.ts';
import { analyzeCall, closeConversation } from './agent-runtime.ts';
import { sendCallEvent } from './call-webhooks.ts';
import { releaseSlot } from '../concurrency.ts';
import { endMedia } from './media.ts';
import { callCost, type CallCost } from './pricing.ts';
import { recordSandboxCall } from '../artifacts/recordings.ts';
import { scheduleStep, stepFor } from './schedule.ts';
import type { CallStatus, DisconnectionReason } from '../schemas.ts';
import { findCallItem, roomOf, transitionCall, type CallItem, type TransferState } from '../store.ts';
import { withTranscript } from '../transcript.ts';

/*
 * A call's end and what follows it (docs/calls.md): `finishCall` is the one path every end
 * takes, whoever ends the call (the engine's steps, a transfer that bridged, the live
 * events, a stop, an inbound caller refused); the analysis of an ended call comes after
 * it, then the data storage setting (engine.ts runCallStep).
 */

function latencyOf(samples: readonly number[]) {
  if (samples.length === 0) return undefined;
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
  return { p50: at(50), p90: at(90), p95: at(95), p99: at(99), max: sorted.at(-1)!, min: sorted[0]!, num: sorted.length, values: samples };
}

export interface Finish {
  status: Extract<CallStatus, 'ended' | 'not_connected' | 'error'>;
  reason: DisconnectionReason;
  set?: Record<string, unknown>;
  /** Leave the media up: a bridged warm transfer's caller and destination are still talking (endTransfer ends it). */
  keepMedia?: boolean;
  /** What the agent worker measured (its call_ended report): `latency` is computed from these rather than the engine's turn times. */
  latency?: WorkerLatency;
}

/**
 * call.latency (retell-sdk's shape: p50, p90, p95, p99, min, max, num, values per metric):
 * the worker's figures on a LiveKit call; the response engine's measured turn times on a
 * sandbox call, where the turn is the whole reply (llm and e2e alike).
 */
function callLatency(call: CallItem, measured: WorkerLatency | undefined) {
  if (measured) {
    const figures = Object.fromEntries(
      (['e2e', 'llm', 'tts', 'asr'] as const).flatMap((metric) => {
        const figure = latencyOf(measured[metric] ?? []);
        return figure ? [[metric, figure]] : [];
      }),
    );
    return Object.keys(figures).length ? figures : undefined;
  }
  const llm = latencyOf(call.engine.turn_ms ?? []);
  return llm ? { llm, e2e: llm } : undefined;
}

/**
 * Ends a call that has not ended: the one path every end takes (hang-up, agent end,
 * transfer, stop, a dial that never connected, nobody joining, an engine failure).
 * Answers the ended call, or undefined when it had already ended.
 */
export async function finishCall(call: CallItem, input: Finish): Promise<CallItem | undefined> {
  // A call a person took over (live/control.ts) ends `call_take_over`, whoever hung up.
  const finish: Finish = call.live_take_over && input.status === 'ended' ? { ...input, reason: 'call_take_over' } : input;
  const nowMs = Date.now();
  const durationMs = call.start_timestamp ? Math.max(0, nowMs - call.start_timestamp) : 0;
  const cost = callCost({ durationMs, phone: call.call_type === 'phone_call', burst: call.concurrency_burst === true, batchDial: call.engine.batch?.dialled === true });
  const latency = callLatency(call, finish.latency);
  const inVoicemail = finish.reason === 'voicemail_reached';
  // A transfer still ringing is cancelled with the call, in the same write (conditional on its counter).
  const ringing = call.transfer_state?.status === 'dialing' ? call.transfer_state : undefined;
  const seq = call.transfer_seq ?? 0;
  const ended = await transitionCall(call.call_id, {
    from: ['registered', 'ongoing'],
    to: finish.status,
    ...(ringing ? { guard: { field: 'transfer_seq' as const, equals: seq }, remove: ['transfer_destination'] } : {}),
    set: {
      ...(ringing
        ? { transfer_seq: seq + 1, transfer_state: { ...ringing, status: 'cancelled', reason: finish.reason } satisfies TransferState, transfers_failed: (call.transfers_failed ?? 0) + 1 }
        : {}),
      ...finish.set,
      end_timestamp: nowMs,
      duration_ms: durationMs,
      disconnection_reason: finish.reason,
      call_cost: cost,
      combined_cost: cost.combined_cost,
      ...(latency ? { latency, ...(latency.e2e ? { e2e_latency_p50: latency.e2e.p50 } : {}) } : {}),
      ...(inVoicemail ? { in_voicemail: true } : {}),
      engine: { ...call.engine, analysis_seq: 0 },
    },
  });
  if (!ended) {
    // The transfer moved on under this end (it bridged or failed): end the call as it is now.
    if (ringing) {
      const fresh = await findCallItem(call.call_id);
      if (fresh && fresh.transfer_state?.status !== 'dialing') return finishCall(fresh, finish);
    }
    return undefined;
  }
  if (call.engine.slot) await releaseSlot(call.workspace_id, call.call_id);
  closeConversation(call.engine.conversation);
  if (!finish.keepMedia) {
    await endMedia(roomOf(call)).catch((error) => logger.warn('ending the call media failed', { error, call_id: call.call_id }));
  }
  // Charged once the media is down (the ledger write takes a few round trips).
  await chargeCall(ended);
  // The sandbox's synthetic recording, stored before call_ended so the event carries its URL.
  const recorded = await recordSandboxCall(ended);
  if (ringing) await sendCallEvent(recorded, 'transfer_cancelled');
  await sendCallEvent(recorded, 'call_ended');
  // The data storage setting applies after the analysis; a call that did not end `ended` has none.
  await scheduleStep(stepFor(recorded, finish.status === 'ended' ? 'analyze' : 'data_storage', 0), Date.now());
  return recorded;
}

/**
 * Charges an ended call's cost to its workspace's credit (billing's ledger: once per call,
 * however often this runs). Called where the call ends and again before its analysis, so a
 * charge that failed at the end is written by the analysis step; a failure is logged, never
 * fails the end.
 */
async function chargeCall(call: CallItem): Promise<void> {
  if (!call.call_cost) return;
  await recordCallCharge({ workspaceId: call.workspace_id, callId: call.call_id, callCost: call.call_cost as unknown as CallCost }).catch((error: unknown) =>
    logger.error('charging the call failed', { error, call_id: call.call_id }),
  );
}

/**
 * Post-call analysis of an ended call; `seq` guards against a repeated step. A call that
 * keeps basic attributes only has no transcript left to analyse: its analysis stays. The
 * analysis is stored with `analyzed_event_pending`, removed once `call_analyzed` is queued:
 * a step retried because the queueing failed finds the analysis stored and the event still
 * pending, and queues it then (before the data storage setting is applied, so the event
 * still carries what the call said). Queued twice only if the marker's removal fails after
 * the send.
 */
export async function analyze(call: CallItem, seq: number): Promise<CallItem | undefined> {
  if (call.call_status === 'ended' && call.engine.analysis_seq === seq + 1 && call.analyzed_event_pending) {
    await sendAnalyzedEvent(call, seq + 1);
    return undefined;
  }
  if (call.call_status !== 'ended' || call.engine.analysis_seq !== seq || call.data_storage_applied === 'basic_attributes_only') return undefined;
  await chargeCall(call);
  const { transcript_object: said } = await withTranscript(call);
  const analysis = await analyzeCall({
    workspaceId: call.workspace_id,
    agentId: call.agent_id,
    agentVersion: call.agent_version,
    transcript: (said ?? []).map(({ role, content }) => ({ role, content })),
    inVoicemail: call.disconnection_reason === 'voicemail_reached',
    ...(call.engine.agent_override?.agent ? { agentOverride: call.engine.agent_override.agent } : {}),
  });
  const updated = await transitionCall(call.call_id, {
    from: ['ended'],
    guard: { field: 'analysis_seq', equals: seq },
    set: {
      call_analysis: analysis,
      user_sentiment: analysis.user_sentiment,
      call_successful: analysis.call_successful,
      in_voicemail: analysis.in_voicemail,
      engine: { ...call.engine, analysis_seq: seq + 1 },
      analyzed_event_pending: true,
    },
    // A new analysis is stored as said: the data storage setting is applied to it again (runCallStep).
    remove: ['data_storage_applied'],
  });
  if (updated) await sendAnalyzedEvent(updated, seq + 1);
  return updated;
}

/** Queues `call_analyzed` for the analysis numbered `analysisSeq`, then removes its pending marker (unless a newer analysis came meanwhile). */
async function sendAnalyzedEvent(call: CallItem, analysisSeq: number): Promise<void> {
  await sendCallEvent(call, 'call_analyzed');
  await transitionCall(call.call_id, { from: ['ended'], guard: { field: 'analysis_seq', equals: analysisSeq }, remove: ['analyzed_event_pending'] });
}

/** Queues a fresh analysis of an ended call (rerun-call-analysis, backfill). */
export async function queueAnalysis(call: CallItem): Promise<void> {
  await scheduleStep(stepFor(call, 'analyze', call.engine.analysis_seq ?? 0), Date.now());
}

export async function scheduleFirstStep(call: CallItem, step: 'dial' | 'join' | 'join_timeout', dueAtMs: number): Promise<void> {
  await scheduleStep(stepFor(call, step, 0), dueAtMs);
}
