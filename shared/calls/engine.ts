import { config } from '../platform/config.ts';
import { logger } from '../platform/logger.ts';
import { agentTurn, analyzeCall, closeConversation, openConversation, type TranscriptEvent, type TurnResult } from './agent-runtime.ts';
import { sendCallEvent } from './call-webhooks.ts';
import { releaseSlot } from './concurrency.ts';
import { dialOut, endMedia } from './media.ts';
import { callCost } from './pricing.ts';
import { scheduleStep, type CallStepMessage } from './schedule.ts';
import type { CallStatus, DisconnectionReason } from './schemas.ts';
import { findCallItem, transitionCall, type CallItem, type EngineState } from './store.ts';

/*
 * The call state machine, one step at a time (docs/calls.md):
 *
 *   registered ──dial answered / web user joined──▶ ongoing ──hang-up, agent end, stop──▶ ended
 *        │                                            │
 *        └─ busy, no answer, failed, nobody joined ──▶ not_connected        (error: engine failure)
 *
 * Every change is a conditional write on the state it leaves (store.ts transitionCall), so
 * a late or duplicated step (the queue delivers at least once) changes nothing. Ending a
 * call, whatever ends it, goes through `finishCall`: the one place that stamps the end,
 * prices the call, releases its concurrency slot (exactly once, by the slot record) and
 * sends call_ended; ended calls then get their analysis.
 */

/** The callee's lines when a sandbox call has no `metadata.sandbox_user_says`. */
export const DEFAULT_CALLEE_LINES = ['Hi, yes, this is a good time.', 'Can you tell me a bit more?', 'Okay, thank you. That is all for now.'];
/** Pause between the agent finishing and the callee's next line in a sandbox call. */
export const SANDBOX_LINE_GAP_MS = 1000;
/** A sandbox voicemail: the agent's message, then the line is dropped after this. */
const VOICEMAIL_MS = 1500;
/** transcript_updated at most this often (spec). */
export const TRANSCRIPT_UPDATE_MS = 3000;

export async function runCallStep(message: CallStepMessage): Promise<void> {
  const call = await findCallItem(message.call_id);
  if (!call || call.workspace_id !== message.workspace_id) return;
  switch (message.step) {
    case 'dial':
      return dial(call);
    case 'join':
      return answer(call, {});
    case 'user':
      return calleeSpeaks(call, message.seq);
    case 'hangup':
      // A scripted callee says every line before hanging up, however slow the turns were.
      if (call.call_status === 'ongoing' && (call.engine.step_seq ?? 0) < (call.engine.sandbox?.user_lines.length ?? 0) && !call.engine.sandbox?.voicemail) {
        await scheduleStep(stepFor(call, 'hangup', 0), Date.now() + SANDBOX_LINE_GAP_MS);
        return;
      }
      await finishCall(call, {
        status: 'ended',
        reason: call.engine.sandbox?.voicemail ? 'voicemail_reached' : 'user_hangup',
      });
      return;
    case 'join_timeout':
      if (call.call_status !== 'registered') return;
      await finishCall(call, {
        status: 'not_connected',
        reason: call.call_type === 'web_call' ? 'error_user_not_joined' : 'registered_call_timeout',
      });
      return;
    case 'analyze':
      await analyze(call, message.seq);
      return;
  }
}

async function dial(call: CallItem): Promise<void> {
  if (call.call_status !== 'registered') return;
  const outcome = await dialOut(call);
  if (!outcome.connected) {
    await finishCall(call, { status: 'not_connected', reason: outcome.disconnection_reason });
    return;
  }
  await answer(call, { voicemail: outcome.voicemail === true });
}

/** The callee (or the web user) is on the line: the call is ongoing and the agent speaks first. */
export async function answer(call: CallItem, options: { voicemail?: boolean }): Promise<void> {
  if (call.call_status !== 'registered') return;
  const nowMs = Date.now();
  if (call.engine.media === 'livekit') {
    // With a media server the agent worker holds the conversation and reports it (live-events.ts).
    const live = await transitionCall(call.call_id, { from: ['registered'], to: 'ongoing', set: { start_timestamp: nowMs } });
    if (live) await sendCallEvent(live, 'call_started');
    return;
  }
  const conversation = await openConversation({
    workspaceId: call.workspace_id,
    agentId: call.agent_id,
    agentVersion: call.agent_version,
    callId: call.call_id,
    channel: 'voice',
    dynamicVariables: call.retell_llm_dynamic_variables ?? {},
    fromNumber: call.from_number ?? undefined,
    toNumber: call.to_number ?? undefined,
    metadata: call.metadata,
  });
  const sandbox = { ...(call.engine.sandbox ?? { user_lines: DEFAULT_CALLEE_LINES, call_ms: config.SANDBOX_CALL_MS }), voicemail: options.voicemail };
  const started = await transitionCall(call.call_id, {
    from: ['registered'],
    to: 'ongoing',
    set: { start_timestamp: nowMs, engine: { ...call.engine, sandbox, conversation, step_seq: 0, turn_ms: [] } },
  });
  if (!started) return;
  await sendCallEvent(started, 'call_started');

  const opening = await timedTurn(started, { type: 'call_started' });
  if (!opening) return;
  const afterOpening = await recordTurn(started, opening, { guard: 0, next: 0 });
  if (!afterOpening) return;
  if (await followThrough(afterOpening, opening.result)) return;

  if (options.voicemail) {
    await scheduleStep(stepFor(afterOpening, 'hangup', 0), Date.now() + VOICEMAIL_MS);
    return;
  }
  // The call's length is the callee's: the hang-up comes at start + call_ms whatever is said.
  await scheduleStep(stepFor(afterOpening, 'hangup', 0), nowMs + sandbox.call_ms);
  if (sandbox.user_lines.length > 0) await scheduleStep(stepFor(afterOpening, 'user', 0), Date.now() + SANDBOX_LINE_GAP_MS);
}

/** The sandbox callee says line `seq`; the agent answers. */
async function calleeSpeaks(call: CallItem, seq: number): Promise<void> {
  if (call.call_status !== 'ongoing' || call.engine.step_seq !== seq) return;
  const line = call.engine.sandbox?.user_lines[seq];
  if (line === undefined) return;
  const turn = await timedTurn(call, { type: 'user_said', text: line });
  if (!turn) return;
  const updated = await recordTurn(call, turn, { guard: seq, next: seq + 1, userLine: line });
  if (!updated) return;
  if (await followThrough(updated, turn.result)) return;
  const lines = updated.engine.sandbox?.user_lines ?? [];
  if (seq + 1 < lines.length) await scheduleStep(stepFor(updated, 'user', seq + 1), Date.now() + SANDBOX_LINE_GAP_MS);
}

/** The agent ended or transferred the call in its turn: finish it. Answers whether it did. */
async function followThrough(call: CallItem, turn: TurnResult): Promise<boolean> {
  if (turn.end) {
    await finishCall(call, { status: 'ended', reason: 'agent_hangup' });
    return true;
  }
  if (turn.transfer) {
    await finishCall(call, { status: 'ended', reason: 'call_transfer', set: { transfer_destination: turn.transfer.number } });
    return true;
  }
  return false;
}

/**
 * One turn of the agent's response engine, timed for `latency`. An engine that fails (a
 * custom LLM's socket, a provider down after its retries) ends the call with `error` and
 * the failure's reason rather than leaving it ongoing; undefined then.
 */
async function timedTurn(call: CallItem, event: Parameters<typeof agentTurn>[1]): Promise<{ result: TurnResult; ms: number } | undefined> {
  const started = performance.now();
  try {
    const result = await agentTurn(call.engine.conversation, event);
    return { result, ms: Math.round(performance.now() - started) };
  } catch (error) {
    const reason = (error as { disconnection_reason?: DisconnectionReason }).disconnection_reason ?? 'error_unknown';
    logger.warn('the response engine failed; ending the call', { call_id: call.call_id, error: (error as Error).message, reason });
    await finishCall(call, { status: 'error', reason });
    return undefined;
  }
}

type TranscriptFields = Pick<CallItem, 'transcript' | 'transcript_object' | 'transcript_with_tool_calls'>;

/**
 * The call's three transcript fields with `events` appended: every event goes to
 * transcript_with_tool_calls, the agent's and user's lines (with their word timings, when
 * given) to transcript_object and the text transcript. Sandbox turns and LiveKit worker
 * reports both record through it.
 */
export function appendTranscript(call: CallItem, events: readonly (TranscriptEvent | Record<string, unknown>)[]): TranscriptFields {
  const objects = [...(call.transcript_object ?? [])];
  const withTools = [...(call.transcript_with_tool_calls ?? [])];
  for (const event of events as Record<string, unknown>[]) {
    withTools.push(event as never);
    if ((event.role === 'agent' || event.role === 'user') && typeof event.content === 'string') {
      objects.push({ role: event.role, content: event.content, words: (event.words as unknown[] | undefined) ?? [] } as never);
    }
  }
  return {
    transcript_object: objects,
    transcript_with_tool_calls: withTools,
    transcript: objects.map((entry) => `${entry.role === 'agent' ? 'Agent' : 'User'}: ${entry.content}`).join('\n') + (objects.length ? '\n' : ''),
  };
}

/** Stores the turn (transcript, the engine's state) if the call is still where the step found it. */
async function recordTurn(
  call: CallItem,
  turn: { result: TurnResult; ms: number },
  seq: { guard: number; next: number; userLine?: string },
): Promise<CallItem | undefined> {
  // The runtime's events hold the user's line first; an engine that reports none gets the plain lines.
  const events: TranscriptEvent[] = turn.result.events.length
    ? turn.result.events
    : [
        ...(seq.userLine !== undefined ? [{ role: 'user', content: seq.userLine } as TranscriptEvent] : []),
        ...turn.result.utterances.map((content) => ({ role: 'agent', content }) as TranscriptEvent),
      ];
  const transcript = appendTranscript(call, events);
  const nowMs = Date.now();
  const sendUpdate = nowMs - (call.engine.transcript_sent_at ?? 0) >= TRANSCRIPT_UPDATE_MS;
  const engine: EngineState = {
    ...call.engine,
    conversation: turn.result.state,
    step_seq: seq.next,
    turn_ms: [...(call.engine.turn_ms ?? []), turn.ms],
    ...(sendUpdate ? { transcript_sent_at: nowMs } : {}),
  };
  const updated = await transitionCall(call.call_id, {
    from: ['ongoing'],
    guard: { field: 'step_seq', equals: seq.guard },
    set: { ...transcript, engine },
  });
  if (updated && sendUpdate) await sendCallEvent(updated, 'transcript_updated');
  return updated;
}

function stepFor(call: CallItem, step: CallStepMessage['step'], seq: number): CallStepMessage {
  return { call_id: call.call_id, workspace_id: call.workspace_id, step, seq };
}

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
}

/**
 * Ends a call that has not ended: the one path every end takes (hang-up, agent end,
 * transfer, stop, a dial that never connected, nobody joining, an engine failure).
 * Answers the ended call, or undefined when it had already ended.
 */
export async function finishCall(call: CallItem, finish: Finish): Promise<CallItem | undefined> {
  const nowMs = Date.now();
  const durationMs = call.start_timestamp ? Math.max(0, nowMs - call.start_timestamp) : 0;
  const cost = callCost({ durationMs, phone: call.call_type === 'phone_call', burst: call.concurrency_burst === true, batchDial: call.engine.batch?.dialled === true });
  const llm = latencyOf(call.engine.turn_ms ?? []);
  const inVoicemail = finish.reason === 'voicemail_reached';
  const ended = await transitionCall(call.call_id, {
    from: ['registered', 'ongoing'],
    to: finish.status,
    set: {
      ...finish.set,
      end_timestamp: nowMs,
      duration_ms: durationMs,
      disconnection_reason: finish.reason,
      call_cost: cost,
      combined_cost: cost.combined_cost,
      ...(llm ? { latency: { llm, e2e: llm }, e2e_latency_p50: llm.p50 } : {}),
      ...(inVoicemail ? { in_voicemail: true } : {}),
      engine: { ...call.engine, analysis_seq: 0 },
    },
  });
  if (!ended) return undefined;
  if (call.engine.slot) await releaseSlot(call.workspace_id, call.call_id);
  closeConversation(call.engine.conversation);
  await endMedia(call.call_id).catch((error) => logger.warn('ending the call media failed', { error, call_id: call.call_id }));
  await sendCallEvent(ended, 'call_ended');
  if (finish.status === 'ended') await scheduleStep(stepFor(ended, 'analyze', 0), Date.now());
  return ended;
}

/** Post-call analysis of an ended call; `seq` guards against a repeated step. */
export async function analyze(call: CallItem, seq: number): Promise<CallItem | undefined> {
  if (call.call_status !== 'ended' || call.engine.analysis_seq !== seq) return undefined;
  const analysis = await analyzeCall({
    workspaceId: call.workspace_id,
    agentId: call.agent_id,
    agentVersion: call.agent_version,
    transcript: (call.transcript_object ?? []).map(({ role, content }) => ({ role, content })),
    inVoicemail: call.disconnection_reason === 'voicemail_reached',
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
    },
  });
  if (updated) await sendCallEvent(updated, 'call_analyzed');
  return updated;
}

/** Queues a fresh analysis of an ended call (rerun-call-analysis, backfill). */
export async function queueAnalysis(call: CallItem): Promise<void> {
  await scheduleStep(stepFor(call, 'analyze', call.engine.analysis_seq ?? 0), Date.now());
}

export async function scheduleFirstStep(call: CallItem, step: 'dial' | 'join' | 'join_timeout', dueAtMs: number): Promise<void> {
  await scheduleStep(stepFor(call, step, 0), dueAtMs);
}
