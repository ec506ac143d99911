import { describe, expect, it } from 'vitest';
import { startLiveKitTestApp, signedWebhook } from '../support/fake-livekit.ts';
import { call } from '../support/http.ts';
import { newAgent } from '../support/factories.ts';
import { retellClient } from '../support/sdk.ts';
import { livePhoneCall } from '../support/transfers.ts';
import { eventually } from '../support/webhook-receiver.ts';

/*
 * Transfers on LiveKit: the agent worker reports `transfer_requested`, the engine runs the
 * same path as the sandbox's, and the media layer speaks to the fake LiveKit Twirp server:
 * a cold transfer is TransferSIPParticipant (SIP REFER) of the callee, a warm one a second
 * CreateSIPParticipant into the room over the number's trunk.
 */

const testApp = await startLiveKitTestApp();
const { livekit, app } = testApp;


const post = (path: string, rawBody: string, headers: Record<string, string>) =>
  call(app.url, 'POST', path, { rawBody, headers: { 'content-type': 'application/json', ...headers } });

async function livekitEvent(event: Record<string, unknown>) {
  const signed = await signedWebhook(event);
  return post('/livekit/webhook', signed.body, { authorization: signed.authorization });
}

describe('transfers on LiveKit', () => {
  it('a cold transfer the worker asks for is a SIP REFER of the callee; the call ends call_transfer', async () => {
    const { hooks, callId, report, get } = await livePhoneCall(testApp);
    expect(livekit.participants.get(callId)).toEqual(new Set(['callee']));
    const asked = await report({ event: 'transfer_requested', sequence: 1, destination: '+1 415 555 0142', kind: 'cold' });
    expect(asked.status).toBe(204);
    const final = await eventually(get, (c) => c.transfer_end_timestamp !== undefined);
    expect(final).toMatchObject({ call_status: 'ended', disconnection_reason: 'call_transfer', transfer_destination: '+14155550142' });

    const refers = livekit.calls('SIP/TransferSIPParticipant').filter((req) => req.body.roomName === callId);
    expect(refers.map((req) => req.body)).toEqual([
      { roomName: callId, participantIdentity: 'callee', transferTo: 'tel:+14155550142', ringingTimeout: '30s' },
    ]);
    expect(livekit.participants.get(callId)).toEqual(new Set());
    // The REFER handed the caller away: the room is closed.
    expect(livekit.calls('RoomService/DeleteRoom').filter((req) => req.body.room === callId)).toHaveLength(1);
    // A retried report changes nothing: still one REFER.
    expect((await report({ event: 'transfer_requested', sequence: 1, destination: '+14155550142', kind: 'cold' })).status).toBe(409);
    expect(livekit.calls('SIP/TransferSIPParticipant').filter((req) => req.body.roomName === callId)).toHaveLength(1);

    // (Events sent back to back are delivered in parallel, so their arrival order is not asserted.)
    const events = await eventually(async () => hooks.events(callId), (list) => list.length >= 5);
    expect([...events].sort()).toEqual(['call_ended', 'call_started', 'transfer_bridged', 'transfer_ended', 'transfer_started']);
  });

  it('a refused REFER (486 Busy Here) cancels the transfer; the call goes on', async () => {
    const { hooks, callId, report, get } = await livePhoneCall(testApp);
    livekit.failNext('SIP/TransferSIPParticipant', { status: 500, code: 'unavailable', msg: 'sip status: 486', meta: { sip_status_code: '486', sip_status: 'Busy Here' } });
    expect((await report({ event: 'transfer_requested', sequence: 1, destination: '+14155550142' })).status).toBe(204);
    const events = await eventually(async () => hooks.events(callId), (list) => list.length >= 3);
    const live = await get();
    expect(live.call_status).toBe('ongoing');
    expect(live).not.toHaveProperty('transfer_destination');
    expect([...events].sort()).toEqual(['call_started', 'transfer_cancelled', 'transfer_started']);
    // The worker is told (its agent said "Transferring…"): one data message on parley.live.
    const told = livekit.calls('RoomService/SendData').filter((req) => req.body.room === callId);
    expect(told).toHaveLength(1);
    expect(told[0]!.body.topic).toBe('parley.live');
    expect(JSON.parse(Buffer.from(told[0]!.body.data, 'base64').toString('utf8'))).toEqual({
      call_id: callId,
      type: 'transfer_cancelled',
      destination: '+14155550142',
      reason: 'dial_busy',
      note: 'The transfer to +14155550142 did not go through (the line was busy): the caller is still on the line with you. Tell them, and carry on helping them.',
    });
    // The call goes on: the worker keeps reporting, then ends it.
    expect((await report({ event: 'call_ended', sequence: 2, disconnection_reason: 'agent_hangup' })).status).toBe(204);
    expect(await get()).toMatchObject({ call_status: 'ended', disconnection_reason: 'agent_hangup' });
  });

  it('a warm transfer dials the destination into the room over the number\'s trunk; the leg ends when a party leaves', async () => {
    const { hooks, callId, report, get } = await livePhoneCall(testApp);
    const trunkOfCall = livekit.calls('SIP/CreateSIPParticipant').find((req) => req.body.roomName === callId)!.body.sipTrunkId;
    expect((await report({ event: 'transfer_requested', sequence: 1, destination: '+14155550143', kind: 'warm' })).status).toBe(204);
    const bridged = await eventually(get, (c) => c.call_status === 'ended');
    expect(bridged).toMatchObject({ disconnection_reason: 'transfer_bridged', transfer_destination: '+14155550143' });
    expect(bridged.transfer_end_timestamp).toBeUndefined();

    const dials = livekit.calls('SIP/CreateSIPParticipant').filter((req) => req.body.roomName === callId);
    expect(dials.map((req) => [req.body.sipCallTo, req.body.participantIdentity, req.body.sipTrunkId])).toEqual([
      ['+14155550177', 'callee', trunkOfCall],
      ['+14155550143', 'transfer-+14155550143', trunkOfCall],
    ]);
    expect(livekit.participants.get(callId)).toEqual(new Set(['callee', 'transfer-+14155550143']));
    // The caller and the destination are still talking: the room stays.
    expect(livekit.calls('RoomService/DeleteRoom').filter((req) => req.body.room === callId)).toHaveLength(0);
    const beforeLeg = await eventually(async () => hooks.events(callId), (list) => list.length >= 4);
    expect([...beforeLeg].sort()).toEqual(['call_ended', 'call_started', 'transfer_bridged', 'transfer_started']);

    const left = await livekitEvent({ event: 'participant_left', room: { name: callId }, participant: { identity: 'callee', kind: 'SIP' } });
    expect(left.body).toEqual({ applied: 'transfer_ended' });
    const again = await livekitEvent({ event: 'room_finished', room: { name: callId } });
    expect(again.body).toEqual({ applied: 'ignored' });
    const final = await get();
    expect(final.transfer_end_timestamp).toBeGreaterThanOrEqual(final.end_timestamp);
    expect(livekit.calls('RoomService/DeleteRoom').filter((req) => req.body.room === callId)).toHaveLength(1);

    const events = await eventually(async () => hooks.events(callId), (list) => list.length >= 5);
    expect(events).toEqual([...beforeLeg, 'transfer_ended']);
  });

  it('refuses a transfer of a web call (422) and a destination that is not a number or SIP URI', async () => {
    const ws = await app.newWorkspace();
    const { agent } = await newAgent(ws.api);
    const client = retellClient(app.url, ws.api_key);
    const web: any = await client.call.createWebCall({ agent_id: agent.agent_id, agent_override: { agent: { voice_speed: 1.2 } } });
    const dispatch = livekit.calls('AgentDispatchService/CreateDispatch').find((req) => req.body.room === web.call_id)!;
    const { report_token: token, agent_override: override } = JSON.parse(dispatch.body.metadata);
    // The worker gets the call's agent_override with its dispatch, to lay over the agent version it reads.
    expect(override).toEqual({ agent: { voice_speed: 1.2 } });
    await livekitEvent({ event: 'participant_joined', room: { name: web.call_id }, participant: { identity: 'web_user', kind: 'STANDARD' } });
    const refused = await post(
      `/internal/calls/${web.call_id}/events`,
      JSON.stringify({ event: 'transfer_requested', sequence: 1, timestamp: Date.now(), destination: '+14155550142', kind: 'cold' }),
      { authorization: `Bearer ${token}` },
    );
    expect(refused.status).toBe(422);
    expect(refused.body).toEqual({ status: 422, message: 'Transfer refused: only phone calls can be transferred' });

    const phone = await livePhoneCall(testApp);
    const bad = await phone.report({ event: 'transfer_requested', sequence: 1, destination: 'the front desk' });
    expect(bad.status).toBe(422);
    expect(bad.body.message).toBe('Transfer refused: the front desk is neither an E.164 number nor a SIP URI');
    expect(livekit.calls('SIP/TransferSIPParticipant').filter((req) => req.body.roomName === phone.callId)).toHaveLength(0);
    await client.call.stop(web.call_id);
    await phone.client.call.stop(phone.callId);
  });
});
