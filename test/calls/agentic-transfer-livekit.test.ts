import { describe, expect, it } from 'vitest';
import { startLiveKitTestApp, signedWebhook } from '../support/fake-livekit.ts';
import { call } from '../support/http.ts';
import { DESK, livePhoneCall } from '../support/transfers.ts';
import { eventually } from '../support/webhook-receiver.ts';

/*
 * The agentic warm transfer on LiveKit (docs/calls.md, Agentic warm transfer): the worker
 * asks with the tool's transfer_option; Parley tells it to hold the caller, dials the
 * destination into the room, tells it to consult (`transfer_consult`), and applies its
 * `transfer_decision` (or action_on_timeout) once. The consultation is private
 * (docs/calls-media.md, Private consultation): the caller is unsubscribed from the agent's
 * voice and the destination's audio, the destination from the caller and the hold track,
 * and both are subscribed back on a bridge (the caller alone on a cancel). Also
 * `;transport=` on a warm transfer to a SIP URI, and a refused transport.
 */

const testApp = await startLiveKitTestApp();
const { livekit } = testApp;


const DESK_TRACK = `TR_transfer-${DESK}`;

/** The agent worker in the room: its voice and its hold track (the fake's rooms have no worker of their own). */
function workerJoins(callId: string): void {
  livekit.join(callId, {
    identity: 'agent-AJ_consult',
    kind: 'AGENT',
    tracks: [
      { sid: 'TR_agent_voice', name: 'roomio_audio' },
      { sid: 'TR_agent_hold', name: 'parley-hold' },
    ],
  });
}

/** The UpdateSubscriptions requests for the call's room, in order (protobuf's JSON leaves `subscribe: false` out). */
const subscriptions = (callId: string) =>
  livekit.calls('RoomService/UpdateSubscriptions').filter((req) => req.body.room === callId).map((req) => req.body);

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
    workerJoins(callId);
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
    // Private before the worker is told to speak: the caller hears only the hold track, the destination only the agent's voice.
    expect(subscriptions(callId)).toEqual([
      { room: callId, identity: 'callee', trackSids: ['TR_agent_voice', DESK_TRACK] },
      { room: callId, identity: `transfer-${DESK}`, trackSids: ['TR_callee', 'TR_agent_hold'] },
    ]);
    const order = livekit.requests.filter((req) => req.body.room === callId).map((req) => req.method);
    expect(order.lastIndexOf('RoomService/UpdateSubscriptions')).toBeLessThan(order.lastIndexOf('RoomService/SendData'));
    expect(livekit.hears(callId, 'callee')).toEqual(['TR_agent_hold']);
    expect(livekit.hears(callId, `transfer-${DESK}`)).toEqual(['TR_agent_voice']);
    expect(livekit.hears(callId, 'agent-AJ_consult')).toEqual(['TR_callee', DESK_TRACK]);
    // Consulting: the caller is on hold, nothing is bridged yet.
    expect(await get()).toMatchObject({ call_status: 'ongoing', transfer_destination: DESK });
    expect(await hooks.events(callId)).toEqual(['call_started', 'transfer_started']);

    // The worker's consultation lines: the caller heard none of them.
    const consultation = [
      { role: 'agent', content: 'Hello, I have a caller on hold who asked to be transferred to you. Can you take the call?', words: [] },
      { role: 'transfer_target', content: 'Yes, put them through.', words: [] },
    ];
    expect((await report({ event: 'transcript_updated', sequence: 2, utterances: consultation })).status).toBe(204);
    expect((await report({ event: 'transfer_decision', sequence: 3, decision: 'bridge' })).status).toBe(204);
    const bridged = await get();
    expect(bridged).toMatchObject({ call_status: 'ended', disconnection_reason: 'transfer_bridged', transfer_destination: DESK });
    expect(bridged.transcript_with_tool_calls.slice(-2)).toEqual(consultation);
    expect(bridged.transcript_object ?? []).toEqual([]);
    expect(told().at(-1)).toEqual({ call_id: callId, type: 'transfer_bridge', destination: DESK, audio_cue: true, public_handoff_prompt: 'Introduce the caller.' });
    // Bridged: the caller and the destination hear each other and the agent's handoff again.
    expect(subscriptions(callId).slice(2)).toEqual([
      { room: callId, identity: 'callee', trackSids: ['TR_agent_voice', DESK_TRACK], subscribe: true },
      { room: callId, identity: `transfer-${DESK}`, trackSids: ['TR_callee'], subscribe: true },
    ]);
    expect(livekit.hears(callId, 'callee')).toEqual(['TR_agent_voice', 'TR_agent_hold', DESK_TRACK]);
    expect(livekit.hears(callId, `transfer-${DESK}`)).toEqual(['TR_callee', 'TR_agent_voice']);
    // The room stays up for the two parties; a repeated decision changes nothing.
    expect(livekit.calls('RoomService/DeleteRoom').filter((req) => req.body.room === callId)).toHaveLength(0);
    const again = await report({ event: 'transfer_decision', sequence: 4, decision: 'cancel' });
    expect(again.status).toBe(409);
    const events = await eventually(async () => hooks.events(callId), (list) => list.length >= 4);
    expect(events.slice(0, 2)).toEqual(['call_started', 'transfer_started']);
    expect([...events.slice(2)].sort()).toEqual(['call_ended', 'transfer_bridged']);
  });

  it('a declined consultation hangs up the destination and gives the caller back to the agent', async () => {
    const { hooks, callId, report, get, told } = await livePhoneCall(testApp);
    workerJoins(callId);
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
    // The destination is gone; the caller hears the agent's voice again.
    expect(subscriptions(callId)).toEqual([
      { room: callId, identity: 'callee', trackSids: ['TR_agent_voice', DESK_TRACK] },
      { room: callId, identity: `transfer-${DESK}`, trackSids: ['TR_callee', 'TR_agent_hold'] },
      { room: callId, identity: 'callee', trackSids: ['TR_agent_voice'], subscribe: true },
    ]);
    expect(livekit.hears(callId, 'callee')).toEqual(['TR_agent_voice', 'TR_agent_hold']);
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

describe('the private consultation on LiveKit', () => {
  it('a track published while consulting is kept from whom may not hear it', async () => {
    const { callId, report, told } = await livePhoneCall(testApp);
    workerJoins(callId);
    expect((await report(agentic({ transfer_timeout_ms: 60_000 }))).status).toBe(204);
    await eventually(async () => told(), (list) => list.some((data) => data.type === 'transfer_consult'));
    // The destination's line publishes a second track after the consultation was made private.
    livekit.members.get(callId)!.get(`transfer-${DESK}`)!.tracks.push({ sid: 'TR_desk_late', name: 'phone' });
    const signed = await signedWebhook({ event: 'track_published', room: { name: callId }, participant: { identity: `transfer-${DESK}`, kind: 'SIP' }, track: { sid: 'TR_desk_late', type: 'AUDIO' } });
    const hook = await call(testApp.app.url, 'POST', '/livekit/webhook', { rawBody: signed.body, headers: { 'content-type': 'application/json', authorization: signed.authorization } });
    expect(hook.status).toBe(200);
    expect(subscriptions(callId).slice(2)).toEqual([
      { room: callId, identity: 'callee', trackSids: ['TR_agent_voice', DESK_TRACK, 'TR_desk_late'] },
      { room: callId, identity: `transfer-${DESK}`, trackSids: ['TR_callee', 'TR_agent_hold'] },
    ]);
    expect(livekit.hears(callId, 'callee')).toEqual(['TR_agent_hold']);
  });

  it('a consultation LiveKit cannot make private is not held: the transfer is cancelled and the destination hung up', async () => {
    const { hooks, callId, report, get, told } = await livePhoneCall(testApp);
    workerJoins(callId);
    livekit.failNext('RoomService/ListParticipants', { status: 500, code: 'internal', msg: 'boom' });
    expect((await report(agentic({ transfer_timeout_ms: 60_000 }))).status).toBe(204);
    const events = await eventually(async () => hooks.events(callId), (list) => list.includes('transfer_cancelled'));
    expect(events).toEqual(['call_started', 'transfer_started', 'transfer_cancelled']);
    expect((await get()).call_status).toBe('ongoing');
    expect(told().map((data) => data.type)).toEqual(['transfer_hold', 'transfer_cancelled']);
    expect(told().at(-1)).toMatchObject({ reason: 'dial_failed' });
    expect(livekit.calls('RoomService/RemoveParticipant').filter((req) => req.body.room === callId).map((req) => req.body.identity)).toEqual([`transfer-${DESK}`]);
    expect(livekit.hears(callId, 'callee')).toEqual(['TR_agent_voice', 'TR_agent_hold']);
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
