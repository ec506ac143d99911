import { RoomEvent, type Room } from '@livekit/rtc-node';
import { CALLEE_IDENTITY } from '../../shared/vendors/media/index.ts';
import type { ReportClient } from './reports.ts';

/**
 * An outbound call's dial is placed without waiting for the answer (docs/calls-media.md,
 * Dialling): the callee's SIP participant is in the room while the phone rings, and its
 * `sip.callStatus` becoming `active` is the answer. LiveKit sends Parley no webhook for an
 * attribute change, so the worker, in the room, reports it (`callee_answered`), once; Parley
 * makes the call ongoing. A callee already active when the worker joins is reported at once.
 */
export function reportCalleeAnswer(room: Room, reports: Pick<ReportClient, 'send'>): void {
  let reported = false;
  const check = (participant: { identity: string; attributes: Record<string, string> }) => {
    if (reported || participant.identity !== CALLEE_IDENTITY || participant.attributes['sip.callStatus'] !== 'active') return;
    reported = true;
    void reports.send({ event: 'callee_answered' });
  };
  room.on(RoomEvent.ParticipantAttributesChanged, (_changed, participant) => check(participant));
  room.on(RoomEvent.ParticipantConnected, check);
  for (const participant of room.remoteParticipants.values()) check(participant);
}
