import { TokenVerifier } from 'livekit-server-sdk';
import { afterAll, describe, expect, it } from 'vitest';
import { startBackgroundWork } from '../../local/background.ts';
import { startTestApp } from '../support/app.ts';
import { newAgentWithNumber } from '../support/factories.ts';
import { retellClient, sdkFailure } from '../support/sdk.ts';
import { eventually } from '../support/webhook-receiver.ts';

const app = await startTestApp();
const background = startBackgroundWork();
afterAll(() => background.stop());

const verifier = new TokenVerifier('devkey', 'secret');

async function setup() {
  const ws = await app.newWorkspace();
  const { number } = await newAgentWithNumber(ws.api);
  return { ws, number, client: retellClient(app.url, ws.api_key) };
}

/** A sandbox call that is ongoing, with a scripted callee speaking a line a second. */
async function ongoingCall(ctx: Awaited<ReturnType<typeof setup>>, says = ['Hello?', 'Line two', 'Line three', 'Line four'], callMs = 6000) {
  const created = await ctx.ws.api.post('/v2/create-phone-call', {
    body: { from_number: ctx.number, to_number: '+14155555555', metadata: { sandbox_call_ms: callMs, sandbox_user_says: says } },
  });
  expect(created.status).toBe(201);
  const callId = created.body.call_id as string;
  await eventually(() => ctx.ws.api.get(`/v2/get-call/${callId}`), (r) => r.body.call_status === 'ongoing' && r.body.transcript_object?.length >= 1);
  return callId;
}

const getCall = async (ctx: Awaited<ReturnType<typeof setup>>, callId: string) => (await ctx.ws.api.get(`/v2/get-call/${callId}`)).body;

describe('listen, viewers and leave', () => {
  it('answers a subscribe-only token, lists the listener, and removes it on leave', async () => {
    const ctx = await setup();
    const callId = await ongoingCall(ctx);
    const listened = await ctx.ws.api.post(`/v2/calls/${callId}/listen`);
    expect(listened.status).toBe(200);
    expect(listened.body).toMatchObject({ room_name: callId, transport: 'livekit', url: 'ws://127.0.0.1:7880' });
    expect(listened.body.participant_id).toMatch(/^listener_[0-9a-f]{24}$/);
    const claims = await verifier.verify(listened.body.access_token);
    expect(claims.sub).toBe(listened.body.participant_id);
    expect(claims.video).toMatchObject({ room: callId, roomJoin: true, canSubscribe: true, canPublish: false, canPublishData: false, hidden: true });
    expect(listened.body.expires_at).toBe((claims.exp as number) * 1000);

    // retell-sdk's listenLive reaches the same route.
    const second: any = await ctx.client.call.listenLive(callId);
    expect(second.participant_id).toMatch(/^listener_/);

    const viewers = await ctx.ws.api.get(`/v2/calls/${callId}/viewers`);
    expect(viewers.status).toBe(200);
    expect(viewers.body.map((v: any) => v.participant_id)).toEqual([listened.body.participant_id, second.participant_id]);
    expect(viewers.body.every((v: any) => v.role === 'listener')).toBe(true);

    const left = await ctx.ws.api.post(`/v2/calls/${callId}/leave`, { body: { participant_id: listened.body.participant_id } });
    expect(left.status).toBe(200);
    expect(left.body).toEqual({ success: true });
    expect((await ctx.ws.api.get(`/v2/calls/${callId}/viewers`)).body.map((v: any) => v.participant_id)).toEqual([second.participant_id]);
    const again = await ctx.ws.api.post(`/v2/calls/${callId}/leave`, { body: { participant_id: listened.body.participant_id } });
    expect(again.status).toBe(404);
    expect(again.body.message).toBe(`Participant ${listened.body.participant_id} is not a viewer of call ${callId}`);
    await ctx.ws.api.post(`/v2/stop-call/${callId}`);
  });
});

describe('supervisor-say and update-live-call', () => {
  it('makes the agent say the text once, as its next line, while the scripted callee\'s lines all still come', async () => {
    const ctx = await setup();
    const says = ['Hello?', 'Line two', 'Line three', 'Line four'];
    const callId = await ongoingCall(ctx, says);
    const said = await ctx.ws.api.post(`/v2/calls/${callId}/supervisor-say`, { body: { text: 'Please hold for a moment.' } });
    expect(said.status).toBe(200);
    expect(said.body).toEqual({ success: true });
    // The say and the callee's turns race for the transcript: neither is lost nor doubled.
    const call = await eventually(() => getCall(ctx, callId), (c) => c.call_status === 'ended');
    const entries = call.transcript_object.map((e: any) => `${e.role}: ${e.content}`);
    expect(entries.filter((entry: string) => entry === 'agent: Please hold for a moment.')).toHaveLength(1);
    expect(call.transcript_object.filter((e: any) => e.role === 'user').map((e: any) => e.content)).toEqual(says);
  });

  it('makes the agent of a silent sandbox callee say the text at once', async () => {
    const ctx = await setup();
    const callId = await ongoingCall(ctx, [], 60_000);
    const opening = (await getCall(ctx, callId)).transcript_object;
    expect(opening.map((e: any) => e.role)).toEqual(['agent']);
    const said = await ctx.ws.api.post(`/v2/calls/${callId}/supervisor-say`, { body: { text: 'A supervisor is joining.' } });
    expect(said.status).toBe(200);
    const call = await eventually(() => getCall(ctx, callId), (c) => c.transcript_object.length > 1);
    expect(call.transcript_object.map((e: any) => [e.role, e.content])).toEqual([
      ['agent', opening[0].content],
      ['agent', 'A supervisor is joining.'],
    ]);
    await ctx.ws.api.post(`/v2/stop-call/${callId}`);
  });

  it('changes variables and metadata for the rest of the call, and refuses an invalid override', async () => {
    const ctx = await setup();
    const callId = await ongoingCall(ctx);
    const updated: any = await ctx.client.call.updateLive(callId, {
      fields_to_override: { override_dynamic_variables: { discount: '15%' }, metadata: { stage: 'billing' } },
    });
    expect(updated).toEqual({ success: true });
    const call = await getCall(ctx, callId);
    expect(call.retell_llm_dynamic_variables).toMatchObject({ discount: '15%' });
    expect(call.metadata).toEqual({ stage: 'billing' });
    expect(call).not.toHaveProperty('live_patch');
    expect(call).not.toHaveProperty('live_log');

    const bad = await ctx.ws.api.patch(`/update-live-call/${callId}`, { body: { agent_override: { agent: { voice_speed: 9 } } } });
    expect(bad.status).toBe(400);
    expect(bad.body.message).toMatch(/^agent_override\.agent\.voice_speed: /);

    const override = await ctx.ws.api.patch(`/v2/update-live-call/${callId}`, { body: { agent_override: { agent: { voice_speed: 1.5 } } } });
    expect(override.status).toBe(200);
    const cleared = await ctx.ws.api.patch(`/update-live-call/${callId}`, { body: { fields_to_override: { override_dynamic_variables: null } } });
    expect(cleared.status).toBe(200);
    expect((await getCall(ctx, callId)).retell_llm_dynamic_variables).not.toHaveProperty('discount');

    // The data storage setting only tightens: what a stricter one removed cannot come back.
    const strict = await ctx.ws.api.patch(`/update-live-call/${callId}`, { body: { fields_to_override: { data_storage_setting: 'everything_except_pii' } } });
    expect(strict.status).toBe(200);
    const looser = await ctx.ws.api.patch(`/update-live-call/${callId}`, { body: { fields_to_override: { data_storage_setting: 'everything' } } });
    expect(looser.body).toEqual({ status: 400, message: 'data_storage_setting: Cannot change from everything_except_pii to the less restrictive everything' });
    expect((await getCall(ctx, callId)).data_storage_setting).toBe('everything_except_pii');
    await ctx.ws.api.post(`/v2/stop-call/${callId}`);
  });
});

describe('take-over', () => {
  it('upgrades a listener to a publishing supervisor, silences the agent, and ends call_take_over', async () => {
    const ctx = await setup();
    const callId = await ongoingCall(ctx, ['Hello?', 'Anyone there?', 'Okay.'], 3500);
    const listener = (await ctx.ws.api.post(`/v2/calls/${callId}/listen`)).body;
    const taken: any = await ctx.client.call.takeOverLive(callId, { participant_id: listener.participant_id });
    expect(taken).toMatchObject({ success: true, participant_id: listener.participant_id, room_name: callId });
    const claims = await verifier.verify(taken.access_token);
    expect(claims.video).toMatchObject({ room: callId, canPublish: true, canSubscribe: true });
    expect((await ctx.ws.api.get(`/v2/calls/${callId}/viewers`)).body).toEqual([
      expect.objectContaining({ participant_id: listener.participant_id, role: 'supervisor' }),
    ]);
    const twice = await ctx.ws.api.post(`/v2/calls/${callId}/take-over`, { body: {} });
    expect(twice.status).toBe(409);
    expect(twice.body.message).toBe(`Call ${callId} was already taken over by ${listener.participant_id}`);
    const say = await ctx.ws.api.post(`/v2/calls/${callId}/supervisor-say`, { body: { text: 'Hi' } });
    expect(say.status).toBe(409);
    expect(say.body.message).toBe(`Call ${callId} was taken over: the agent no longer speaks`);
    const unknown = await ctx.ws.api.post(`/v2/calls/${callId}/take-over`, { body: { participant_id: 'listener_000000000000000000000000' } });
    expect(unknown.status).toBe(404);

    const ended = await eventually(() => getCall(ctx, callId), (c) => c.call_status === 'ended');
    expect(ended.disconnection_reason).toBe('call_take_over');
    // After the take-over the callee's lines get no agent answer: the transcript ends with the callee.
    const roles = ended.transcript_object.map((e: any) => e.role);
    expect(roles.at(-1)).toBe('user');
    expect(roles.slice(-2)).toEqual(['user', 'user']);
  });

  it('without a participant_id makes a new supervisor', async () => {
    const ctx = await setup();
    const callId = await ongoingCall(ctx);
    const taken = await ctx.ws.api.post(`/v2/take-over-live-call/${callId}`, { body: {} });
    expect(taken.status).toBe(200);
    expect(taken.body.participant_id).toMatch(/^supervisor_[0-9a-f]{24}$/);
    await ctx.ws.api.post(`/v2/stop-call/${callId}`);
    const ended = await eventually(() => getCall(ctx, callId), (c) => c.call_status === 'ended');
    expect(ended.disconnection_reason).toBe('call_take_over');
  });
});

describe('controls on a call that is not ongoing, and of another workspace', () => {
  it('are 400 naming the status, and 404 for another workspace', async () => {
    const ctx = await setup();
    const callId = await ongoingCall(ctx);
    await ctx.ws.api.post(`/v2/stop-call/${callId}`);
    const message = `Call ${callId} is ended: live control needs an ongoing call`;
    const attempts = [
      ctx.ws.api.patch(`/update-live-call/${callId}`, { body: { fields_to_override: { metadata: {} } } }),
      ctx.ws.api.post(`/v2/calls/${callId}/listen`),
      ctx.ws.api.post(`/v2/calls/${callId}/take-over`, { body: {} }),
      ctx.ws.api.post(`/v2/calls/${callId}/supervisor-say`, { body: { text: 'Hi' } }),
      ctx.ws.api.get(`/v2/calls/${callId}/viewers`),
      ctx.ws.api.post(`/v2/calls/${callId}/leave`, { body: { participant_id: 'listener_000000000000000000000000' } }),
    ];
    for (const response of await Promise.all(attempts)) {
      expect(response.status).toBe(400);
      expect(response.body).toEqual({ status: 400, message });
    }
    const failure = await sdkFailure(ctx.client.call.listenLive(callId));
    expect(failure.status).toBe(400);

    const other = await app.newWorkspace();
    for (const response of await Promise.all([
      other.api.post(`/v2/calls/${callId}/listen`),
      other.api.patch(`/update-live-call/${callId}`, { body: {} }),
      other.api.get(`/v2/calls/${callId}/viewers`),
      other.api.get(`/v2/calls/${callId}/stream`),
    ])) {
      expect(response.status).toBe(404);
      expect(response.body.message).toBe('Call not found');
    }
    const bad = await ctx.ws.api.post(`/v2/calls/${callId}/supervisor-say`, { body: { text: '' } });
    expect(bad.status).toBe(400);
  });
});
