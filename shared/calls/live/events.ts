import { notFound, conflict, unprocessable, Unauthorized } from '../../platform/errors.ts';
import { countAddress } from '../../platform/auth/gate.ts';
import { logger } from '../../platform/logger.ts';
import { CALLEE_IDENTITY, dialFailureOfDisconnect, verifyMediaWebhook, type MediaWebhookEvent, type WorkerEvent } from '../../vendors/media/index.ts';
import { transferOptions } from '../engine/agent-runtime.ts';
import { sendCallEvent } from '../engine/call-webhooks.ts';
import { answer, TRANSCRIPT_UPDATE_MS } from '../engine/engine.ts';
import { finishCall } from '../engine/finish.ts';
import { decideTransfer, endTransfer, keepConsultPrivate, startTransfer, transferRefusal } from '../transfers/index.ts';
import { CALLER_LEFT_BEFORE_ANSWER, isInboundRoom, receiveInboundSipCaller } from '../inbound/sip.ts';
import { dispatchAgentInto, endMedia } from '../engine/media.ts';
import { finishRoomRecording, startRoomRecording } from '../artifacts/recordings.ts';
import { recordCalleeAnswered, recordSipWebhook, webhookTime } from '../artifacts/sip-leg.ts';
import { callOfMediaRoom, findCallItem, LinesAlreadyWritten, markMediaRoomEnded, transitionCall, type CallItem, type EngineState } from '../store.ts';
import { transcriptLines } from '../transcript.ts';
import { assertWorkerToken } from '../worker-retrieval.ts';

/*
 * A call on LiveKit follows two event sources (docs/calls-media.md):
 * - LiveKit's webhooks (`POST /livekit/webhook`, signed with the API key): the web user
 *   joining, or the dialled callee reported `active`, makes the call ongoing; the callee
 *   leaving before that is the dial's failure; the last human leaving, or the room finishing,
 *   ends it;
 * - the agent worker's reports (`POST /internal/calls/{call_id}/events`, a per-call token):
 *   the dialled callee's answer (which LiveKit sends no webhook for), transcript, tool
 *   calls, and the end with its reason. Each report carries a sequence.
 *   Transcript and tool-call reports are lines keyed by it (line-store.ts): a retried or
 *   duplicated report finds its lines written and writes nothing, and a late one takes its
 *   place in the transcript by its sequence. A report that changes the call's state (an
 *   end, a transfer, a transfer decision) changes it only above the last one applied.
 */

/** Participants that are the human side of a call (not the agent worker, not a listener). */
const isHuman = (participant: { kind?: string; identity?: string } | undefined) =>
  !!participant && (participant.kind === 'sip' || participant.kind === 'standard') && !participant.identity?.startsWith('listener');

const isSipCaller = (participant: { kind?: string } | undefined) => participant?.kind === 'sip';

/** The agent worker (LiveKit Agents joins a room as an `agent` participant). */
const isAgentWorker = (participant: { kind?: string } | undefined) => participant?.kind === 'agent';

/** A SIP participant LiveKit is still dialling (`sip.callStatus` dialing or ringing): not on the line yet. */
const isStillDialling = (participant: { attributes?: Record<string, string> } | undefined) =>
  participant?.attributes?.['sip.callStatus'] === 'dialing' || participant?.attributes?.['sip.callStatus'] === 'ringing';

/**
 * A call Parley dials (engine.ts `dial`), and the SIP participant that dial placed: its answer
 * and its failure are the dial's outcome. A registered call's SIP leg and an inbound caller
 * are not dialled.
 */
const isDialled = (call: CallItem) => call.call_type === 'phone_call' && call.direction === 'outbound' && call.engine.origin !== 'register-phone-call';
const isDialledCallee = (call: CallItem, participant: MediaWebhookEvent['participant']) =>
  isDialled(call) && participant?.kind === 'sip' && participant.identity === CALLEE_IDENTITY;

/** In an inbound room: the caller hung up (the human SIP party leaving, not a transfer target or a listener), or the room is gone. */
const callerLeft = (event: MediaWebhookEvent) =>
  event.event === 'room_finished' || (event.event === 'participant_left' && isHuman(event.participant) && !event.participant?.identity?.startsWith('transfer-'));

/** Applies one LiveKit webhook; answers what it did (for the log and tests). */
export async function receiveMediaWebhook(rawBody: string, authorization: string | undefined, sourceIp: string): Promise<{ applied: string }> {
  const event = await verifyMediaWebhook(rawBody, authorization).catch(async (error: unknown) => {
    // A refused signature is a failed authentication: counted in its address's window (429 over it).
    if (error instanceof Unauthorized) Object.assign(error.headers, await countAddress(sourceIp));
    throw error;
  });
  // A recording's end (LiveKit Egress names the room, which is the call).
  if (event.event === 'egress_ended' && event.egress) {
    const egressRoom = event.egress.room_name;
    const callId = isInboundRoom(egressRoom) ? await callOfMediaRoom(egressRoom) : egressRoom;
    return { applied: callId ? await finishRoomRecording(callId, event.egress) : 'ignored: no call for this room' };
  }
  const room = event.room?.name;
  if (!room) return { applied: 'ignored: no call for this room' };
  // A caller in an inbound dispatch rule's room: inbound admission (inbound/sip.ts).
  if (event.event === 'participant_joined' && isSipCaller(event.participant) && isInboundRoom(room)) {
    return receiveInboundSipCaller(event);
  }
  // An inbound caller leaving (or the room finishing) is first recorded on the room's claim,
  // then the call is read: admission writes the call, then reads the claim (inbound/sip.ts), so
  // whichever comes second sees the other, and a caller who hangs up during admission (the
  // call_inbound webhook, the pre-call workflow, the inbound queue) is never lost.
  const callerGone = isInboundRoom(room) && callerLeft(event);
  const callId = !isInboundRoom(room)
    ? room
    : callerGone
      ? await markMediaRoomEnded(room, { ended_timestamp: webhookTime(event), ended_by: event.event })
      : await callOfMediaRoom(room);
  const call = callId ? await findCallItem(callId) : undefined;
  if (!call && callId && callerGone) return { applied: 'recorded: the caller left before the call was admitted' };
  if (!call) {
    // A SIP caller in a room of no call (a stale or made-up registered call ID): hang up.
    if (event.event === 'participant_joined' && isSipCaller(event.participant)) {
      await endMedia(room).catch((error: unknown) => logger.warn('could not end a room of no call', { room, error }));
      return { applied: 'removed: no call for this room' };
    }
    return { applied: 'ignored: no call for this room' };
  }
  // The phone party's SIP attributes and callStatus, for the call's SIP trace (sip-leg.ts).
  await recordSipWebhook(call, event);
  if (call.call_status === 'registered' && isDialledCallee(call, event.participant)) {
    const dialled = await dialProgressed(call, event);
    if (dialled) return dialled;
  }
  switch (event.event) {
    case 'participant_joined':
      if (!isHuman(event.participant) || call.call_status !== 'registered') return { applied: 'ignored' };
      if (call.engine.origin === 'register-phone-call') return registeredCallArrived(call, event.participant);
      // LiveKit puts a dialled callee in the room while it still rings: the dial's answer makes the call live.
      if (isSipCaller(event.participant) && isStillDialling(event.participant)) return { applied: 'ignored: not answered yet' };
      await answer(call, {});
      return { applied: 'ongoing' };
    case 'participant_left':
      if (isAgentWorker(event.participant)) return agentLeft(call);
      if (!isHuman(event.participant)) return { applied: 'ignored' };
      // A bridged warm transfer: either party leaving ends the transferred leg (and the room).
      if (call.call_status === 'ended' && call.transfer_state?.status === 'bridged') {
        await endTransfer(call, call.transfer_seq ?? 0);
        return { applied: 'transfer_ended' };
      }
      // An inbound caller admitted but not yet answered (the agent is being dispatched) hung up.
      if (call.call_status === 'registered' && callerGone) {
        await finishCall(call, CALLER_LEFT_BEFORE_ANSWER);
        return { applied: 'not_connected' };
      }
      if (call.call_status !== 'ongoing') return { applied: 'ignored' };
      // The target of a ringing warm transfer hanging up is the transfer's outcome, not the call's end.
      if (event.participant?.identity?.startsWith('transfer-')) {
        // A consulted destination (agentic warm transfer) hanging up declines: the caller goes back to the agent.
        if (call.transfer_state?.phase === 'consulting' && (await decideTransfer(call, 'cancel'))) return { applied: 'transfer_cancelled' };
        return { applied: 'ignored' };
      }
      // A caller who hangs up while on hold for a transfer cancels it.
      await finishCall(call, { status: 'ended', reason: call.transfer_state?.status === 'dialing' ? 'transfer_cancelled' : 'user_hangup' });
      return { applied: 'ended' };
    case 'room_finished':
      if (call.call_status === 'ended' && call.transfer_state?.status === 'bridged') {
        await endTransfer(call, call.transfer_seq ?? 0);
        return { applied: 'transfer_ended' };
      }
      if (call.call_status === 'ongoing') await finishCall(call, { status: 'ended', reason: 'user_hangup' });
      else if (call.call_status === 'registered') {
        await finishCall(
          call,
          callerGone ? CALLER_LEFT_BEFORE_ANSWER : { status: 'not_connected', reason: call.call_type === 'web_call' ? 'error_user_not_joined' : 'dial_failed' },
        );
      } else return { applied: 'ignored' };
      return { applied: 'finished' };
    case 'track_published':
      // LiveKit subscribes everyone to a new track: during a private consultation it is undone for whom may not hear it.
      return { applied: (await keepConsultPrivate(call)) ? 'consultation kept private' : 'ignored' };
    default:
      return { applied: 'ignored' };
  }
}

/**
 * A webhook about the dialled callee while the call still rings. Any of its participant
 * events carrying `sip.callStatus: active` is the answer (registered → ongoing through
 * `answer`, a conditional transition, so a redelivery changes nothing); leaving before that
 * is the dial's failure, its reason from LiveKit's DisconnectReason (the webhook carries no
 * SIP status). Anything else (dialing, ringing) is not news for the call: undefined.
 */
async function dialProgressed(call: CallItem, event: MediaWebhookEvent): Promise<{ applied: string } | undefined> {
  if (event.event === 'participant_left' || event.event === 'participant_connection_aborted') {
    const ended = await finishCall(call, { status: 'not_connected', reason: dialFailureOfDisconnect(event.participant?.disconnect_reason) });
    return { applied: ended ? 'not_connected' : 'ignored' };
  }
  if (event.participant?.attributes?.['sip.callStatus'] !== 'active') return undefined;
  await answer(call, {});
  return { applied: 'ongoing' };
}

/**
 * The SIP leg of a registered call (register-phone-call) arrived in its room (`sip:<call_id>@…`,
 * LiveKit's `callee` dispatch rule names the room after the dialled user): the call becomes
 * ongoing, then the agent worker is dispatched. The transition is conditional, so a
 * duplicated webhook dispatches nothing; a dispatch LiveKit refuses ends the call.
 */
async function registeredCallArrived(call: CallItem, participant: { kind?: string } | undefined): Promise<{ applied: string }> {
  if (!isSipCaller(participant)) return { applied: 'ignored: a registered call is joined by its SIP leg' };
  const live = await transitionCall(call.call_id, { from: ['registered'], to: 'ongoing', set: { start_timestamp: Date.now() } });
  if (!live) return { applied: 'ignored' };
  try {
    await dispatchAgentInto(call.call_id, live);
  } catch (error) {
    logger.error('the agent worker could not be dispatched to a registered call; ending it', { call_id: call.call_id, error });
    await finishCall(live, { status: 'error', reason: 'error_unknown' });
    return { applied: 'error: the agent could not be dispatched' };
  }
  await sendCallEvent(live, 'call_started');
  await startRoomRecording(live);
  return { applied: 'ongoing' };
}

/** One report of the agent worker for its call. */
export async function receiveWorkerEvent(callId: string, authorization: string | undefined, sourceIp: string, event: WorkerEvent): Promise<void> {
  await assertWorkerToken(callId, authorization, sourceIp);
  // A report that loses a race with another write to the call (a webhook, a stop) reads again.
  for (let attempt = 1; attempt <= 3; attempt++) {
    if (await applyWorkerEvent(callId, event)) return;
  }
  throw conflict(`Report ${event.sequence} of call ${callId} raced other changes; send it again`);
}

/** Answers false when the call changed under it (try again). */
async function applyWorkerEvent(callId: string, event: WorkerEvent): Promise<boolean> {
  const call = await findCallItem(callId);
  if (!call) throw notFound('Call not found');
  if (call.call_status !== 'ongoing' && call.call_status !== 'registered') throw conflict(`Call ${callId} has ended`);
  const applied = call.engine.report_seq ?? 0;
  if (event.event === 'transcript_updated' || event.event === 'tool_call_invoked' || event.event === 'tool_call_result') {
    return appendReport(call, event, applied);
  }
  if (event.sequence <= applied) return true;

  if (event.event === 'callee_answered') {
    // answer's transition is conditional on `registered`: a retried report, or one after the webhook's, changes nothing.
    if (call.call_status !== 'registered' || !isDialled(call)) return true;
    await recordCalleeAnswered(call, Math.min(event.timestamp, Date.now()));
    await answer(call, {});
    return true;
  }
  if (event.event === 'call_ended') {
    const marked = await transitionCall(callId, {
      from: ['registered', 'ongoing'],
      guard: { field: 'report_seq', equals: applied },
      set: { engine: { ...call.engine, report_seq: event.sequence } satisfies EngineState },
    });
    if (!marked) return false;
    await finishCall(marked, { status: 'ended', reason: event.disconnection_reason, ...(event.latency ? { latency: event.latency } : {}) });
    return true;
  }
  if (event.event === 'transfer_requested') {
    // A refused transfer (a web call, a bad destination, one already ringing) is not applied: 422, and the call goes on.
    const refusal = transferRefusal(call, event.destination);
    if (refusal) throw unprocessable(`Transfer refused: ${refusal}`);
    const marked = await transitionCall(callId, {
      from: ['ongoing'],
      guard: { field: 'report_seq', equals: applied },
      set: { engine: { ...call.engine, report_seq: event.sequence } satisfies EngineState },
    });
    if (!marked) return false;
    // Placeholders are filled as in the sandbox: the call's system variables, then its dynamic ones.
    const variables = {
      call_id: marked.call_id,
      ...(marked.from_number ? { from_number: marked.from_number } : {}),
      ...(marked.to_number ? { to_number: marked.to_number } : {}),
      ...(marked.retell_llm_dynamic_variables ?? {}),
    };
    const options = transferOptions(event.transfer_option ?? {}, variables, event.custom_sip_headers);
    const kind = event.transfer_option ? (event.transfer_option.type === 'cold_transfer' ? 'cold' : 'warm') : event.kind;
    await startTransfer(marked, { number: event.destination, kind, ...(options ? { options } : {}) });
    return true;
  }
  if (event.event === 'transfer_decision') {
    // Only while an agentic transfer's destination is being consulted: 409 otherwise, and nothing changes.
    if (call.transfer_state?.phase !== 'consulting' || call.transfer_state.status !== 'dialing') {
      throw conflict(`Call ${callId} has no transfer waiting for a decision`);
    }
    const marked = await transitionCall(callId, {
      from: ['ongoing'],
      guard: { field: 'report_seq', equals: applied },
      set: { engine: { ...call.engine, report_seq: event.sequence } satisfies EngineState },
    });
    if (!marked) return false;
    await decideTransfer(marked, event.decision);
    return true;
  }
  return true;
}

/**
 * A transcript or tool-call report: its entries are written as the call's lines at its
 * sequence, in one transaction with the call's line count (store.ts transitionCall), so the
 * call item keeps its size however long the call runs. Answers false when the call changed
 * under it (read again); a report whose lines are there already changes nothing.
 */
async function appendReport(
  call: CallItem,
  event: Extract<WorkerEvent, { event: 'transcript_updated' | 'tool_call_invoked' | 'tool_call_result' }>,
  applied: number,
): Promise<boolean> {
  const entries: Record<string, unknown>[] =
    event.event === 'transcript_updated'
      ? event.utterances.map((utterance) => ({ ...utterance }))
      : event.event === 'tool_call_invoked'
        ? [{ role: 'tool_call_invocation', tool_call_id: event.tool_call_id, name: event.name, arguments: event.arguments }]
        : [{ role: 'tool_call_result', tool_call_id: event.tool_call_id, content: event.content, successful: event.successful }];
  const nowMs = Date.now();
  const sendUpdate = event.event === 'transcript_updated' && nowMs - (call.engine.transcript_sent_at ?? 0) >= TRANSCRIPT_UPDATE_MS;
  let updated: CallItem | undefined;
  try {
    updated = await transitionCall(call.call_id, {
      from: ['registered', 'ongoing'],
      // During a private consultation the agent speaks to the destination: its lines are not the caller's transcript.
      append: { workspaceId: call.workspace_id, ordinal: event.sequence, after: call.line_count ?? 0, lines: transcriptLines(entries, { heard: call.transfer_state?.phase !== 'consulting' }) },
      // `engine` is written whole: only while no state-changing report moved it since the read.
      ...(sendUpdate ? { set: { engine: { ...call.engine, transcript_sent_at: nowMs } satisfies EngineState }, guard: { field: 'report_seq' as const, equals: applied } } : {}),
    });
  } catch (error) {
    if (error instanceof LinesAlreadyWritten) return true;
    throw error;
  }
  if (!updated) {
    logger.info('worker report lost a race; reading the call again', { call_id: call.call_id, sequence: event.sequence });
    return false;
  }
  if (sendUpdate) await sendCallEvent(updated, 'transcript_updated');
  return true;
}

/**
 * The agent worker left an ongoing call without reporting its end: its process died (a crash,
 * a task killed). The caller would otherwise wait in a silent room until they hang up, so the
 * call ends `error_unknown` (its room deleted, its slot released, `call_ended` sent). A worker
 * that reported `call_ended` leaves a call already ended; a take-over and a transfer being
 * dialled or bridged make it leave on purpose, and the call goes on.
 */
async function agentLeft(call: CallItem): Promise<{ applied: string }> {
  if (call.call_status !== 'ongoing' || call.live_take_over) return { applied: 'ignored' };
  if (call.transfer_state?.status === 'dialing' || call.transfer_state?.status === 'bridged') return { applied: 'ignored' };
  await finishCall(call, { status: 'ended', reason: 'error_unknown' });
  return { applied: 'ended: the agent left' };
}
