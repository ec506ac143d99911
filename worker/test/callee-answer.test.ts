import { EventEmitter } from 'node:events';
import { RoomEvent, type Room } from '@livekit/rtc-node';
import { describe, expect, it } from 'vitest';
import { reportCalleeAnswer } from '../src/callee-answer.ts';

/** A room as far as the watch uses it: its events and the participants already in it. */
function fakeRoom(present: { identity: string; attributes: Record<string, string> }[] = []) {
  const room = Object.assign(new EventEmitter(), { remoteParticipants: new Map(present.map((p) => [p.identity, p])) });
  return room as unknown as Room & EventEmitter;
}

function recorder() {
  const sent: unknown[] = [];
  return { sent, reports: { send: async (event: unknown) => (sent.push(event), { status: 'applied' as const }) } };
}

describe('the dialled callee\'s answer', () => {
  it('is reported once when the callee\'s sip.callStatus becomes active, and never for anyone else', () => {
    const room = fakeRoom([{ identity: 'callee', attributes: { 'sip.callStatus': 'dialing' } }]);
    const { sent, reports } = recorder();
    reportCalleeAnswer(room, reports);
    room.emit(RoomEvent.ParticipantAttributesChanged, { 'sip.callStatus': 'ringing' }, { identity: 'callee', attributes: { 'sip.callStatus': 'ringing' } });
    room.emit(RoomEvent.ParticipantAttributesChanged, { 'sip.callStatus': 'active' }, { identity: 'transfer-+14155550100', attributes: { 'sip.callStatus': 'active' } });
    expect(sent).toEqual([]);
    room.emit(RoomEvent.ParticipantAttributesChanged, { 'sip.callStatus': 'active' }, { identity: 'callee', attributes: { 'sip.callStatus': 'active' } });
    room.emit(RoomEvent.ParticipantAttributesChanged, { 'sip.h.x': '1' }, { identity: 'callee', attributes: { 'sip.callStatus': 'active', 'sip.h.x': '1' } });
    expect(sent).toEqual([{ event: 'callee_answered' }]);
  });

  it('reports a callee already active when the worker joined', () => {
    const { sent, reports } = recorder();
    reportCalleeAnswer(fakeRoom([{ identity: 'callee', attributes: { 'sip.callStatus': 'active' } }]), reports);
    expect(sent).toEqual([{ event: 'callee_answered' }]);
  });
});
