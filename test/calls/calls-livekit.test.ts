import { describe, expect, it } from 'vitest';
import { startLiveKitTestApp, signedWebhook } from '../support/fake-livekit.ts';
import { call } from '../support/http.ts';
import { freshNumber, newAgent } from '../support/factories.ts';
import { retellClient } from '../support/sdk.ts';
import { eventually, webhookReceiver } from '../support/webhook-receiver.ts';

// The media server is the fake LiveKit Twirp server: settings are read once, so it starts first.
const { livekit, app } = await startLiveKitTestApp();

async function liveSetup() {
  const ws = await app.newWorkspace();
  const hooks = await webhookReceiver();
  const { agent } = await newAgent(ws.api, { agent: { webhook_url: hooks.url } });
  return { ws, hooks, agent, client: retellClient(app.url, ws.api_key) };
}

const post = (path: string, rawBody: string, headers: Record<string, string>) =>
  call(app.url, 'POST', path, { rawBody, headers: { 'content-type': 'application/json', ...headers } });

async function livekitEvent(event: Record<string, unknown>, options: { apiSecret?: string } = {}) {
  const signed = await signedWebhook(event, options);
  return post('/livekit/webhook', signed.body, { authorization: signed.authorization });
}

describe('a web call on LiveKit', () => {
  it('creates the room and dispatches the worker, goes live when the user joins, and records what the worker reports', async () => {
    const { hooks, agent, client } = await liveSetup();
    const web: any = await client.call.createWebCall({ agent_id: agent.agent_id });
    expect(web.livekit_url).toBe(livekit.url);
    expect(livekit.calls('RoomService/CreateRoom').map((req) => req.body.name)).toContain(web.call_id);
    const dispatch = livekit.calls('AgentDispatchService/CreateDispatch').find((req) => req.body.room === web.call_id)!;
    const metadata = JSON.parse(dispatch.body.metadata);
    expect(metadata).toMatchObject({ call_id: web.call_id, agent_id: agent.agent_id, call_type: 'web_call' });
    const report = (body: Record<string, unknown>, token = metadata.report_token) =>
      post(`/internal/calls/${web.call_id}/events`, JSON.stringify(body), { authorization: `Bearer ${token}` });

    const joined = await livekitEvent({ event: 'participant_joined', room: { name: web.call_id }, participant: { identity: 'web_user', kind: 'STANDARD' } });
    expect(joined.status).toBe(200);
    expect(joined.body).toEqual({ applied: 'ongoing' });
    expect(((await client.call.retrieve(web.call_id)) as any).call_status).toBe('ongoing');

    const utterances = { event: 'transcript_updated', sequence: 1, timestamp: Date.now(), utterances: [{ role: 'agent', content: 'Hi there!' }, { role: 'user', content: 'Hello.' }] };
    expect((await report(utterances)).status).toBe(204);
    expect((await report(utterances)).status).toBe(204);
    expect((await report({ ...utterances, sequence: 2 }, 'wrt_forged')).status).toBe(401);
    const live: any = await client.call.retrieve(web.call_id);
    expect(live.transcript_object.map((entry: any) => entry.content)).toEqual(['Hi there!', 'Hello.']);

    expect((await report({ event: 'call_ended', sequence: 2, timestamp: Date.now(), disconnection_reason: 'agent_hangup' })).status).toBe(204);
    const ended: any = await client.call.retrieve(web.call_id);
    expect(ended).toMatchObject({ call_status: 'ended', disconnection_reason: 'agent_hangup' });
    expect(livekit.calls('RoomService/DeleteRoom').map((req) => req.body.room)).toContain(web.call_id);
    const late = await report({ ...utterances, sequence: 3 });
    expect(late.status).toBe(409);
    expect(late.body.message).toBe(`Call ${web.call_id} has ended`);

    await eventually(async () => hooks.events(web.call_id), (events) => events.includes('call_analyzed'));
    expect(hooks.events(web.call_id)).toEqual(['call_started', 'call_ended', 'call_analyzed']);
  });

  it('ends a call whose agent worker left without reporting its end (a killed worker), and nothing else', async () => {
    const { hooks, agent, client } = await liveSetup();
    const web: any = await client.call.createWebCall({ agent_id: agent.agent_id });
    const user = { identity: 'web_user', kind: 'STANDARD' };
    const worker = { identity: `agent-${web.call_id}`, kind: 'AGENT' };
    expect((await livekitEvent({ event: 'participant_joined', room: { name: web.call_id }, participant: user })).body).toEqual({ applied: 'ongoing' });
    expect((await livekitEvent({ event: 'participant_joined', room: { name: web.call_id }, participant: worker })).body).toEqual({ applied: 'ignored' });

    const left = await livekitEvent({ event: 'participant_left', room: { name: web.call_id }, participant: worker });
    expect(left.body).toEqual({ applied: 'ended: the agent left' });
    expect(await client.call.retrieve(web.call_id)).toMatchObject({ call_status: 'ended', disconnection_reason: 'error_unknown' });
    expect(livekit.calls('RoomService/DeleteRoom').map((req) => req.body.room)).toContain(web.call_id);
    // LiveKit redelivering it, or the caller leaving afterwards, changes nothing.
    expect((await livekitEvent({ event: 'participant_left', room: { name: web.call_id }, participant: worker })).body).toEqual({ applied: 'ignored' });
    expect((await livekitEvent({ event: 'participant_left', room: { name: web.call_id }, participant: user })).body).toEqual({ applied: 'ignored' });
    await eventually(async () => hooks.events(web.call_id), (events) => events.includes('call_ended'));
    expect(hooks.events(web.call_id).filter((event) => event === 'call_ended')).toHaveLength(1);
  });

  it('refuses a webhook that LiveKit did not sign (401), and ends a web call whose room finished unjoined', async () => {
    const { agent, client } = await liveSetup();
    const web: any = await client.call.createWebCall({ agent_id: agent.agent_id });
    const forged = await livekitEvent({ event: 'room_finished', room: { name: web.call_id } }, { apiSecret: 'not-the-secret-of-this-server-000000' });
    expect(forged.status).toBe(401);
    expect(((await client.call.retrieve(web.call_id)) as any).call_status).toBe('registered');

    const finished = await livekitEvent({ event: 'room_finished', room: { name: web.call_id } });
    expect(finished.body).toEqual({ applied: 'finished' });
    expect(await client.call.retrieve(web.call_id)).toMatchObject({ call_status: 'not_connected', disconnection_reason: 'error_user_not_joined' });
  });
});

describe('a phone call on LiveKit', () => {
  it('dials over the number\'s outbound trunk (created once) and goes live when answered', async () => {
    const { ws, agent, client } = await liveSetup();
    const number = freshNumber();
    await ws.api.post('/import-phone-number', {
      body: { phone_number: number, termination_uri: 'sip:trunk.example.com', outbound_agents: [{ agent_id: agent.agent_id, weight: 1 }] },
    });
    const trunksBefore = livekit.calls('SIP/CreateSIPOutboundTrunk').length;
    const first: any = await client.call.createPhoneCall({ from_number: number, to_number: '+14155550142' });
    const second: any = await client.call.createPhoneCall({ from_number: number, to_number: '+14155550143' });
    for (const created of [first, second]) {
      await eventually(() => client.call.retrieve(created.call_id) as Promise<any>, (c) => c.call_status === 'ongoing');
    }
    expect(livekit.calls('SIP/CreateSIPOutboundTrunk').length - trunksBefore).toBe(1);
    const dialled = livekit.calls('SIP/CreateSIPParticipant').filter((req) => req.body.roomName === first.call_id);
    expect(dialled).toHaveLength(1);
    expect(dialled[0]!.body.sipCallTo).toBe('+14155550142');
    await client.call.stop(first.call_id);
    await client.call.stop(second.call_id);
  });
});
