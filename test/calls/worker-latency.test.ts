import { describe, expect, it } from 'vitest';
import { startLiveKitTestApp, signedWebhook } from '../support/fake-livekit.ts';
import { call } from '../support/http.ts';
import { newAgent } from '../support/factories.ts';
import { retellClient } from '../support/sdk.ts';

// The media server is the fake LiveKit Twirp server: settings are read once, so it starts first.
const { livekit, app } = await startLiveKitTestApp();

const post = (path: string, rawBody: string, headers: Record<string, string>) =>
  call(app.url, 'POST', path, { rawBody, headers: { 'content-type': 'application/json', ...headers } });

/** A live web call on LiveKit, and its worker's report route. */
async function liveWebCall() {
  const ws = await app.newWorkspace();
  const { agent } = await newAgent(ws.api);
  const client = retellClient(app.url, ws.api_key);
  const web: any = await client.call.createWebCall({ agent_id: agent.agent_id });
  const dispatch = livekit.calls('AgentDispatchService/CreateDispatch').find((req) => req.body.room === web.call_id)!;
  const { report_token } = JSON.parse(dispatch.body.metadata);
  const signed = await signedWebhook({ event: 'participant_joined', room: { name: web.call_id }, participant: { identity: 'web_user', kind: 'STANDARD' } });
  expect((await post('/livekit/webhook', signed.body, { authorization: signed.authorization })).status).toBe(200);
  const report = (body: Record<string, unknown>) =>
    post(`/internal/calls/${web.call_id}/events`, JSON.stringify({ timestamp: Date.now(), ...body }), { authorization: `Bearer ${report_token}` });
  return { client, callId: web.call_id as string, report };
}

describe('call.latency from the worker\'s figures', () => {
  it('computes each metric\'s percentiles from the figures call_ended carries, once however often it is sent', async () => {
    const { client, callId, report } = await liveWebCall();
    const e2e = [900, 640, 710, 820, 680, 1500, 700, 760, 650, 690];
    const ended = {
      event: 'call_ended',
      sequence: 1,
      disconnection_reason: 'user_hangup',
      latency: { e2e, llm: [310, 290, 450], tts: [150, 170], asr: [95, 120, 110] },
    };
    expect((await report(ended)).status).toBe(204);
    const done: any = await client.call.retrieve(callId);
    expect(done.latency.e2e).toEqual({ p50: 710, p90: 1500, p95: 1500, p99: 1500, min: 640, max: 1500, num: 10, values: e2e });
    expect(done.latency.llm).toEqual({ p50: 310, p90: 450, p95: 450, p99: 450, min: 290, max: 450, num: 3, values: [310, 290, 450] });
    expect(done.latency.tts).toMatchObject({ p50: 170, min: 150, max: 170, num: 2 });
    expect(done.latency.asr).toMatchObject({ p50: 110, num: 3 });
    // A retry of the same report (the worker never saw the answer) changes nothing.
    const again = await report({ ...ended, latency: { e2e: [1] } });
    expect(again.status).toBe(409);
    expect(again.body.message).toBe(`Call ${callId} has ended`);
    expect(((await client.call.retrieve(callId)) as any).latency.e2e.num).toBe(10);
  });

  it('shows no latency for a call whose worker measured nothing, and only the metrics it measured', async () => {
    const quiet = await liveWebCall();
    expect((await quiet.report({ event: 'call_ended', sequence: 1, disconnection_reason: 'inactivity' })).status).toBe(204);
    const none: any = await quiet.client.call.retrieve(quiet.callId);
    expect(none.latency).toBeUndefined();

    const partial = await liveWebCall();
    expect((await partial.report({ event: 'call_ended', sequence: 1, disconnection_reason: 'agent_hangup', latency: { tts: [120], e2e: [] } })).status).toBe(204);
    const some: any = await partial.client.call.retrieve(partial.callId);
    expect(Object.keys(some.latency)).toEqual(['tts']);
  });

  it('refuses figures it does not know, negative ones, and more than 2000 of a metric (400), leaving the call on', async () => {
    const { client, callId, report } = await liveWebCall();
    const base = { event: 'call_ended', sequence: 1, disconnection_reason: 'user_hangup' };
    for (const latency of [{ s2s: [100] }, { e2e: [-5] }, { e2e: Array.from({ length: 2001 }, () => 700) }, { llm: [1.5] }]) {
      const refused = await report({ ...base, latency });
      expect(refused.status).toBe(400);
    }
    expect(((await client.call.retrieve(callId)) as any).call_status).toBe('ongoing');
  });
});
