import { describe, expect, it } from 'vitest';
import { startLiveKitTestApp } from '../support/fake-livekit.ts';
import { DESK, livePhoneCall } from '../support/transfers.ts';
import { eventually } from '../support/webhook-receiver.ts';

/*
 * The agentic warm transfer on LiveKit (docs/calls.md, Agentic warm transfer): the worker
 * asks with the tool's transfer_option; Parley tells it to hold the caller, dials the
 * destination into the room, tells it to consult (`transfer_consult`), and applies its
 * `transfer_decision` (or action_on_timeout) once. Also `;transport=` on a warm transfer
 * to a SIP URI, and a refused transport.
 */

const testApp = await startLiveKitTestApp();
const { livekit } = testApp;


const agentic = (config: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  event: 'transfer_requested',
  sequence: 1,
  destination: DESK,
  kind: 'warm',
  transfer_option: { type: 'agentic_warm_transfer', agentic_transfer_config: config, ...extra },
});

describe('an agentic warm transfer on LiveKit', () => {
  it('holds the caller, dials and consults the destination, and bridges on the worker\'s decision, once', async () => {
    const { hooks, callId, report, get, told } = await livePhoneCall(testApp);
    expect((await report(agentic({ transfer_timeout_ms: 60_000 }, { on_hold_music: 'ringtone', public_handoff_option: { type: 'prompt', prompt: 'Introduce the caller.' } }))).status).toBe(204);
    await eventually(async () => told(), (list) => list.length >= 2);
    expect(told()).toEqual([
      { call_id: callId, type: 'transfer_hold', destination: DESK, on_hold_music: 'ringtone', agentic: true },
      {
        call_id: callId,
        type: 'transfer_consult',
        destination: DESK,
        participant_identity: `transfer-${DESK}`,
        action_on_timeout: 'cancel_transfer',
        transfer_timeout_ms: 60_000,
      },
    ]);
    expect(livekit.calls('SIP/CreateSIPParticipant').filter((req) => req.body.roomName === callId && req.body.participantIdentity === `transfer-${DESK}`)).toHaveLength(1);
    // Consulting: the caller is on hold, nothing is bridged yet.
    expect(await get()).toMatchObject({ call_status: 'ongoing', transfer_destination: DESK });
    expect(await hooks.events(callId)).toEqual(['call_started', 'transfer_started']);

    expect((await report({ event: 'transfer_decision', sequence: 2, decision: 'bridge' })).status).toBe(204);
    expect(await get()).toMatchObject({ call_status: 'ended', disconnection_reason: 'transfer_bridged', transfer_destination: DESK });
    expect(told().at(-1)).toEqual({ call_id: callId, type: 'transfer_bridge', destination: DESK, audio_cue: true, public_handoff_prompt: 'Introduce the caller.' });
    // The room stays up for the two parties; a repeated decision changes nothing.
    expect(livekit.calls('RoomService/DeleteRoom').filter((req) => req.body.room === callId)).toHaveLength(0);
    const again = await report({ event: 'transfer_decision', sequence: 3, decision: 'cancel' });
    expect(again.status).toBe(409);
    const events = await eventually(async () => hooks.events(callId), (list) => list.length >= 4);
    expect(events.slice(0, 2)).toEqual(['call_started', 'transfer_started']);
    expect([...events.slice(2)].sort()).toEqual(['call_ended', 'transfer_bridged']);
  });

  it('a declined consultation hangs up the destination and gives the caller back to the agent', async () => {
    const { hooks, callId, report, get, told } = await livePhoneCall(testApp);
    // No consultation yet: a decision is 409 and changes nothing.
    const early = await report({ event: 'transfer_decision', sequence: 1, decision: 'bridge' });
    expect(early.status).toBe(409);
    expect(early.body.message).toBe(`Call ${callId} has no transfer waiting for a decision`);
    expect((await report({ ...agentic({}), sequence: 2 })).status).toBe(204);
    await eventually(async () => told(), (list) => list.some((data) => data.type === 'transfer_consult'));
    expect((await report({ event: 'transfer_decision', sequence: 3, decision: 'cancel' })).status).toBe(204);
    const live = await get();
    expect(live.call_status).toBe('ongoing');
    expect(live).not.toHaveProperty('transfer_destination');
    expect(livekit.calls('RoomService/RemoveParticipant').filter((req) => req.body.room === callId).map((req) => req.body.identity)).toEqual([`transfer-${DESK}`]);
    expect(told().at(-1)).toEqual({
      call_id: callId,
      type: 'transfer_cancelled',
      destination: DESK,
      reason: 'transfer_declined',
      note: 'The transfer to +14155550142 did not go through (the person you transferred to declined the call): the caller is still on the line with you. Tell them, and carry on helping them.',
    });
    const events = await eventually(async () => hooks.events(callId), (list) => list.length >= 3);
    expect(events).toEqual(['call_started', 'transfer_started', 'transfer_cancelled']);
  });

  it('no decision within transfer_timeout_ms: action_on_timeout bridge_transfer bridges', async () => {
    const { callId, report, get } = await livePhoneCall(testApp);
    expect((await report(agentic({ transfer_timeout_ms: 500, action_on_timeout: 'bridge_transfer' }))).status).toBe(204);
    const final = await eventually(get, (c) => c.call_status === 'ended');
    expect(final).toMatchObject({ disconnection_reason: 'transfer_bridged', transfer_destination: DESK });
    // A late decision after the timeout is refused.
    expect((await report({ event: 'transfer_decision', sequence: 2, decision: 'cancel' })).status).toBe(409);
    void callId;
  });
});

describe('SIP transport on LiveKit', () => {
  it('a warm transfer to a SIP URI dials its host with its transport; another transport is refused (422)', async () => {
    const { callId, report, get } = await livePhoneCall(testApp);
    const refused = await report({ event: 'transfer_requested', sequence: 1, destination: 'sip:desk@pbx.example.com;transport=ws', kind: 'warm' });
    expect(refused.status).toBe(422);
    expect(refused.body.message).toBe('Transfer refused: sip:desk@pbx.example.com;transport=ws: transport must be udp, tcp or tls (got ws)');
    const uri = 'sip:desk@pbx.example.com:5061;transport=tls';
    expect((await report({ event: 'transfer_requested', sequence: 2, destination: uri, kind: 'warm' })).status).toBe(204);
    const final = await eventually(get, (c) => c.call_status === 'ended');
    expect(final).toMatchObject({ disconnection_reason: 'transfer_bridged', transfer_destination: uri });
    const dial = livekit.calls('SIP/CreateSIPParticipant').find((req) => req.body.roomName === callId && req.body.participantIdentity === `transfer-${uri}`)!;
    expect(dial.body).toMatchObject({ sipCallTo: 'desk', trunk: { hostname: 'pbx.example.com:5061', transport: 'SIP_TRANSPORT_TLS' } });
    expect(dial.body.sipTrunkId ?? '').toBe('');
  });
});
