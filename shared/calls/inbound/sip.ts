import { newTimeOrderedId } from '../../platform/ids.ts';
import { logger } from '../../platform/logger.ts';
import type { MediaWebhookEvent } from '../../vendors/media/index.ts';
import { finishCall } from '../engine/finish.ts';
import { receiveInboundCall } from './inbound.ts';
import { dispatchAgentInto, endMedia, forwardCaller } from '../engine/media.ts';
import { queueInboundSipCaller, type InboundSipMessage } from '../engine/schedule.ts';
import { mergeSipLeg, reportOfParticipant, webhookTime } from '../artifacts/sip-leg.ts';
import { claimMediaRoom, findCallItem, mediaRoomEnd } from '../store.ts';

/*
 * An inbound phone call arriving through LiveKit's SIP service (docs/calls-media.md,
 * Inbound SIP). The carrier sends the INVITE to LiveKit; the deployment's inbound trunk
 * admits it and its dispatch rule (type `individual`, room prefix `inbound-`, no agent)
 * puts the caller in a fresh room. The caller's `participant_joined` webhook (kind `sip`)
 * brings it here:
 *   1. the room is claimed for a new call ID (a conditional put): a redelivered webhook
 *      finds the claim and changes nothing;
 *   2. `receiveInboundCall` runs the spec's eight steps with the dialled number
 *      (`sip.trunkPhoneNumber`), the caller (`sip.phoneNumber`) and the SIP headers LiveKit
 *      exposes as `sip.h.<name>` attributes;
 *   3. accepted: the agent worker is dispatched into the room (the call becomes ongoing by
 *      its `join` step); refused: the room is deleted (the caller hears the hang-up), or the
 *      caller is forwarded by SIP REFER to the number's fallback_number when no slot was free.
 */

/** The room prefix of the inbound dispatch rule: rooms named so carry a caller not yet admitted. */
const INBOUND_ROOM_PREFIX = 'inbound-';

/** LiveKit's attribute prefix for the INVITE's headers (`include_headers` on the inbound trunk). */
const HEADER_ATTRIBUTE = 'sip.h.';

export const isInboundRoom = (room: string): boolean => room.startsWith(INBOUND_ROOM_PREFIX);

/** How an inbound call whose caller hung up before the agent answered ends. */
export const CALLER_LEFT_BEFORE_ANSWER = { status: 'not_connected', reason: 'user_hangup' } as const;

/** The INVITE's headers as LiveKit exposes them on the participant (`sip.h.x-customer-id` → `x-customer-id`). */
function sipHeadersOf(attributes: Record<string, string>): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(attributes)) {
    if (name.startsWith(HEADER_ATTRIBUTE) && name.length > HEADER_ATTRIBUTE.length) headers[name.slice(HEADER_ATTRIBUTE.length)] = value;
  }
  return headers;
}

async function hangUp(room: string): Promise<void> {
  await endMedia(room).catch((error: unknown) => logger.warn('could not end a refused inbound room', { room, error }));
}

/**
 * A SIP caller joined an inbound room (the LiveKit webhook): claim the room for a new call ID
 * and queue its admission (admitInboundSipCaller) on the call-steps job, so the webhook answers
 * at once however long admission takes. Answers what happened (logs, tests).
 */
export async function receiveInboundSipCaller(event: MediaWebhookEvent): Promise<{ applied: string }> {
  const room = event.room!.name;
  const participant = event.participant!;
  const callId = newTimeOrderedId('call', Date.now());
  if (!(await claimMediaRoom(room, callId))) return { applied: 'ignored: room already handled' };
  if (!participant.attributes['sip.trunkPhoneNumber']) {
    await hangUp(room);
    return { applied: 'refused: the caller has no dialled number (sip.trunkPhoneNumber)' };
  }
  await queueInboundSipCaller({
    step: 'inbound_sip',
    call_id: callId,
    room,
    participant: { identity: participant.identity, attributes: participant.attributes },
    joined_at: webhookTime(event),
  });
  return { applied: 'queued' };
}

/**
 * Admits a queued inbound SIP caller: the spec's eight inbound steps, then the agent's
 * dispatch into the caller's room, or the caller forwarded or hung up. A redelivered message
 * whose call was already written does nothing (the call's own steps and webhooks take it on).
 */
export async function admitInboundSipCaller(message: InboundSipMessage): Promise<{ applied: string }> {
  const { call_id: callId, room, participant } = message;
  if (await findCallItem(callId)) return { applied: 'ignored: already admitted' };
  // The caller hung up before admission began (live/events.ts recorded it on the room's claim).
  if (await mediaRoomEnd(room)) {
    await hangUp(room);
    return { applied: 'ignored: the caller left before admission' };
  }
  const toNumber = participant.attributes['sip.trunkPhoneNumber'] ?? '';
  const fromNumber = participant.attributes['sip.phoneNumber'] ?? '';
  const headers = sipHeadersOf(participant.attributes);
  const outcome = await receiveInboundCall(
    { fromNumber, toNumber, ...(Object.keys(headers).length ? { sipHeaders: headers } : {}) },
    {
      callId,
      room,
      sipIdentity: participant.identity,
      // The caller's SIP leg as it joined (its sip.* attributes and callStatus), for the SIP trace.
      sipLeg: {
        ...mergeSipLeg(undefined, reportOfParticipant({ ...participant, sid: '', kind: 'sip' }, 'participant_joined', message.joined_at ?? Date.now())),
        rev: 1,
      },
    },
  );
  if (!outcome.accepted) {
    if (outcome.fallback_number) {
      try {
        await forwardCaller(room, participant.identity, outcome.fallback_number);
        return { applied: `forwarded: ${outcome.reason}` };
      } catch (error) {
        logger.warn('could not forward an inbound caller to fallback_number', { room, error });
      }
    }
    await hangUp(room);
    return { applied: `refused: ${outcome.reason}` };
  }
  // A call ended at once (no slot, no fallback) ended its room through finishCall already.
  if (outcome.call.call_status !== 'registered') return { applied: outcome.call.call_status };
  // The caller hung up while admission ran: the call (written now) ends at once and gives its
  // slot back. The webhook wrote the claim's mark before reading the call, and admission wrote
  // the call before reading the mark, so one of them always sees the other.
  if (await mediaRoomEnd(room)) {
    const call = await findCallItem(callId);
    if (call) await finishCall(call, CALLER_LEFT_BEFORE_ANSWER);
    return { applied: 'not_connected: the caller left during admission' };
  }
  try {
    await dispatchAgentInto(room, (await findCallItem(callId))!);
  } catch (error) {
    logger.error('the agent worker could not be dispatched to an inbound call; ending it', { call_id: callId, room, error });
    const call = await findCallItem(callId);
    if (call) await finishCall(call, { status: 'error', reason: 'error_unknown' });
    return { applied: 'error: the agent could not be dispatched' };
  }
  return { applied: 'inbound' };
}
