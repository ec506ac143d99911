import { describe, expect, it } from 'vitest';
import { signedWebhook, startLiveKitTestApp } from '../support/fake-livekit.ts';
import { call } from '../support/http.ts';
import { DESK, livePhoneCall } from '../support/transfers.ts';
import { eventually } from '../support/webhook-receiver.ts';

/*
 * Transfer options on LiveKit (docs/calls.md, Transfers): the worker reports the tool's
 * transfer_option and custom_sip_headers with `transfer_requested`; the headers reach the
 * REFER (TransferSIPParticipant `headers`) or the transfer's INVITE (CreateSIPParticipant
 * `headers`), show_transferee_as_caller makes the INVITE's caller ID (`sipNumber`) the
 * user's number, and a cold transfer in sip_invite mode dials rather than REFERs.
 */

const testApp = await startLiveKitTestApp();
const { livekit, app } = testApp;
const USER = '+14155550177';

async function livekitEvent(event: Record<string, unknown>) {
  const signed = await signedWebhook(event);
  return call(app.url, 'POST', '/livekit/webhook', { rawBody: signed.body, headers: { 'content-type': 'application/json', authorization: signed.authorization } });
}

const dialsOf = (callId: string) => livekit.calls('SIP/CreateSIPParticipant').filter((req) => req.body.roomName === callId);

describe('transfer options on LiveKit', () => {
  it('a cold REFER carries the tool\'s custom SIP headers, placeholders filled from the call\'s variables', async () => {
    const { callId, report, get } = await livePhoneCall(testApp);
    const asked = await report({
      event: 'transfer_requested',
      sequence: 1,
      destination: DESK,
      transfer_option: { type: 'cold_transfer' },
      custom_sip_headers: { 'X-Team': 'billing', 'X-Call': '{{call_id}}' },
    });
    expect(asked.status).toBe(204);
    await eventually(get, (c) => c.transfer_end_timestamp !== undefined);
    const refers = livekit.calls('SIP/TransferSIPParticipant').filter((req) => req.body.roomName === callId);
    expect(refers.map((req) => req.body)).toEqual([
      { roomName: callId, participantIdentity: 'callee', transferTo: `tel:${DESK}`, headers: { 'X-Team': 'billing', 'X-Call': callId }, ringingTimeout: '30s' },
    ]);
  });

  it('a warm transfer with show_transferee_as_caller dials with the user\'s number as caller ID over the number\'s trunk, with the headers', async () => {
    const { callId, report, get, number } = await livePhoneCall(testApp);
    const trunk = dialsOf(callId)[0]!.body.sipTrunkId;
    const asked = await report({
      event: 'transfer_requested',
      sequence: 1,
      destination: DESK,
      transfer_option: { type: 'warm_transfer', show_transferee_as_caller: true },
      custom_sip_headers: { 'X-Team': 'billing' },
    });
    expect(asked.status).toBe(204);
    await eventually(get, (c) => c.call_status === 'ended');
    const [dial, transfer] = dialsOf(callId).map((req) => req.body);
    expect(dial).toMatchObject({ sipNumber: number, sipCallTo: USER, participantIdentity: 'callee' });
    expect(transfer).toMatchObject({ sipTrunkId: trunk, sipNumber: USER, sipCallTo: DESK, participantIdentity: `transfer-${DESK}`, headers: { 'X-Team': 'billing' } });

    // Without the option, the destination sees the workspace's number.
    const plain = await livePhoneCall(testApp);
    expect((await plain.report({ event: 'transfer_requested', sequence: 1, destination: DESK, kind: 'warm' })).status).toBe(204);
    await eventually(plain.get, (c) => c.call_status === 'ended');
    const plainTransfer = dialsOf(plain.callId)[1]!.body;
    expect(plainTransfer.sipNumber).toBe(plain.number);
    expect(plainTransfer).not.toHaveProperty('headers');
  });

  it('a cold transfer in sip_invite mode dials the destination into the room (no REFER); the leg ends when a party leaves', async () => {
    const { callId, report, get, hooks } = await livePhoneCall(testApp);
    const asked = await report({
      event: 'transfer_requested',
      sequence: 1,
      destination: DESK,
      transfer_option: { type: 'cold_transfer', cold_transfer_mode: 'sip_invite', show_transferee_as_caller: true },
      custom_sip_headers: { 'X-Team': 'billing' },
    });
    expect(asked.status).toBe(204);
    const ended = await eventually(get, (c) => c.call_status === 'ended');
    expect(ended).toMatchObject({ disconnection_reason: 'call_transfer', transfer_destination: DESK });
    expect(ended.transfer_end_timestamp).toBeUndefined();
    expect(livekit.calls('SIP/TransferSIPParticipant').filter((req) => req.body.roomName === callId)).toHaveLength(0);
    expect(dialsOf(callId)[1]!.body).toMatchObject({ sipNumber: USER, sipCallTo: DESK, participantIdentity: `transfer-${DESK}`, headers: { 'X-Team': 'billing' } });
    // The two parties are in the room: it stays until one leaves.
    expect(livekit.calls('RoomService/DeleteRoom').filter((req) => req.body.room === callId)).toHaveLength(0);
    const left = await livekitEvent({ event: 'participant_left', room: { name: callId }, participant: { identity: `transfer-${DESK}`, kind: 'SIP' } });
    expect(left.body).toEqual({ applied: 'transfer_ended' });
    expect((await get()).transfer_end_timestamp).toBeGreaterThanOrEqual(ended.end_timestamp);
    expect(livekit.calls('RoomService/DeleteRoom').filter((req) => req.body.room === callId)).toHaveLength(1);
    const events = await eventually(async () => hooks.events(callId), (list) => list.includes('transfer_ended'));
    expect(events.filter((event) => event?.startsWith('transfer_')).sort()).toEqual(['transfer_bridged', 'transfer_ended', 'transfer_started']);
  });

  it('refuses a report whose custom SIP headers break the rules (400), and transfers nothing', async () => {
    const { callId, report, client } = await livePhoneCall(testApp);
    const refused = await report({ event: 'transfer_requested', sequence: 1, destination: DESK, custom_sip_headers: { 'X-Team': 'a\nb' } });
    expect(refused.status).toBe(400);
    expect(refused.body.message).toBe('custom_sip_headers.X-Team: Must be one line without control characters');
    expect(livekit.calls('SIP/TransferSIPParticipant').filter((req) => req.body.roomName === callId)).toHaveLength(0);
    await client.call.stop(callId);
  });
});
