import { verify as retellVerify } from 'retell-sdk';
import { afterAll, describe, expect, it } from 'vitest';
import { startBackgroundWork } from '../../local/background.ts';
import { startTestApp } from '../support/app.ts';
import { newAgentWithNumber } from '../support/factories.ts';
import { retellClient, sdkFailure } from '../support/sdk.ts';
import { eventually, webhookReceiver } from '../support/webhook-receiver.ts';

const app = await startTestApp();
const background = startBackgroundWork();
afterAll(() => background.stop());

/** A workspace with an agent whose webhooks go to a receiver, and a number that dials with it. */
async function callSetup(agentFields: Record<string, unknown> = {}) {
  const ws = await app.newWorkspace();
  const hooks = await webhookReceiver();
  const { agent, number } = await newAgentWithNumber(ws.api, { agent: { webhook_url: hooks.url, ...agentFields } });
  return { ws, hooks, agent, number, client: retellClient(app.url, ws.api_key) };
}

const callee = (lastFour = '5555') => `+1415555${lastFour}`;
const getCall = (client: ReturnType<typeof retellClient>, callId: string) => client.call.retrieve(callId) as Promise<any>;

describe('a sandbox phone call, from dial to analysis', () => {
  it('runs the conversation and sends call_started, call_ended and call_analyzed, signed', async () => {
    const { ws, hooks, agent, number, client } = await callSetup();
    const created: any = await client.call.createPhoneCall({
      from_number: number,
      to_number: callee(),
      retell_llm_dynamic_variables: { customer: 'Ada', vip: true as never, visits: 3 as never },
      metadata: { sandbox_call_ms: 3000, sandbox_user_says: ['Hello?', 'What are your hours?'] },
    });
    expect(created).toMatchObject({
      call_type: 'phone_call',
      call_status: 'registered',
      direction: 'outbound',
      agent_id: agent.agent_id,
      agent_version: 0,
      from_number: number,
      to_number: callee(),
      retell_llm_dynamic_variables: { customer: 'Ada', vip: 'true', visits: '3' },
    });
    expect(created.call_id).toMatch(/^call_[0-9a-f]{24}$/);

    const analyzed = await eventually(() => getCall(client, created.call_id), (call) => call.call_analysis !== undefined);
    expect(analyzed.call_status).toBe('ended');
    expect(analyzed.disconnection_reason).toBe('user_hangup');
    expect(analyzed.duration_ms).toBeGreaterThanOrEqual(3000);
    expect(analyzed.end_timestamp - analyzed.start_timestamp).toBe(analyzed.duration_ms);
    const roles = analyzed.transcript_object.map((entry: any) => entry.role);
    expect(roles).toEqual(['agent', 'user', 'agent', 'user', 'agent']);
    expect(analyzed.transcript_object[1].content).toBe('Hello?');
    expect(analyzed.transcript_object[3].content).toBe('What are your hours?');
    expect(analyzed.transcript).toContain('User: What are your hours?');
    expect(analyzed.call_cost.combined_cost).toBeGreaterThan(0);
    expect(analyzed.call_cost.product_costs.map((line: any) => line.product)).toEqual(['voice_engine', 'llm', 'telephony']);

    await eventually(async () => hooks.events(created.call_id), (events) => events.includes('call_analyzed'));
    expect(hooks.events(created.call_id)).toEqual(['call_started', 'call_ended', 'call_analyzed']);
    for (const hit of hooks.hits) {
      const signature = hit.headers['x-retell-signature'] as string;
      expect(await retellVerify(hit.body, ws.api_key, signature)).toBe(true);
    }
    const ended = hooks.hits.find((hit) => hit.json.event === 'call_ended')!;
    expect(ended.json.call).toMatchObject({ call_id: created.call_id, call_status: 'ended' });
    expect(ended.json.call).not.toHaveProperty('engine');
    expect(ended.json.call).not.toHaveProperty('workspace_id');
  });

  it.each([
    ['0001', 'dial_busy'],
    ['0002', 'dial_no_answer'],
    ['0004', 'dial_failed'],
  ])('a number ending %s is not connected (%s), with no call_started', async (lastFour, reason) => {
    const { hooks, number, client } = await callSetup();
    const created: any = await client.call.createPhoneCall({ from_number: number, to_number: callee(lastFour) });
    const call = await eventually(() => getCall(client, created.call_id), (c) => c.call_status !== 'registered');
    expect(call).toMatchObject({ call_status: 'not_connected', disconnection_reason: reason, duration_ms: 0 });
    await eventually(async () => hooks.events(created.call_id), (events) => events.includes('call_ended'));
    expect(hooks.events(created.call_id)).toEqual(['call_ended']);
    expect(call.call_analysis).toBeUndefined();
  });

  it('a callee given a length but no script says three ordinary lines, and hangs up at that length', async () => {
    const { ws, number, client } = await callSetup();
    const [talking, brief]: any[] = await Promise.all([
      client.call.createPhoneCall({ from_number: number, to_number: callee(), metadata: { sandbox_call_ms: 60_000 } }),
      client.call.createPhoneCall({ from_number: number, to_number: callee('5556'), metadata: { sandbox_call_ms: 0 } }),
    ]);
    const ordinary = ['Hi, yes, this is a good time.', 'Can you tell me a bit more?', 'Okay, thank you. That is all for now.'];
    const userLines = (call: any) => (call.transcript_object ?? []).filter((entry: any) => entry.role === 'user').map((entry: any) => entry.content);
    const talked = await eventually(() => getCall(client, talking.call_id), (call) => userLines(call).length === 3);
    expect(userLines(talked)).toEqual(ordinary);
    expect(talked.call_status).toBe('ongoing');
    expect((await ws.api.post(`/v2/stop-call/${talking.call_id}`)).status).toBe(200);
    // The ordinary lines do not hold the hang-up as a script's do: the length asked for wins (the
    // hang-up was due a second before the first line).
    const hungUp = await eventually(() => getCall(client, brief.call_id), (call) => call.call_status === 'ended');
    expect(hungUp.disconnection_reason).toBe('user_hangup');
    expect(hungUp.transcript_object.map((entry: any) => entry.role)).toEqual(['agent']);
  });

  it('a number ending 0003 reaches voicemail', async () => {
    const { number, client } = await callSetup();
    const created: any = await client.call.createPhoneCall({ from_number: number, to_number: callee('0003') });
    const call = await eventually(() => getCall(client, created.call_id), (c) => c.call_analysis !== undefined);
    expect(call).toMatchObject({ call_status: 'ended', disconnection_reason: 'voicemail_reached' });
    expect(call.call_analysis.in_voicemail).toBe(true);
  });
});

describe('create-phone-call refusals', () => {
  it('refuses a to_number that is not E.164, and a from_number of another workspace', async () => {
    const { number, client } = await callSetup();
    expect(await sdkFailure(client.call.createPhoneCall({ from_number: number, to_number: '415-555-1234' }))).toEqual({
      status: 400,
      body: { status: 400, message: 'to_number 415-555-1234 is not a valid E.164 number' },
    });
    const other = await callSetup();
    expect(await sdkFailure(client.call.createPhoneCall({ from_number: other.number, to_number: callee() }))).toEqual({
      status: 404,
      body: { status: 404, message: `from_number ${other.number} is not a number in this workspace` },
    });
  });

  it('refuses a bad sandbox script before anything is created', async () => {
    const { ws, number } = await callSetup();
    const res = await ws.api.post('/v2/create-phone-call', {
      body: { from_number: number, to_number: callee(), metadata: { sandbox_call_ms: -1 } },
    });
    expect(res.status).toBe(400);
    expect(res.body.message).toBe('metadata.sandbox_call_ms: Must be a whole number from 0 to 3600000');
    expect((await ws.api.post('/v3/list-calls', { body: {} })).body).toEqual([]);
  });
});

describe('stop, update, delete and list', () => {
  it('stops an ongoing call with manual_stopped, and refuses to stop it again', async () => {
    const { number, client, ws } = await callSetup();
    const created: any = await client.call.createPhoneCall({ from_number: number, to_number: callee(), metadata: { sandbox_call_ms: 60_000 } });
    await eventually(() => getCall(client, created.call_id), (c) => c.call_status === 'ongoing');
    await client.call.stop(created.call_id);
    const stopped = await getCall(client, created.call_id);
    expect(stopped).toMatchObject({ call_status: 'ended', disconnection_reason: 'manual_stopped' });
    const again = await ws.api.post(`/v2/stop-call/${created.call_id}`, { body: {} });
    expect(again.status).toBe(400);
    expect(again.body.message).toBe(`Call ${created.call_id} is ended: only a registered or ongoing call can be stopped`);
  });

  it('updates metadata, deletes the call (then 404), and keeps calls of other workspaces apart', async () => {
    const { number, client } = await callSetup();
    const created: any = await client.call.createPhoneCall({ from_number: number, to_number: callee('0001') });
    const updated: any = await client.call.update(created.call_id, { metadata: { crm_id: 'c-1' } });
    expect(updated.metadata).toEqual({ crm_id: 'c-1' });

    const stranger = await callSetup();
    expect((await sdkFailure(stranger.client.call.retrieve(created.call_id))).status).toBe(404);
    expect((await sdkFailure(stranger.client.call.delete(created.call_id))).status).toBe(404);

    await eventually(() => getCall(client, created.call_id), (c) => c.call_status === 'not_connected');
    await client.call.delete(created.call_id);
    expect(await sdkFailure(client.call.retrieve(created.call_id))).toEqual({ status: 404, body: { status: 404, message: 'Call not found' } });
  });

  it('lists newest first as an array, and as a page for retell-sdk, walking every page once', async () => {
    const { ws, number, client } = await callSetup();
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) ids.push(((await client.call.createPhoneCall({ from_number: number, to_number: callee('0004') })) as any).call_id);

    const array = await ws.api.post('/v3/list-calls', { body: { limit: 3 } });
    expect(array.status).toBe(200);
    expect(array.body.map((call: any) => call.call_id)).toEqual([...ids].reverse().slice(0, 3));

    for (const order of ['descending', 'ascending'] as const) {
      const seen: string[] = [];
      let key: string | undefined;
      for (;;) {
        const page: any = await client.call.list({ limit: 3, sort_order: order, ...(key ? { pagination_key: key } : {}) });
        seen.push(...page.items.map((call: any) => call.call_id));
        if (!page.has_more) break;
        key = page.pagination_key;
      }
      expect(seen).toEqual(order === 'descending' ? [...ids].reverse() : ids);
    }

    const filtered = await ws.api.post('/v3/list-calls', { body: { filter_criteria: { call_status: 'registered', to_number: [callee('0009')] } } });
    expect(filtered.body).toEqual([]);
    const bad = await ws.api.post('/v3/list-calls', { body: { pagination_key: 'call_000000000000000000000000' } });
    expect(bad.status).toBe(400);
    expect(bad.body).toEqual({ status: 400, message: 'Invalid pagination_key' });
  });
});

describe('web calls', () => {
  it('answers a LiveKit token for the call room, valid for an hour', async () => {
    const { agent, client } = await callSetup();
    const before = Date.now();
    const web: any = await client.call.createWebCall({ agent_id: agent.agent_id, metadata: { source: 'test' } });
    expect(web).toMatchObject({ call_type: 'web_call', call_status: 'registered', agent_id: agent.agent_id, transport: 'livekit' });
    expect(web.expires_at).toBeGreaterThanOrEqual(before + 3_600_000 - 1000);
    const claims = JSON.parse(Buffer.from(web.access_token.split('.')[1], 'base64url').toString());
    expect(claims.video).toMatchObject({ room: web.call_id, roomJoin: true });
    expect(web.ice_servers.length).toBe(1);
  });

  it('get-call, update-call and rerun-call-analysis answer a web call with a valid token to its room (retell-sdk WebCallResponse)', async () => {
    const { ws, agent, number, client } = await callSetup();
    const web = await client.call.createWebCall({ agent_id: agent.agent_id });
    /** The token as the answers must carry it: for the call's room and its web user, an hour from the read, and accepted by the call's public log. */
    const expectRoomToken = async (answer: Awaited<ReturnType<typeof client.call.retrieve>>, before: number) => {
      expect(answer.call_type).toBe('web_call');
      if (answer.call_type !== 'web_call') return;
      const claims = JSON.parse(Buffer.from(answer.access_token.split('.')[1]!, 'base64url').toString());
      expect(claims.sub).toBe(`web_user_${web.call_id}`);
      expect(claims.video).toEqual({ room: web.call_id, roomJoin: true, canPublish: true, canSubscribe: true, canPublishData: true });
      expect((answer as unknown as { expires_at: number }).expires_at).toBe(claims.exp * 1000);
      expect(claims.exp * 1000).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000 + 3_600_000);
      const log = await fetch(`${app.url}/public/calls/${web.call_id}/log`, { headers: { authorization: `Bearer ${answer.access_token}` } });
      expect(log.status).toBe(200);
    };

    let before = Date.now();
    await expectRoomToken(await client.call.retrieve(web.call_id), before);
    before = Date.now();
    await expectRoomToken(await client.call.update(web.call_id, { metadata: { step: 2 } }), before);
    expect((await ws.api.post(`/v2/stop-call/${web.call_id}`)).status).toBe(200);
    before = Date.now();
    await expectRoomToken(await client.call.rerunAnalysis(web.call_id), before);

    // A phone call has no room token to hand out.
    const phone = await client.call.createPhoneCall({ from_number: number, to_number: callee(), metadata: { sandbox_call_ms: 60_000 } });
    expect(await client.call.retrieve(phone.call_id)).not.toHaveProperty('access_token');
    expect((await ws.api.post(`/v2/stop-call/${phone.call_id}`)).status).toBe(200);
  });
});
