import { ApiError } from '../../platform/errors.ts';
import { logger } from '../../platform/logger.ts';
import { canonicalE164 } from '../../platform/telephony/phone.ts';
import { sipTransportProblem } from '../../platform/telephony/sip-uri.ts';
import { composeMessage, noteToAgent, type TransferAsk, type TransferOptions } from '../engine/agent-runtime.ts';
import { sendCallEvent } from '../engine/call-webhooks.ts';
import { finishCall } from '../engine/finish.ts';
import { dialsTransferLeg, endMedia, removeTransferTarget, sendLiveControl, setConsultHearing, transferCall, type TransferOutcome } from '../engine/media.ts';
import { SANDBOX_LINE_GAP_MS, scheduleStep, stepFor } from '../engine/schedule.ts';
import { findCallItem, transitionCall, type CallItem, type TransferState } from '../store.ts';
import { transcriptAppend, withTranscript } from '../transcript.ts';
import { consultInSandbox, staticHandoff } from './agentic.ts';

/*
 * Transfers (docs/calls.md, Transfers): cold, warm and agentic (a warm transfer whose
 * destination is consulted first, agentic.ts), from the ask to the transferred leg's end.
 *
 *   ongoing ──transfer asked──▶ dialing ──answered──▶ bridged ──leg ends──▶ ended
 *                                  └──busy, no answer, failed, error──▶ cancelled (the call goes on)
 *
 * Each change is a write conditional on the call's `transfer_seq`, which the step that
 * makes it carries, so a step delivered twice (or late) changes nothing and every
 * transfer_* event is sent once.
 */

/** A sandbox transfer's destination rings this long before it answers (or the transfer fails). */
const SANDBOX_TRANSFER_RING_MS = 1000;
/** A bridged sandbox warm transfer: the caller and the destination talk this long, then transfer_ended. */
const SANDBOX_TRANSFER_LEG_MS = 2000;

/** The destination as the media layer takes it: an E.164 number or a `sip:` URI; undefined when it is neither. */
function transferDestination(raw: string): string | undefined {
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
export function transferStart(call: CallItem, request: TransferAsk): Record<string, unknown> | undefined {
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
export async function transferStarted(call: CallItem): Promise<void> {
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
type NotBridgedReason = Extract<TransferOutcome, { bridged: false }>['reason'] | 'transfer_declined' | 'transfer_timeout';

const NOT_BRIDGED: Record<NotBridgedReason, string> = {
  dial_busy: 'the line was busy',
  dial_no_answer: 'nobody answered',
  dial_failed: 'the call could not be placed',
  transfer_declined: 'the person you transferred to declined the call',
  transfer_timeout: 'the person you transferred to did not decide in time',
};

/** What the agent is told when its transfer did not go through. */
function transferCancelledNote(destination: string, reason: NotBridgedReason): string {
  return `The transfer to ${destination} did not go through (${NOT_BRIDGED[reason]}): the caller is still on the line with you. Tell them, and carry on helping them.`;
}

/** The `transfer` step: the media layer transfers, then the outcome is applied once. */
export async function transferStep(call: CallItem, seq: number): Promise<void> {
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
 * (transfers/agentic.ts); on LiveKit the worker is told (`transfer_consult`) and reports
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
export async function consultTimedOut(call: CallItem, seq: number): Promise<void> {
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
      // Written under the transfer counter's condition, so the count read is the count stored.
      transfers_failed: (call.transfers_failed ?? 0) + 1,
      ...(sandboxConversation ? { engine: { ...call.engine, conversation: noteToAgent(call.engine.conversation, note) } } : {}),
    },
    // The consultation is in transcript_with_tool_calls only: the caller did not hear it.
    ...(consultation.length ? { append: transcriptAppend(call, consultation, { heard: false }) } : {}),
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
  const lines = [...transcriptAppend(call, consultation, { heard: false }).lines, ...transcriptAppend(call, handoffLine).lines];
  const { phase: _phase, ...ringing } = state;
  const bridged = await transitionCall(call.call_id, {
    from: ['ongoing'],
    guard: { field: 'transfer_seq', equals: seq },
    set: {
      transfer_seq: seq + 1,
      transfer_state: { ...ringing, status: 'bridged' } satisfies TransferState,
    },
    ...(lines.length ? { append: { ...transcriptAppend(call, []), lines } } : {}),
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
  if (!ended) {
    // Something else ended the call between the bridge and this end (the caller hung up, a
    // scripted callee's last line): its end closed the room, and the transferred leg with it.
    const now = await findCallItem(bridged.call_id);
    if (now) await endTransfer(now, seq + 1);
    return true;
  }
  if (!legInRoom) {
    // A cold transfer hands the caller's leg to the carrier with the REFER: Parley sees no more of it.
    await endTransfer(ended, seq + 1);
  } else if (ended.engine.media === 'sandbox') {
    await scheduleStep(stepFor(ended, 'transfer_end', seq + 1), Date.now() + SANDBOX_TRANSFER_LEG_MS);
  }
  // A leg in the room on LiveKit ends when either party leaves it (live/events.ts).
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
