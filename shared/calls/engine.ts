import { recordCallCharge } from '../billing/index.ts';
import { config } from '../platform/config.ts';
import { ApiError } from '../platform/errors.ts';
import { loadOnce } from '../platform/lazy.ts';
import { logger } from '../platform/logger.ts';
import { canonicalE164 } from '../platform/telephony/phone.ts';
import { sipTransportProblem } from '../platform/telephony/sip-uri.ts';
import { agentTurn, analyzeCall, closeConversation, composeMessage, noteToAgent, openConversation, type TransferAsk, type TransferOptions, type TranscriptEvent, type TurnResult } from './agent-runtime.ts';
import { consultInSandbox, staticHandoff } from './agentic-transfer.ts';
import type * as DataStorage from './data-storage.ts';
import { sendCallEvent } from './call-webhooks.ts';
import { releaseSlot } from './concurrency.ts';
import { liveConversation, pendingSays } from './live-state.ts';
import { dialOut, dialsTransferLeg, endMedia, removeTransferTarget, sendLiveControl, setConsultHearing, transferCall, type TransferOutcome } from './media.ts';
import { callCost, type CallCost } from './pricing.ts';
import { recordSandboxCall, startRoomRecording } from './recordings.ts';
import { scheduleStep, type CallStepMessage } from './schedule.ts';
import { recordSipDial } from './sip-leg.ts';
import type { CallStatus, DisconnectionReason } from './schemas.ts';
import { findCallItem, mediaRoomEnd, roomOf, transitionCall, type CallItem, type EngineState, type TransferState } from './store.ts';
import type { WorkerLatency } from '../vendors/media/index.ts';
import { transcriptLines, withTranscript } from './transcript.ts';

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
 * sends call_ended; ended calls then get their analysis. Once the analysis has run (at once
 * for a call that did not end `ended`), the call's data storage setting is applied to what
 * it stores (data-storage.ts).
 */

/** The callee's lines when a sandbox call has no `metadata.sandbox_user_says`. */
export const DEFAULT_CALLEE_LINES = ['Hi, yes, this is a good time.', 'Can you tell me a bit more?', 'Okay, thank you. That is all for now.'];
/** Pause between the agent finishing and the callee's next line in a sandbox call. */
export const SANDBOX_LINE_GAP_MS = 1000;
/** A sandbox voicemail: the agent's message, then the line is dropped after this. */
const VOICEMAIL_MS = 1500;
/** transcript_updated at most this often (spec). */
export const TRANSCRIPT_UPDATE_MS = 3000;
/** A sandbox transfer's destination rings this long before it answers (or the transfer fails). */
export const SANDBOX_TRANSFER_RING_MS = 1000;
/** A bridged sandbox warm transfer: the caller and the destination talk this long, then transfer_ended. */
export const SANDBOX_TRANSFER_LEG_MS = 2000;

/**
 * data-storage.ts on its first use: it reaches scrubbing, which the calls function loads on
 * demand (on-demand.ts); the steps that need it come after a call's end.
 */
const dataStorageModule = loadOnce((): Promise<typeof DataStorage> => import('./data-storage.ts'));

/** Applies the call's data storage setting to what it stores, when it is due (data-storage.ts); answers the call as stored after. */
export async function applyCallDataStorage(workspaceId: string, callId: string): Promise<CallItem | undefined> {
  return (await dataStorageModule()).applyDataStorage(workspaceId, callId);
}

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
    case 'say':
      return sayNext(call);
    case 'hangup':
      // A scripted callee says every line before hanging up, however slow the turns were.
      if (
        call.call_status === 'ongoing' &&
        (call.engine.step_seq ?? 0) < (call.engine.sandbox?.user_lines.length ?? 0) &&
        !call.engine.sandbox?.voicemail &&
        !call.engine.sandbox?.unscripted
      ) {
        await scheduleStep(stepFor(call, 'hangup', 0), Date.now() + SANDBOX_LINE_GAP_MS);
        return;
      }
      await finishCall(call, {
        status: 'ended',
        // A callee who hangs up while on hold for a transfer cancels it.
        reason: call.engine.sandbox?.voicemail ? 'voicemail_reached' : call.transfer_state?.status === 'dialing' ? 'transfer_cancelled' : 'user_hangup',
      });
      return;
    case 'transfer':
      await transferStep(call, message.seq);
      return;
    case 'transfer_end':
      await endTransfer(call, message.seq);
      return;
    case 'transfer_timeout':
      await consultTimedOut(call, message.seq);
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
      // After the analysis (which reads the transcript), and again on a redelivered step, which finds it applied.
      await applyCallDataStorage(call.workspace_id, call.call_id);
      return;
    case 'data_storage':
      await applyCallDataStorage(call.workspace_id, call.call_id);
      return;
  }
}

async function dial(call: CallItem): Promise<void> {
  if (call.call_status !== 'registered') return;
  const outcome = await dialOut(call);
  // What LiveKit answered about the SIP leg (its call ID, or the SIP status that refused it), for the trace.
  await recordSipDial(call, outcome);
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
    // An inbound caller who hung up while admission ran (live-events.ts marked the dispatch
    // rule's room before reading the call): the call never starts. The mark is written before
    // the webhook reads the call, and read here before the call goes live, so a caller leaving
    // after this read finds the call ongoing and ends it as a hang-up.
    if (call.engine.room && (await mediaRoomEnd(call.engine.room))) {
      await finishCall(call, { status: 'not_connected', reason: 'user_hangup' });
      return;
    }
    // With a media server the agent worker holds the conversation and reports it (live-events.ts).
    const live = await transitionCall(call.call_id, { from: ['registered'], to: 'ongoing', set: { start_timestamp: nowMs } });
    if (!live) return;
    await sendCallEvent(live, 'call_started');
    await startRoomRecording(live);
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
    ...(call.engine.agent_override ? { overrides: call.engine.agent_override } : {}),
    canTransfer: call.call_type === 'phone_call',
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
  // The call's length is the callee's: the hang-up comes at start + call_ms whatever is said
  // (scheduled first, so an opening that transfers and is cancelled still ends in time).
  await scheduleStep(stepFor(afterOpening, 'hangup', 0), options.voicemail ? Date.now() + VOICEMAIL_MS : nowMs + sandbox.call_ms);
  if (await followThrough(afterOpening, opening.result)) return;
  if (options.voicemail) return;
  if (sandbox.user_lines.length > 0) await scheduleStep(stepFor(afterOpening, 'user', 0), Date.now() + SANDBOX_LINE_GAP_MS);
}

/** The sandbox callee says line `seq`; the agent answers. */
async function calleeSpeaks(call: CallItem, seq: number): Promise<void> {
  if (call.call_status !== 'ongoing' || call.engine.step_seq !== seq) return;
  if (call.transfer_state?.status === 'dialing') {
    // On hold while the transfer rings: the line waits (transferStep resumes it when cancelled).
    return;
  }
  const line = call.engine.sandbox?.user_lines[seq];
  if (line === undefined) return;
  // Taken over (live-control.ts): a person talks to the callee now; the agent says nothing.
  const turn = call.live_take_over
    ? { result: { events: [], utterances: [], state: call.engine.conversation } as unknown as TurnResult, ms: -1 }
    : await timedTurn(call, { type: 'user_said', text: line });
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
  // recordTurn started the transfer in the turn's own write (or refused it: the call goes on).
  if (turn.transfer) return call.transfer_state?.status === 'dialing' && call.transfer_state.started_seq === call.transfer_seq;
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
    // update-live-call's variables and override take effect from this turn (live-state.ts),
    // and the call's own data storage setting governs what it records (its retrieval).
    const state = liveConversation(call).state as Record<string, unknown> | undefined;
    const result = await agentTurn(call.data_storage_setting && state ? { ...state, data_storage_setting: call.data_storage_setting } : state, event);
    return { result, ms: Math.round(performance.now() - started) };
  } catch (error) {
    const reason = (error as { disconnection_reason?: DisconnectionReason }).disconnection_reason ?? 'error_unknown';
    logger.warn('the response engine failed; ending the call', { call_id: call.call_id, error: (error as Error).message, reason });
    await finishCall(call, { status: 'error', reason });
    return undefined;
  }
}

/**
 * What a write appends to the call's transcript (store.ts transitionCall): the events as
 * lines (transcript.ts), after the lines the step read, keyed by the first one's position
 * (the engine's writes are ordered by the call's conditions; a LiveKit worker's by its
 * report sequence). Sandbox turns, transfers' consultations and handoffs record through it.
 */
function appendTo(call: CallItem, events: readonly (TranscriptEvent | Record<string, unknown>)[], options: { heard?: boolean } = {}) {
  const after = call.line_count ?? 0;
  return { workspaceId: call.workspace_id, ordinal: after, after, lines: transcriptLines(events as Record<string, unknown>[], options) };
}

/** Writes of a turn or a supervisor-say that lost the call's line count to the other: each is tried again on the fresh call. */
const LINE_RACE_TRIES = 5;

/**
 * Stores the turn (transcript, the engine's state) if the call is still where the step found
 * it. A supervisor-say the sandbox said on its own meanwhile (sayNext) moved only the line
 * count: the turn is written after it.
 */
async function recordTurn(
  call: CallItem,
  turn: { result: TurnResult; ms: number },
  seq: { guard: number; next: number; userLine?: string },
): Promise<CallItem | undefined> {
  let current = call;
  for (let attempt = 1; ; attempt++) {
    const updated = await writeTurn(current, turn, seq);
    if (updated || attempt >= LINE_RACE_TRIES) return updated;
    const fresh = await findCallItem(call.call_id);
    const movedLinesOnly =
      fresh?.call_status === 'ongoing' && (fresh.engine.step_seq ?? 0) === seq.guard && (fresh.line_count ?? 0) !== (current.line_count ?? 0);
    if (!movedLinesOnly) return undefined;
    current = fresh;
  }
}

async function writeTurn(
  call: CallItem,
  turn: { result: TurnResult; ms: number },
  seq: { guard: number; next: number; userLine?: string },
): Promise<CallItem | undefined> {
  // The runtime's events hold the user's line first; an engine that reports none gets the plain lines.
  const events: TranscriptEvent[] = turn.result.events.length
    ? [...turn.result.events]
    : [
        ...(seq.userLine !== undefined ? [{ role: 'user', content: seq.userLine } as TranscriptEvent] : []),
        ...turn.result.utterances.map((content) => ({ role: 'agent', content }) as TranscriptEvent),
      ];
  // supervisor-say (live-control.ts) not said yet (sayNext said none of them): the agent says them first, after the callee's line.
  const says = call.live_take_over ? { texts: [], said: call.engine.live_said ?? 0 } : await pendingSays(call);
  if (says.texts.length) {
    const at = events[0]?.role === 'user' ? 1 : 0;
    events.splice(at, 0, ...says.texts.map((content) => ({ role: 'agent', content }) as TranscriptEvent));
  }
  const nowMs = Date.now();
  const sendUpdate = nowMs - (call.engine.transcript_sent_at ?? 0) >= TRANSCRIPT_UPDATE_MS;
  const engine: EngineState = {
    ...call.engine,
    ...liveConversation(call).engine,
    conversation: turn.result.state,
    step_seq: seq.next,
    // A taken-over call's lines have no agent turn to time (ms -1).
    turn_ms: turn.ms >= 0 ? [...(call.engine.turn_ms ?? []), turn.ms] : (call.engine.turn_ms ?? []),
    ...(says.texts.length ? { live_said: says.said } : {}),
    ...(sendUpdate ? { transcript_sent_at: nowMs } : {}),
  };
  // A transfer the agent asked for starts in the same write as its turn, so no step (a
  // hang-up) can come between the callee's line and the callee being on hold.
  const transfer = turn.result.transfer ? transferStart(call, turn.result.transfer) : undefined;
  const updated = await transitionCall(call.call_id, {
    from: ['ongoing'],
    guard: { field: 'step_seq', equals: seq.guard },
    append: appendTo(call, events),
    set: {
      engine,
      ...(transfer ?? {}),
      // The workspace's fallback model answered (reliability settings): shown on the call.
      ...(turn.result.state.llm_fallback ? { llm_fallback: turn.result.state.llm_fallback } : {}),
    },
  });
  if (updated && sendUpdate) await sendCallEvent(updated, 'transcript_updated');
  if (updated && transfer) await transferStarted(updated);
  return updated;
}

/**
 * supervisor-say in the sandbox (the `say` step live-control.ts schedules): the agent says
 * the pending texts at once, as the LiveKit worker does, instead of waiting for the callee's
 * next line (a silent callee has none). Written like a turn, guarded by the step sequence
 * and the line count, so it never interleaves with one: a turn that got in first said them
 * itself and leaves nothing here. While a transfer rings or is bridged the agent is not on
 * the line: the texts wait for its next turn.
 */
async function sayNext(first: CallItem): Promise<void> {
  let call: CallItem | undefined = first;
  for (let attempt = 1; call && attempt <= LINE_RACE_TRIES; attempt++) {
    if (call.call_status !== 'ongoing' || call.live_take_over || call.engine.media !== 'sandbox') return;
    if (call.transfer_state?.status === 'dialing' || call.transfer_state?.status === 'bridged') return;
    const says = await pendingSays(call);
    if (!says.texts.length) return;
    const nowMs = Date.now();
    const sendUpdate = nowMs - (call.engine.transcript_sent_at ?? 0) >= TRANSCRIPT_UPDATE_MS;
    const updated = await transitionCall(call.call_id, {
      from: ['ongoing'],
      guard: { field: 'step_seq', equals: call.engine.step_seq ?? 0 },
      append: appendTo(call, says.texts.map((content) => ({ role: 'agent', content }) as TranscriptEvent)),
      set: { engine: { ...call.engine, live_said: says.said, ...(sendUpdate ? { transcript_sent_at: nowMs } : {}) } },
    });
    if (updated) {
      if (sendUpdate) await sendCallEvent(updated, 'transcript_updated');
      return;
    }
    call = await findCallItem(first.call_id);
  }
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
  // A call a person took over (live-control.ts) ends `call_take_over`, whoever hung up.
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
      ...(ringing ? { transfer_seq: seq + 1, transfer_state: { ...ringing, status: 'cancelled', reason: finish.reason } satisfies TransferState } : {}),
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

// ---------------------------------------------------------------------------------------
// Transfers (docs/calls.md, Transfers)
//
//   ongoing ──transfer asked──▶ dialing ──answered──▶ bridged ──leg ends──▶ ended
//                                  └──busy, no answer, failed, error──▶ cancelled (the call goes on)
//
// Each change is a write conditional on the call's `transfer_seq`, which the step that
// makes it carries, so a step delivered twice (or late) changes nothing and every
// transfer_* event is sent once.

/** The destination as the media layer takes it: an E.164 number or a `sip:` URI; undefined when it is neither. */
export function transferDestination(raw: string): string | undefined {
  const value = raw.trim();
  if (/^sips?:[^\s@]+@[^\s]+$/i.test(value) || /^sips?:[^\s]+$/i.test(value)) {
    // `;transport=` is carried to the REFER's Refer-To and the warm dial: udp, tcp or tls only.
    return value.length <= 512 && sipTransportProblem(value) === undefined ? value : undefined;
  }
  // Models write numbers for people: `+1 (415) 555-0142` is the same E.164 number.
  return canonicalE164(value.replace(/^tel:/i, '').replace(/[\s().-]/g, '')) ?? undefined;
}

/**
 * A transfer the response engine (or the LiveKit agent worker) asked for: the call must be
 * an ongoing phone call with no transfer ringing. Sends transfer_started and queues the
 * dial (the `transfer` step). Answers 'refused' when nothing was started (a web call, a
 * destination that is neither E.164 nor a SIP URI, a transfer already ringing, a call that
 * ended): the call then goes on as it was.
 */
export async function startTransfer(call: CallItem, request: TransferAsk): Promise<'started' | 'refused'> {
  const fields = transferStart(call, request);
  if (!fields) return 'refused';
  const started = await transitionCall(call.call_id, {
    from: ['ongoing'],
    guard: { field: 'transfer_seq', equals: call.transfer_seq ?? 0 },
    set: fields,
  });
  if (!started) return 'refused';
  await transferStarted(started);
  return 'started';
}

/** The fields that start a transfer on this call, or undefined (logged) when it cannot start now. */
function transferStart(call: CallItem, request: TransferAsk): Record<string, unknown> | undefined {
  const why = transferRefusal(call, request.number);
  if (why) {
    logger.info('transfer refused; the call goes on', { call_id: call.call_id, reason: why });
    return undefined;
  }
  const destination = transferDestination(request.number)!;
  const seq = (call.transfer_seq ?? 0) + 1;
  // An agentic warm transfer is a warm one whose destination is consulted before the bridge.
  const kind = request.options?.agentic ? 'warm' : request.kind;
  const state: TransferState = {
    kind,
    destination,
    status: 'dialing',
    started_timestamp: Date.now(),
    started_seq: seq,
    ...(request.options && kind === 'warm' ? { options: request.options } : coldOptions(request.options)),
  };
  return { transfer_seq: seq, transfer_state: state, transfer_destination: destination };
}

/** What a cold transfer keeps of its option: ring time, mode, caller ID choice, SIP headers (hold music and handoffs are warm only). */
function coldOptions(options: TransferAsk['options']): { options?: TransferOptions } {
  if (!options) return {};
  const { ring_ms, cold_transfer_mode, show_transferee_as_caller, sip_headers } = options;
  const kept: TransferOptions = {
    ...(ring_ms !== undefined ? { ring_ms } : {}),
    ...(cold_transfer_mode ? { cold_transfer_mode } : {}),
    // Only a new INVITE can carry the user's caller ID; a REFER leaves it to the carrier.
    ...(show_transferee_as_caller !== undefined && cold_transfer_mode === 'sip_invite' ? { show_transferee_as_caller } : {}),
    ...(sip_headers ? { sip_headers } : {}),
  };
  return Object.keys(kept).length ? { options: kept } : {};
}

/** A transfer was written as started: transfer_started, and the dial queued (after the sandbox's ring). */
async function transferStarted(call: CallItem): Promise<void> {
  await sendCallEvent(call, 'transfer_started');
  const state = call.transfer_state;
  if (state?.kind === 'warm') {
    // The caller is on hold while the destination rings (and, agentic, while it is consulted):
    // the agent worker plays the hold music (the sandbox notes the message).
    await tellMedia(call, {
      type: 'transfer_hold',
      destination: state.destination,
      on_hold_music: state.options?.on_hold_music ?? 'none',
      ...(state.options?.custom_on_hold_music_asset_id ? { custom_on_hold_music_asset_id: state.options.custom_on_hold_music_asset_id } : {}),
      agentic: state.options?.agentic !== undefined,
    });
  }
  const ringMs = call.engine.media === 'sandbox' ? sandboxRingMs(call, state) : 0;
  await scheduleStep(stepFor(call, 'transfer', call.transfer_seq ?? 0), Date.now() + ringMs);
}

/** How long a sandbox destination rings: the call's sandbox ring time, cut to the option's transfer_ring_duration_ms. */
function sandboxRingMs(call: CallItem, state: TransferState | undefined): number {
  const ring = call.engine.sandbox?.transfer_ring_ms ?? SANDBOX_TRANSFER_RING_MS;
  const limit = state?.options?.ring_ms;
  return limit !== undefined ? Math.min(ring, limit) : ring;
}

/** A data message to the call's agent worker on LiveKit (the sandbox notes it): never fails the engine's step. */
async function tellMedia(call: CallItem, message: Record<string, unknown>): Promise<void> {
  await sendLiveControl(call, message).catch((error: unknown) =>
    logger.warn('telling the agent worker about the transfer failed', { call_id: call.call_id, type: message.type, error }),
  );
}

/** Why a transfer to `number` cannot start on this call now; undefined when it can. */
export function transferRefusal(call: CallItem, number: string): string | undefined {
  const destination = transferDestination(number);
  return call.call_type !== 'phone_call'
      ? 'only phone calls can be transferred'
      : call.call_status !== 'ongoing'
        ? `the call is ${call.call_status}`
        : call.transfer_state?.status === 'dialing' || call.transfer_state?.status === 'bridged'
          ? 'a transfer is already in progress'
          : /^sips?:/i.test(number.trim()) && sipTransportProblem(number)
            ? `${number.slice(0, 64)}: ${sipTransportProblem(number)}`
            : !destination
              ? `${number.slice(0, 64)} is neither an E.164 number nor a SIP URI`
              : undefined;
}

/** Why a transfer did not bridge: the dial's reason, or an agentic transfer's destination declining or not deciding in time. */
export type NotBridgedReason = Extract<TransferOutcome, { bridged: false }>['reason'] | 'transfer_declined' | 'transfer_timeout';

const NOT_BRIDGED: Record<NotBridgedReason, string> = {
  dial_busy: 'the line was busy',
  dial_no_answer: 'nobody answered',
  dial_failed: 'the call could not be placed',
  transfer_declined: 'the person you transferred to declined the call',
  transfer_timeout: 'the person you transferred to did not decide in time',
};

/** What the agent is told when its transfer did not go through. */
export function transferCancelledNote(destination: string, reason: NotBridgedReason): string {
  return `The transfer to ${destination} did not go through (${NOT_BRIDGED[reason]}): the caller is still on the line with you. Tell them, and carry on helping them.`;
}

/** The `transfer` step: the media layer transfers, then the outcome is applied once. */
async function transferStep(call: CallItem, seq: number): Promise<void> {
  const state = call.transfer_state;
  if (call.call_status !== 'ongoing' || call.transfer_seq !== seq || state?.status !== 'dialing' || state.phase === 'consulting') return;
  let outcome: TransferOutcome;
  // The sandbox destination rang longer than transfer_ring_duration_ms allows: nobody answered.
  const ringCut = call.engine.media === 'sandbox' && state.options?.ring_ms !== undefined && (call.engine.sandbox?.transfer_ring_ms ?? SANDBOX_TRANSFER_RING_MS) > state.options.ring_ms;
  try {
    outcome = ringCut ? { bridged: false, reason: 'dial_no_answer' } : await transferCall(call, state);
  } catch (error) {
    // The media server refused or did not answer: the transfer is cancelled, the call is not stuck in it.
    if (!(error instanceof ApiError)) throw error;
    logger.warn('the transfer failed at the media server; cancelling it', { call_id: call.call_id, error: error.message });
    outcome = { bridged: false, reason: 'dial_failed' };
  }
  if (!outcome.bridged) {
    await cancelTransfer(call, seq, outcome.reason, []);
    return;
  }
  if (state.options?.agentic) {
    await consultDestination(call, seq, outcome.participant_identity);
    return;
  }
  await bridgeTransfer(call, seq, []);
}

/**
 * An agentic warm transfer's destination answered: the mediator speaks to it first (the
 * caller stays on hold). In the sandbox the whole consultation runs here
 * (agentic-transfer.ts); on LiveKit the worker is told (`transfer_consult`) and reports
 * its decision (`transfer_decision`), and a `transfer_timeout` step applies
 * `action_on_timeout` if none came.
 */
async function consultDestination(call: CallItem, seq: number, participantIdentity: string): Promise<void> {
  const state = call.transfer_state!;
  const config = state.options!.agentic!;
  if (call.engine.media === 'sandbox') {
    const consultation = await consultInSandbox(await withTranscript(call), state);
    if (consultation.decision === 'bridge') await bridgeTransfer(call, seq, consultation.events);
    else await cancelTransfer(call, seq, consultation.timedOut ? 'transfer_timeout' : 'transfer_declined', consultation.events);
    return;
  }
  const consulting = await transitionCall(call.call_id, {
    from: ['ongoing'],
    guard: { field: 'transfer_seq', equals: seq },
    set: { transfer_seq: seq + 1, transfer_state: { ...state, phase: 'consulting' } satisfies TransferState },
  });
  if (!consulting) return;
  // The caller must not hear the consultation, nor the destination the caller, before the worker speaks.
  try {
    await setConsultHearing(consulting, state.destination, 'private');
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    logger.warn('the consultation could not be made private; cancelling the transfer', { call_id: call.call_id, error: error.message });
    await cancelTransfer(consulting, seq + 1, 'dial_failed', []);
    return;
  }
  await tellMedia(consulting, {
    type: 'transfer_consult',
    destination: state.destination,
    participant_identity: participantIdentity,
    ...(config.transfer_agent ? { transfer_agent: config.transfer_agent } : {}),
    action_on_timeout: config.action_on_timeout,
    transfer_timeout_ms: config.transfer_timeout_ms,
  });
  await scheduleStep(stepFor(consulting, 'transfer_timeout', seq + 1), Date.now() + config.transfer_timeout_ms);
}

/**
 * A track was published in the room while its consultation is private (the destination's
 * audio once its phone line is up, a track the worker added): the consultation's hearing is
 * applied again, so the new track is heard only by whom it may be. Answers whether it was.
 */
export async function keepConsultPrivate(call: CallItem): Promise<boolean> {
  const state = call.transfer_state;
  if (call.call_status !== 'ongoing' || state?.status !== 'dialing' || state.phase !== 'consulting') return false;
  await setConsultHearing(call, state.destination, 'private');
  return true;
}

/** After a consultation the caller hears the agent (and, bridged, the destination) again; a failure is logged, the decision stands. */
async function endConsultHearing(call: CallItem, destination: string): Promise<void> {
  await setConsultHearing(call, destination, 'open').catch((error: unknown) =>
    logger.warn('the caller could not be subscribed back after the consultation', { call_id: call.call_id, error }),
  );
}

/** The `transfer_timeout` step: a consultation still undecided is decided by `action_on_timeout`. */
async function consultTimedOut(call: CallItem, seq: number): Promise<void> {
  const state = call.transfer_state;
  if (call.call_status !== 'ongoing' || call.transfer_seq !== seq || state?.phase !== 'consulting') return;
  if (state.options?.agentic?.action_on_timeout === 'bridge_transfer') await bridgeTransfer(call, seq, []);
  else await cancelTransfer(call, seq, 'transfer_timeout', []);
}

/**
 * The LiveKit agent worker's decision for a consulted destination (its `transfer_decision`
 * report): applied once, only while the consultation is open. Answers whether it was.
 */
export async function decideTransfer(call: CallItem, decision: 'bridge' | 'cancel'): Promise<boolean> {
  const state = call.transfer_state;
  if (call.call_status !== 'ongoing' || state?.status !== 'dialing' || state.phase !== 'consulting') return false;
  const seq = call.transfer_seq ?? 0;
  return decision === 'bridge' ? bridgeTransfer(call, seq, []) : cancelTransfer(call, seq, 'transfer_declined', []);
}

/**
 * The transfer did not bridge: cancelled once (conditional on its counter), the agent told
 * (its turn ended on "Transferring…"): a sandbox agent's conversation gets a note its next
 * turn sees, in the same write; a LiveKit worker a data message. `consultation` are an
 * agentic transfer's entries for transcript_with_tool_calls.
 */
async function cancelTransfer(call: CallItem, seq: number, reason: NotBridgedReason, consultation: Record<string, unknown>[]): Promise<boolean> {
  const state = call.transfer_state!;
  const note = transferCancelledNote(state.destination, reason);
  const sandboxConversation = call.engine.media === 'sandbox' && call.engine.conversation !== undefined;
  const cancelled = await transitionCall(call.call_id, {
    from: ['ongoing'],
    guard: { field: 'transfer_seq', equals: seq },
    set: {
      transfer_seq: seq + 1,
      transfer_state: { ...state, status: 'cancelled', reason } satisfies TransferState,
      ...(sandboxConversation ? { engine: { ...call.engine, conversation: noteToAgent(call.engine.conversation, note) } } : {}),
    },
    // The consultation is in transcript_with_tool_calls only: the caller did not hear it.
    ...(consultation.length ? { append: appendTo(call, consultation, { heard: false }) } : {}),
    // transfer_destination names where a call was transferred (retell-sdk): a cancelled transfer took it nowhere.
    remove: ['transfer_destination'],
  });
  if (!cancelled) return false;
  await sendCallEvent(cancelled, 'transfer_cancelled');
  if (cancelled.engine.media === 'livekit') {
    // A consulted destination is still in the room: it leaves, the caller comes off hold.
    if (state.phase === 'consulting') {
      await removeTransferTarget(cancelled, state.destination);
      await endConsultHearing(cancelled, state.destination);
    }
    await tellMedia(cancelled, { type: 'transfer_cancelled', destination: state.destination, reason, note });
  }
  // The caller is back with the agent: a sandbox callee goes on with the script.
  const lines = cancelled.engine.sandbox?.user_lines ?? [];
  const next = cancelled.engine.step_seq ?? 0;
  if (cancelled.engine.media === 'sandbox' && next < lines.length) {
    await scheduleStep(stepFor(cancelled, 'user', next), Date.now() + SANDBOX_LINE_GAP_MS);
  }
  return true;
}

/**
 * The destination answered (and, agentic, accepted): bridged once, then the call ends (its
 * slot is released, its cost stops: the carrier bills the transferred leg). A warm
 * transfer's room stays up for the two parties, with the bridge cue and the public handoff
 * message (`transfer_bridge` to the worker; the sandbox records the message as the agent's
 * line, which both parties hear).
 */
async function bridgeTransfer(call: CallItem, seq: number, consultation: Record<string, unknown>[]): Promise<boolean> {
  const state = call.transfer_state!;
  const warm = state.kind === 'warm';
  const handoff = warm ? await publicHandoff(call) : undefined;
  const handoffLine = handoff !== undefined && call.engine.media === 'sandbox' ? [{ role: 'agent', content: handoff, words: [] }] : [];
  // The consultation in transcript_with_tool_calls only (the caller did not hear it), then the handoff both parties heard.
  const lines = [...appendTo(call, consultation, { heard: false }).lines, ...appendTo(call, handoffLine).lines];
  const { phase: _phase, ...ringing } = state;
  const bridged = await transitionCall(call.call_id, {
    from: ['ongoing'],
    guard: { field: 'transfer_seq', equals: seq },
    set: {
      transfer_seq: seq + 1,
      transfer_state: { ...ringing, status: 'bridged' } satisfies TransferState,
    },
    ...(lines.length ? { append: { ...appendTo(call, []), lines } } : {}),
  });
  if (!bridged) return false;
  await sendCallEvent(bridged, 'transfer_bridged');
  // A consulted destination and the caller hear each other (and the agent's handoff) from here on.
  if (state.phase === 'consulting' && bridged.engine.media === 'livekit') await endConsultHearing(bridged, state.destination);
  if (warm) {
    await tellMedia(bridged, {
      type: 'transfer_bridge',
      destination: state.destination,
      audio_cue: state.options?.enable_bridge_audio_cue !== false,
      ...(handoff !== undefined ? { public_handoff: handoff } : state.options?.public_handoff?.type === 'prompt' ? { public_handoff_prompt: state.options.public_handoff.prompt } : {}),
    });
  }
  // A warm transfer's leg, or a cold one dialled with sip_invite, is in the room: the room stays for the two parties.
  const legInRoom = dialsTransferLeg(state);
  const ended = await finishCall(bridged, { status: 'ended', reason: warm ? 'transfer_bridged' : 'call_transfer', keepMedia: legInRoom });
  if (!ended) return true;
  if (!legInRoom) {
    // A cold transfer hands the caller's leg to the carrier with the REFER: Parley sees no more of it.
    await endTransfer(ended, seq + 1);
  } else if (ended.engine.media === 'sandbox') {
    await scheduleStep(stepFor(ended, 'transfer_end', seq + 1), Date.now() + SANDBOX_TRANSFER_LEG_MS);
  }
  // A leg in the room on LiveKit ends when either party leaves it (live-events.ts).
  return true;
}

/**
 * The public handoff message said once bridged: a static one as written; a prompt-type one
 * composed by the agent's model in the sandbox (on LiveKit the worker composes it from the
 * prompt it is sent). Undefined when there is none or it could not be composed.
 */
async function publicHandoff(call: CallItem): Promise<string | undefined> {
  const options = call.transfer_state?.options;
  const text = staticHandoff(options);
  if (text !== undefined || options?.public_handoff?.type !== 'prompt') return text || undefined;
  if (call.engine.media !== 'sandbox' || !call.engine.conversation) return undefined;
  try {
    return (await composeMessage(call.engine.conversation, options.public_handoff.prompt)) || undefined;
  } catch (error) {
    logger.warn('composing the public handoff failed; bridging without it', { call_id: call.call_id, error: (error as Error).message });
    return undefined;
  }
}

/**
 * The transferred leg ended: stamps transfer_end_timestamp and sends transfer_ended once
 * (`seq` is the bridged transfer's counter). A warm transfer's room is closed, which hangs
 * up whoever is still on it.
 */
export async function endTransfer(call: CallItem, seq: number): Promise<CallItem | undefined> {
  const state = call.transfer_state;
  if (call.transfer_seq !== seq || state?.status !== 'bridged') return undefined;
  const ended = await transitionCall(call.call_id, {
    from: ['ended'],
    guard: { field: 'transfer_seq', equals: seq },
    set: { transfer_seq: seq + 1, transfer_state: { ...state, status: 'ended' } satisfies TransferState, transfer_end_timestamp: Date.now() },
  });
  if (!ended) return undefined;
  await sendCallEvent(ended, 'transfer_ended');
  if (dialsTransferLeg(state)) {
    await endMedia(call.call_id).catch((error) => logger.warn('ending the transferred leg failed', { error, call_id: call.call_id }));
  }
  return ended;
}
