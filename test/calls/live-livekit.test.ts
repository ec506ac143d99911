import { TokenVerifier } from 'livekit-server-sdk';
import { describe, expect, it } from 'vitest';
import { startLiveKitTestApp, signedWebhook } from '../support/fake-livekit.ts';
import { call } from '../support/http.ts';
import { newAgent } from '../support/factories.ts';

// Live controls on LiveKit: tokens signed with the server's key, the worker told by room data messages.
const { livekit, app } = await startLiveKitTestApp();

const verifier = new TokenVerifier(livekit.apiKey, livekit.apiSecret);
const decode = (data: string) => JSON.parse(Buffer.from(data, 'base64').toString('utf8'));

async function liveWebCall() {
  const ws = await app.newWorkspace();
  const { agent } = await newAgent(ws.api);
  const web = (await ws.api.post('/v3/create-web-call', { body: { agent_id: agent.agent_id } })).body;
  const signed = await signedWebhook({ event: 'participant_joined', room: { name: web.call_id }, participant: { identity: 'web_user', kind: 'STANDARD' } });
  const joined = await call(app.url, 'POST', '/livekit/webhook', { rawBody: signed.body, headers: { 'content-type': 'application/json', authorization: signed.authorization } });
  expect(joined.body).toEqual({ applied: 'ongoing' });
  return { ws, callId: web.call_id as string };
}

describe('live controls on LiveKit', () => {
  it('listen signs a subscribe-only token for the room; take-over lets the listener publish and tells the worker; the call ends call_take_over', async () => {
    const { ws, callId } = await liveWebCall();
    const listened = (await ws.api.post(`/v2/calls/${callId}/listen`)).body;
    expect(listened.url).toBe(livekit.url);
    const claims = await verifier.verify(listened.access_token);
    expect(claims.video).toMatchObject({ room: callId, roomJoin: true, canSubscribe: true, canPublish: false });

    const said = await ws.api.post(`/v2/calls/${callId}/supervisor-say`, { body: { text: 'One moment please.' } });
    expect(said.status).toBe(200);
    const sayPacket = livekit.calls('RoomService/SendData').at(-1)!.body;
    expect(sayPacket).toMatchObject({ room: callId, topic: 'parley.live' });
    expect(decode(sayPacket.data)).toEqual({ call_id: callId, type: 'say', text: 'One moment please.' });

    const updated = await ws.api.patch(`/update-live-call/${callId}`, { body: { fields_to_override: { override_dynamic_variables: { tier: 'gold' } } } });
    expect(updated.status).toBe(200);
    expect(decode(livekit.calls('RoomService/SendData').at(-1)!.body.data)).toMatchObject({ type: 'update', dynamic_variables: { tier: 'gold' } });

    const taken = await ws.api.post(`/v2/calls/${callId}/take-over`, { body: { participant_id: listened.participant_id } });
    expect(taken.status).toBe(200);
    expect((await verifier.verify(taken.body.access_token)).video).toMatchObject({ room: callId, canPublish: true });
    expect(livekit.calls('RoomService/UpdateParticipant').at(-1)!.body).toMatchObject({ room: callId, identity: listened.participant_id, permission: { canPublish: true } });
    expect(decode(livekit.calls('RoomService/SendData').at(-1)!.body.data)).toEqual({ call_id: callId, type: 'take_over', participant_id: listened.participant_id });

    // The supervisor (a listener identity) leaving does not end the call; the caller leaving does, call_take_over.
    const other = (await ws.api.post(`/v2/calls/${callId}/listen`)).body;
    expect((await ws.api.post(`/v2/calls/${callId}/leave`, { body: { participant_id: other.participant_id } })).status).toBe(200);
    expect(livekit.calls('RoomService/RemoveParticipant').at(-1)!.body).toMatchObject({ room: callId, identity: other.participant_id });
    const left = await signedWebhook({ event: 'participant_left', room: { name: callId }, participant: { identity: 'web_user', kind: 'STANDARD' } });
    await call(app.url, 'POST', '/livekit/webhook', { rawBody: left.body, headers: { 'content-type': 'application/json', authorization: left.authorization } });
    const ended = (await ws.api.get(`/v2/get-call/${callId}`)).body;
    expect(ended).toMatchObject({ call_status: 'ended', disconnection_reason: 'call_take_over' });
  });
});
