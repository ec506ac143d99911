import { workspaceReliability } from '../../account/index.ts';
import { trunkPassword, workspaceNumber } from '../../numbers/index.ts';
import { config } from '../../platform/config.ts';
import { logger } from '../../platform/logger.ts';
import { keys } from '../../platform/store/keys.ts';
import { ConditionFailed, table } from '../../platform/store/table.ts';
import {
  CALLEE_IDENTITY,
  HOLD_TRACK_NAME,
  LIVE_CONTROL_TOPIC,
  liveAccess,
  mediaAdapter,
  transferIdentity,
  webCallAccess as mediaWebCallAccess,
  type DialStart,
  type MediaCall,
  type OutboundTrunkConfig,
  type RecordingUpload,
  type TransferOutcome,
  type TrunkStore,
} from '../../vendors/media/index.ts';
import { roomOf, type CallItem } from '../store.ts';
import type { TransferOptions } from '../../conversation/index.ts';

/*
 * The calls domain's side of the media layer (shared/vendors/media): which one runs, the
 * table that keeps each number's outbound trunk, and the call fields the adapter needs.
 */

export type { TransferOutcome } from '../../vendors/media/index.ts';

export function mediaKind(): 'sandbox' | 'livekit' {
  return config.LIVEKIT_URL ? 'livekit' : 'sandbox';
}

/** Each number's outbound trunk at the media server, created once and kept (the first writer wins). */
const trunks: TrunkStore = {
  async get(number) {
    return (await table.get<{ trunk_id: string }>(keys.mediaTrunk(number)))?.trunk_id;
  },
  async putIfAbsent(number, trunkId) {
    try {
      await table.put({ Item: { ...keys.mediaTrunk(number), trunk_id: trunkId }, ConditionExpression: 'attribute_not_exists(pk)' });
      return trunkId;
    } catch (error) {
      if (!(error instanceof ConditionFailed)) throw error;
      return (await table.get<{ trunk_id: string }>(keys.mediaTrunk(number)))!.trunk_id;
    }
  },
};

const adapter = () => mediaAdapter({ trunks });

/** The call as the media layer (and the agent worker's dispatch metadata) sees it, with the workspace's fallbacks. */
async function mediaCall(call: CallItem, kind: Awaited<ReturnType<typeof adapter>>['kind']): Promise<MediaCall> {
  // The fallbacks are for the agent worker only: the sandbox's calls (every local call) skip the workspace read.
  const reliability = kind === 'livekit' ? await workspaceReliability(call.workspace_id) : undefined;
  const fallbacks = reliability !== undefined && (reliability.fallbackVoiceIds.length > 0 || reliability.fallbackLlmModel !== undefined);
  return {
    call_id: call.call_id,
    workspace_id: call.workspace_id,
    agent_id: call.agent_id,
    agent_version: call.agent_version,
    call_type: call.call_type,
    direction: call.direction ?? null,
    from_number: call.from_number ?? null,
    to_number: call.to_number ?? null,
    dynamic_variables: call.retell_llm_dynamic_variables ?? {},
    ...(call.engine.agent_override ? { agent_override: call.engine.agent_override } : {}),
    ...(fallbacks ? { reliability: { fallback_voice_ids: reliability.fallbackVoiceIds, fallback_llm_model: reliability.fallbackLlmModel ?? null } } : {}),
  } as MediaCall;
}

/** The room (named after the call) and the agent worker's dispatch; a no-op in the sandbox. */
export async function startMedia(call: CallItem): Promise<void> {
  const media = await adapter();
  await media.startCall(await mediaCall(call, media.kind));
}

/** Starts the media server's recording of the call's room; answers the egress ID. */
export async function recordRoom(call: CallItem, upload: RecordingUpload): Promise<string> {
  return (await adapter()).recordRoom(roomOf(call), upload);
}

/** The from number's trunk, for dials and warm transfers over it. */
async function trunkOf(call: CallItem): Promise<OutboundTrunkConfig> {
  const number = call.from_number ? await workspaceNumber(call.workspace_id, call.from_number) : undefined;
  return {
    address: number?.termination_uri ?? config.SIP_HOST,
    transport: (number?.transport?.toUpperCase() as OutboundTrunkConfig['transport']) ?? undefined,
    auth_username: number?.auth_username,
    auth_password: number ? await trunkPassword(number) : undefined,
  };
}

/** Places the dial of the callee over the from-number's trunk (LiveKit: placed, not answered), or plays the sandbox's outcome. */
export async function dialOut(call: CallItem): Promise<DialStart> {
  const media = await adapter();
  if (media.kind === 'livekit') await media.startCall(await mediaCall(call, media.kind));
  return media.dialOut({
    call_id: call.call_id,
    from_number: call.from_number ?? '',
    to_number: call.to_number ?? '',
    trunk: await trunkOf(call),
    sip_headers: (call as { custom_sip_headers?: Record<string, string> }).custom_sip_headers,
  });
}

/**
 * Transfers the call's phone party to `destination`: cold, a SIP REFER of the callee (an
 * outbound call's `callee`, an inbound caller's SIP identity; a `sip:` URI's `;transport=`
 * goes with it in the Refer-To); warm, the destination dialled into the room over the from
 * number's trunk (identity `transfer-<number>`; a `sip:` URI at its own host and transport),
 * ringing at most the option's `transfer_ring_duration_ms`.
 */
/**
 * Transfers the call's phone party. A cold transfer REFERs it (`sip_refer`, the default);
 * a warm one, or a cold one in `sip_invite` mode, dials the destination into the room over
 * the call's number of the workspace (its trunk), showing that number as the caller ID, or
 * the user's with `show_transferee_as_caller`. The tool's custom SIP headers go on the
 * REFER or the INVITE.
 */
export async function transferCall(call: CallItem, transfer: { kind: 'cold' | 'warm'; destination: string; options?: TransferOptions }): Promise<TransferOutcome> {
  const media = await adapter();
  const options = transfer.options;
  const headers = options?.sip_headers ? { sip_headers: options.sip_headers } : {};
  if (!dialsTransferLeg(transfer)) {
    return media.transfer({
      kind: 'cold',
      call_id: roomOf(call),
      participant_identity: call.engine.sip_identity ?? CALLEE_IDENTITY,
      to: transfer.destination,
      ...headers,
    });
  }
  const inbound = call.direction === 'inbound';
  // The user: the caller of an inbound call, the called party of an outbound one.
  const userNumber = inbound ? call.from_number : call.to_number;
  const ringMs = options?.ring_ms;
  return media.transfer({
    kind: 'warm',
    call_id: roomOf(call),
    // The trunk (and, by default, the caller ID the destination sees) is the call's own number of the workspace.
    from_number: (inbound ? call.to_number : call.from_number) ?? '',
    ...(options?.show_transferee_as_caller && userNumber ? { caller_id: userNumber } : {}),
    to_number: transfer.destination,
    trunk: await trunkOf(inbound ? { ...call, from_number: call.to_number } : call),
    ...headers,
    ...(ringMs !== undefined ? { ringing_timeout_seconds: Math.max(1, Math.ceil(ringMs / 1000)) } : {}),
  });
}

/** Whether a transfer dials a new leg into the room (warm, or cold in `sip_invite` mode) rather than REFERring the caller's. */
export function dialsTransferLeg(transfer: { kind: 'cold' | 'warm'; options?: TransferOptions }): boolean {
  return transfer.kind === 'warm' || transfer.options?.cold_transfer_mode === 'sip_invite';
}

/** Hangs up a warm transfer's destination (a consulted destination that was not bridged); one already gone is fine. */
export async function removeTransferTarget(call: CallItem, destination: string): Promise<void> {
  await (await adapter()).removeParticipant(roomOf(call), transferIdentity(destination)).catch((error: unknown) =>
    logger.warn('removing the transfer destination from the room failed', { call_id: call.call_id, error }),
  );
}

/**
 * Who hears whom during an agentic warm transfer's consultation (docs/calls-media.md,
 * Private consultation). `private`: the caller is unsubscribed from the agent's voice and
 * from the destination's audio (it keeps the agent's hold track, which plays the hold
 * music), and the destination from the caller's audio and the hold track; the agent hears
 * everyone. `open`: the caller and the destination are subscribed to each other and to the
 * agent's voice again (a bridge; after a cancel the destination is gone and only the
 * caller is). Applied by the media server (LiveKit's UpdateSubscriptions) to the tracks
 * published when it runs, so it is run again whenever a track is published while the
 * consultation lasts. Failures are LiveKit's errors (ApiError).
 */
export async function setConsultHearing(call: CallItem, destination: string, hearing: 'private' | 'open'): Promise<void> {
  const destinationIdentity = transferIdentity(destination);
  const media = await adapter();
  const room = roomOf(call);
  const listing = await media.listAudio(room);
  const callerIdentity = call.engine.sip_identity ?? CALLEE_IDENTITY;
  const caller = listing.find((participant) => participant.identity === callerIdentity);
  const target = listing.find((participant) => participant.identity === destinationIdentity);
  const sids = (tracks: { sid: string; name: string }[]) => tracks.map((track) => track.sid);
  const agentTracks = listing.filter((participant) => participant.agent).flatMap((participant) => participant.tracks);
  const voice = sids(agentTracks.filter((track) => track.name !== HOLD_TRACK_NAME));
  const hold = sids(agentTracks.filter((track) => track.name === HOLD_TRACK_NAME));
  const subscribe = hearing === 'open';
  if (caller) await media.setSubscriptions(room, caller.identity, [...voice, ...sids(target?.tracks ?? [])], subscribe);
  // Opened, the hold track is gone or about to be (the worker stops the music on the bridge): the destination is not given it back.
  if (target) await media.setSubscriptions(room, target.identity, [...sids(caller?.tracks ?? []), ...(subscribe ? [] : hold)], subscribe);
}

/** Ends a call's media: deletes its room (`roomOf(call)`; a room already gone is fine). */
export async function endMedia(room: string): Promise<void> {
  await (await adapter()).endCall(room);
}

/** Dispatches the agent worker into a room that already exists (a SIP caller's, made by LiveKit's dispatch rule). */
export async function dispatchAgentInto(room: string, call: CallItem): Promise<string> {
  const media = await adapter();
  return media.dispatchAgent(room, await mediaCall(call, media.kind));
}

/** Hands a SIP caller in `room` to another number by SIP REFER (an inbound call forwarded to fallback_number). */
export async function forwardCaller(room: string, participantIdentity: string, to: string): Promise<void> {
  await (await adapter()).coldTransfer({ call_id: room, participant_identity: participantIdentity, to });
}

export async function webCallAccess(callId: string) {
  return mediaWebCallAccess(callId, `web_user_${callId}`);
}

/** A live control for the agent worker: a data message on LIVE_CONTROL_TOPIC in the call's room (docs/calls-media.md). */
export async function sendLiveControl(call: CallItem, message: Record<string, unknown>): Promise<void> {
  await (await adapter()).sendData(roomOf(call), LIVE_CONTROL_TOPIC, { call_id: call.call_id, ...message });
}

/** Removes a live viewer from the call's room. */
export async function removeViewer(call: CallItem, participantId: string): Promise<void> {
  await (await adapter()).removeParticipant(roomOf(call), participantId);
}

/** Lets a viewer in the call's room speak (take-over). */
export async function allowViewerToPublish(call: CallItem, participantId: string): Promise<void> {
  await (await adapter()).allowPublish(roomOf(call), participantId);
}

/** The token a viewer joins the call's room with: subscribe-only, or publishing after a take-over. */
export async function viewerAccess(call: CallItem, participantId: string, publish: boolean) {
  return liveAccess(roomOf(call), participantId, { publish });
}
