import { config } from '../../platform/config.ts';
import { loadOnce } from '../../platform/lazy.ts';
import { logger } from '../../platform/logger.ts';
import { DEFAULT_RINGING_TIMEOUT_SECONDS, type DialStart } from '../../vendors/media/index.ts';
import { agentTurn, openConversation, type TranscriptEvent, type TurnResult } from './agent-runtime.ts';
import type * as DataStorage from '../artifacts/data-storage.ts';
import { sendCallEvent } from './call-webhooks.ts';
import { analyze, finishCall } from './finish.ts';
import { liveConversation, pendingSays } from '../live/state.ts';
import { consultTimedOut, endTransfer, transferStart, transferStarted, transferStep } from '../transfers/index.ts';
import { dialOut } from './media.ts';
import { startRoomRecording } from '../artifacts/recordings.ts';
import { SANDBOX_LINE_GAP_MS, scheduleStep, stepFor, type CallStepMessage } from './schedule.ts';
import { recordSipDial } from '../artifacts/sip-leg.ts';
import type { DisconnectionReason } from '../schemas.ts';
import { findCallItem, mediaRoomEnd, transitionCall, type CallItem, type EngineState } from '../store.ts';
import { transcriptAppend } from '../transcript.ts';

/*
 * The call state machine, one step at a time (docs/calls.md):
 *
 *   registered ──dial answered / web user joined──▶ ongoing ──hang-up, agent end, stop──▶ ended
 *        │                                            │
 *        └─ busy, no answer, failed, nobody joined ──▶ not_connected        (error: engine failure)
 *
 * An outbound dial does not wait for the callee (docs/calls-media.md, Dialling): the dial
 * step places it and returns; on LiveKit the callee's answer or failure arrives as events
 * (live/events.ts), and a dial-timeout step ends a call still ringing. The sandbox knows its
 * outcome at once and applies it through the same transitions.
 *
 * Every change is a conditional write on the state it leaves (store.ts transitionCall), so
 * a late or duplicated step (the queue delivers at least once) changes nothing. Ending a
 * call, whatever ends it, goes through `finishCall` (finish.ts): the one place that stamps the end,
 * prices the call, releases its concurrency slot (exactly once, by the slot record) and
 * sends call_ended; ended calls then get their analysis. Once the analysis has run (at once
 * for a call that did not end `ended`), the call's data storage setting is applied to what
 * it stores (data-storage.ts). A transfer the agent asks for runs its own steps
 * (../transfers/transfers.ts).
 */

/** The callee's lines when a sandbox call has no `metadata.sandbox_user_says`. */
export const DEFAULT_CALLEE_LINES = ['Hi, yes, this is a good time.', 'Can you tell me a bit more?', 'Okay, thank you. That is all for now.'];
/** A sandbox voicemail: the agent's message, then the line is dropped after this. */
const VOICEMAIL_MS = 1500;
/** transcript_updated at most this often (spec). */
export const TRANSCRIPT_UPDATE_MS = 3000;

/**
 * data-storage.ts on its first use: it reaches scrubbing, which the calls function loads on
 * demand (on-demand.ts); the steps that need it come after a call's end.
 */
const dataStorageModule = loadOnce((): Promise<typeof DataStorage> => import('../artifacts/data-storage.ts'));

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
    case 'dial_timeout':
      // Still ringing well past the ringing timeout: the answer or the failure never came (lost events).
      if (call.call_status !== 'registered' || call.dial_seq !== message.seq) return;
      await finishCall(call, { status: 'not_connected', reason: 'dial_no_answer' });
      return;
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

/**
 * The dial-timeout step comes this long after the ringing timeout: LiveKit's SIP service ends
 * an unanswered dial itself at the ringing timeout (the callee leaves: `dial_no_answer`), so
 * the step only ends calls whose events were lost.
 */
const DIAL_TIMEOUT_MARGIN_MS = 15_000;

/**
 * Places the outbound dial and returns: no function waits while the phone rings, so dials
 * per second are bounded by the numbers' CPS, not by the call-steps job's concurrency.
 * `dial_seq` is claimed first (a conditional write), so a redelivered step dials nothing.
 */
async function dial(call: CallItem): Promise<void> {
  if (call.call_status !== 'registered' || (call.dial_seq ?? 0) > 0) return;
  const placing = await transitionCall(call.call_id, { from: ['registered'], guard: { field: 'dial_seq', equals: 0 }, set: { dial_seq: 1 } });
  if (!placing) return;
  let outcome: DialStart;
  try {
    outcome = await dialOut(placing);
  } catch (error) {
    // Not placed (LiveKit unreachable, or refusing the request): the claim goes, so the step's retry dials.
    await transitionCall(call.call_id, { from: ['registered'], guard: { field: 'dial_seq', equals: 1 }, set: { dial_seq: 0 } });
    throw error;
  }
  // What LiveKit answered about the SIP leg (its call ID, or the SIP status that refused it), for the trace.
  await recordSipDial(placing, outcome);
  if ('placed' in outcome) {
    await scheduleStep(stepFor(placing, 'dial_timeout', 1), Date.now() + DEFAULT_RINGING_TIMEOUT_SECONDS * 1000 + DIAL_TIMEOUT_MARGIN_MS);
    return;
  }
  if (!outcome.connected) {
    await finishCall(placing, { status: 'not_connected', reason: outcome.disconnection_reason });
    return;
  }
  await answer(placing, { voicemail: outcome.voicemail });
}

/** The callee (or the web user) is on the line: the call is ongoing and the agent speaks first. */
export async function answer(call: CallItem, options: { voicemail?: boolean }): Promise<void> {
  if (call.call_status !== 'registered') return;
  const nowMs = Date.now();
  if (call.engine.media === 'livekit') {
    // An inbound caller who hung up while admission ran (live/events.ts marked the dispatch
    // rule's room before reading the call): the call never starts. The mark is written before
    // the webhook reads the call, and read here before the call goes live, so a caller leaving
    // after this read finds the call ongoing and ends it as a hang-up.
    if (call.engine.room && (await mediaRoomEnd(call.engine.room))) {
      await finishCall(call, { status: 'not_connected', reason: 'user_hangup' });
      return;
    }
    // With a media server the agent worker holds the conversation and reports it (live/events.ts).
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
  // Taken over (live/control.ts): a person talks to the callee now; the agent says nothing.
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
    // update-live-call's variables and override take effect from this turn (live/state.ts),
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
  // supervisor-say (live/control.ts) not said yet (sayNext said none of them): the agent says them first, after the callee's line.
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
    append: transcriptAppend(call, events),
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
 * supervisor-say in the sandbox (the `say` step live/control.ts schedules): the agent says
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
      append: transcriptAppend(call, says.texts.map((content) => ({ role: 'agent', content }) as TranscriptEvent)),
      set: { engine: { ...call.engine, live_said: says.said, ...(sendUpdate ? { transcript_sent_at: nowMs } : {}) } },
    });
    if (updated) {
      if (sendUpdate) await sendCallEvent(updated, 'transcript_updated');
      return;
    }
    call = await findCallItem(first.call_id);
  }
}
