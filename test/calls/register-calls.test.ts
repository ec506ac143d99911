import { afterAll, describe, expect, it, vi } from 'vitest';
import { startFakeLiveKit, signedWebhook } from '../support/fake-livekit.ts';
import { call } from '../support/http.ts';
import { startTestApp } from '../support/app.ts';
import { newAgent } from '../support/factories.ts';
import { retellClient, sdkFailure } from '../support/sdk.ts';
import { eventually, webhookReceiver } from '../support/webhook-receiver.ts';

// A stand-in for billing's spend check, so one test can refuse (test/billing covers the real check).
const spend = vi.hoisted(() => ({ refuse: new Set<string>() }));
vi.mock('../../shared/billing/spend/spend.ts', async () => {
  const { PaymentRequired } = await import('../../shared/platform/errors.ts');
  return {
    assertCanSpend: async (workspaceId: string) => {
      if (spend.refuse.has(workspaceId)) throw new PaymentRequired('Your balance is too low to place calls');
    },
  };
});

const SIP_SERVICE = 'sip:parley-test.sip.livekit.cloud;transport=tcp';
const JOIN_TIMEOUT_MS = 5000;
const livekit = await startFakeLiveKit();
const app = await startTestApp({
  LIVEKIT_URL: livekit.url,
  LIVEKIT_API_KEY: livekit.apiKey,
  LIVEKIT_API_SECRET: livekit.apiSecret,
  LIVEKIT_SIP_URI: SIP_SERVICE,
  CALL_JOIN_TIMEOUT_MS: String(JOIN_TIMEOUT_MS),
});
const { startBackgroundWork } = await import('../../local/background.ts');
const { config } = await import('../../shared/platform/config.ts');
const background = startBackgroundWork();
afterAll(() => background.stop());

async function setup() {
  const ws = await app.newWorkspace();
  const hooks = await webhookReceiver();
  const { agent } = await newAgent(ws.api, { agent: { webhook_url: hooks.url } });
  return { ws, hooks, agent, client: retellClient(app.url, ws.api_key) };
}

async function livekitEvent(event: Record<string, unknown>) {
  const signed = await signedWebhook(event);
  return call(app.url, 'POST', '/livekit/webhook', {
    rawBody: signed.body,
    headers: { 'content-type': 'application/json', authorization: signed.authorization },
  });
}

const sipLegJoins = (room: string, identity = 'sip_caller') =>
  livekitEvent({
    event: 'participant_joined',
    id: `EV_${room}_${identity}`,
    room: { name: room },
    participant: { identity, kind: 'SIP', attributes: { 'sip.phoneNumber': '+14155550123', 'sip.trunkPhoneNumber': room } },
  });

describe('POST /v2/register-phone-call without SIP routing', () => {
  it('is 422 in the sandbox and on LiveKit without LIVEKIT_SIP_URI, and registers nothing', async () => {
    const { ws, agent, client } = await setup();
    const saved = { url: config.LIVEKIT_URL, sip: config.LIVEKIT_SIP_URI };
    try {
      config.LIVEKIT_URL = undefined;
      const sandbox = await sdkFailure(client.call.registerPhoneCall({ agent_id: agent.agent_id }));
      expect(sandbox).toEqual({
        status: 422,
        body: {
          status: 422,
          message: 'SIP routing is not configured: register-phone-call needs a media server with SIP (set LIVEKIT_URL and LIVEKIT_SIP_URI; docs/calls-media.md)',
        },
      });
      config.LIVEKIT_URL = saved.url;
      config.LIVEKIT_SIP_URI = undefined;
      const alias = await ws.api.post('/register-phone-call', { body: { agent_id: agent.agent_id } });
      expect(alias.status).toBe(422);
      expect(alias.body).toEqual({
        status: 422,
        message: 'SIP routing is not configured: set LIVEKIT_SIP_URI to the media server\'s SIP URI (docs/calls-media.md)',
      });
    } finally {
      config.LIVEKIT_URL = saved.url;
      config.LIVEKIT_SIP_URI = saved.sip;
    }
    expect((await ws.api.post('/v3/list-calls', { body: {} })).body).toEqual([]);
    expect((await ws.api.get('/get-concurrency')).body.current_concurrency).toBe(0);
  });

  it('refuses a bad LIVEKIT_SIP_URI at start, naming the setting', async () => {
    const { loadConfig } = await import('../../shared/platform/config.ts');
    for (const bad of ['https://sip.example.com', 'sip:user@sip.example.com', 'sip:']) {
      expect(() => loadConfig({ LIVEKIT_SIP_URI: bad })).toThrow(/LIVEKIT_SIP_URI: Must be a SIP URI without a user part/);
    }
    expect(loadConfig({ LIVEKIT_SIP_URI: 'sips:abc.sip.livekit.cloud:5061' }).LIVEKIT_SIP_URI).toBe('sips:abc.sip.livekit.cloud:5061');
  });
});

describe('POST /v2/register-phone-call with SIP routing', () => {
  it('registers the call (201) with the SIP URI to dial, then the SIP leg makes it ongoing and the agent is dispatched', async () => {
    const { ws, hooks, agent, client } = await setup();
    const registered: any = await client.call.registerPhoneCall({
      agent_id: agent.agent_id,
      from_number: '+14155550123',
      to_number: '+14155550199',
      direction: 'inbound',
      metadata: { crm_id: 'c-1' },
      retell_llm_dynamic_variables: { customer_name: 'Ada', visits: 3 } as never,
    });
    expect(registered).toMatchObject({
      call_type: 'phone_call',
      call_status: 'registered',
      direction: 'inbound',
      agent_id: agent.agent_id,
      agent_version: 0,
      from_number: '+14155550123',
      to_number: '+14155550199',
      metadata: { crm_id: 'c-1' },
      retell_llm_dynamic_variables: { customer_name: 'Ada', visits: '3' },
    });
    const callId = registered.call_id;
    expect(registered.sip_uri).toBe(`sip:${callId}@parley-test.sip.livekit.cloud;transport=tcp`);
    // The room comes with the SIP leg (LiveKit's dispatch rule): nothing at LiveKit yet.
    expect(livekit.requests.filter((req) => req.body.room === callId || req.body.name === callId)).toEqual([]);
    expect((await ws.api.get('/get-concurrency')).body.current_concurrency).toBe(1);

    // A browser-like participant is not the SIP leg.
    expect((await livekitEvent({ event: 'participant_joined', room: { name: callId }, participant: { identity: 'web', kind: 'STANDARD' } })).body).toEqual({
      applied: 'ignored: a registered call is joined by its SIP leg',
    });
    const joined = await sipLegJoins(callId);
    expect(joined.status).toBe(200);
    expect(joined.body).toEqual({ applied: 'ongoing' });
    // A redelivered webhook dispatches nothing more.
    expect((await sipLegJoins(callId)).body).toEqual({ applied: 'ignored' });
    const dispatches = livekit.calls('AgentDispatchService/CreateDispatch').filter((req) => req.body.room === callId);
    expect(dispatches).toHaveLength(1);
    expect(JSON.parse(dispatches[0]!.body.metadata)).toMatchObject({
      call_id: callId,
      agent_id: agent.agent_id,
      call_type: 'phone_call',
      direction: 'inbound',
      dynamic_variables: { customer_name: 'Ada', visits: '3' },
      report_url: expect.stringContaining(`/internal/calls/${callId}/events`),
    });
    const live: any = await client.call.retrieve(callId);
    expect(live.call_status).toBe('ongoing');
    expect(live.start_timestamp).toEqual(expect.any(Number));

    // The caller hangs up.
    const left = await livekitEvent({ event: 'participant_left', room: { name: callId }, participant: { identity: 'sip_caller', kind: 'SIP' } });
    expect(left.body).toEqual({ applied: 'ended' });
    expect(await client.call.retrieve(callId)).toMatchObject({ call_status: 'ended', disconnection_reason: 'user_hangup' });
    await eventually(async () => hooks.events(callId), (events) => events.includes('call_ended'));
    expect(hooks.events(callId).slice(0, 2)).toEqual(['call_started', 'call_ended']);
    expect((await ws.api.get('/get-concurrency')).body.current_concurrency).toBe(0);
  });

  it('ends a registered call nobody dials within CALL_JOIN_TIMEOUT_MS (registered_call_timeout), giving its slot back', async () => {
    const { ws, hooks, agent, client } = await setup();
    const registered: any = await client.call.registerPhoneCall({ agent_id: agent.agent_id });
    expect(registered.direction).toBe('inbound');
    const ended: any = await eventually(() => client.call.retrieve(registered.call_id), (c: any) => c.call_status !== 'registered', 30_000);
    expect(ended).toMatchObject({ call_status: 'not_connected', disconnection_reason: 'registered_call_timeout' });
    expect(ended.duration_ms).toBe(0);
    expect((await ws.api.get('/get-concurrency')).body.current_concurrency).toBe(0);
    await eventually(async () => hooks.events(registered.call_id), (events) => events.includes('call_ended'));
    expect(hooks.events(registered.call_id)).toEqual(['call_ended']);
    // The SIP leg arriving late finds an ended call: nothing changes, and the room is left alone.
    expect((await sipLegJoins(registered.call_id)).body).toEqual({ applied: 'ignored' });
  });

  it('hangs up a SIP caller who dials a call ID that does not exist', async () => {
    const room = 'call_000000000000000000000000';
    const joined = await sipLegJoins(room);
    expect(joined.body).toEqual({ applied: 'removed: no call for this room' });
    expect(livekit.calls('RoomService/DeleteRoom').map((req) => req.body.room)).toContain(room);
  });

  it('ends the call with error_unknown when LiveKit refuses the agent dispatch', async () => {
    const { agent, client } = await setup();
    const registered: any = await client.call.registerPhoneCall({ agent_id: agent.agent_id });
    livekit.failNext('AgentDispatchService/CreateDispatch', { status: 500, code: 'internal' });
    expect((await sipLegJoins(registered.call_id)).body).toEqual({ applied: 'error: the agent could not be dispatched' });
    expect(await client.call.retrieve(registered.call_id)).toMatchObject({ call_status: 'error', disconnection_reason: 'error_unknown' });
  });

  it('validates the numbers it stores unless ignore_e164_validation, and the agent', async () => {
    const { ws, agent } = await setup();
    const bad = await ws.api.post('/v2/register-phone-call', { body: { agent_id: agent.agent_id, from_number: '4155550123' } });
    expect(bad.status).toBe(400);
    expect(bad.body.message).toBe('from_number 4155550123 is not a valid E.164 number (set ignore_e164_validation to store it as it is)');
    const extension = await ws.api.post('/v2/register-phone-call', {
      body: { agent_id: agent.agent_id, from_number: '1001', to_number: 'reception', ignore_e164_validation: true, direction: 'outbound' },
    });
    expect(extension.status).toBe(201);
    expect(extension.body).toMatchObject({ from_number: '1001', to_number: 'reception', direction: 'outbound' });
    await ws.api.post(`/v2/stop-call/${extension.body.call_id}`);
    const unknown = await ws.api.post('/v2/register-phone-call', { body: { agent_id: 'agent_000000000000000000000000' } });
    expect(unknown.status).toBe(404);
    expect(unknown.body.message).toBe('Agent agent_000000000000000000000000 not found');
    const other = await app.newWorkspace();
    const foreign = await other.api.post('/v2/register-phone-call', { body: { agent_id: agent.agent_id } });
    expect(foreign.status).toBe(404);
    expect(foreign.body.message).toBe(`Agent ${agent.agent_id} not found`);
  });
});

describe('register-phone-call refusals', () => {
  it('is 402 when the workspace cannot spend, and registers nothing', async () => {
    const { ws, agent } = await setup();
    spend.refuse.add(ws.workspace_id);
    try {
      const refused = await ws.api.post('/v2/register-phone-call', { body: { agent_id: agent.agent_id } });
      expect(refused.status).toBe(402);
      expect(refused.body).toEqual({ status: 402, message: 'Your balance is too low to place calls' });
    } finally {
      spend.refuse.delete(ws.workspace_id);
    }
    expect((await ws.api.post('/v3/list-calls', { body: {} })).body).toEqual([]);
    expect((await ws.api.get('/get-concurrency')).body.current_concurrency).toBe(0);
  });

  it('admits under the concurrency limit: outbound ones leave the reserved inbound slots, inbound ones may use them', async () => {
    const { ws, agent } = await setup();
    expect((await ws.api.patch('/workspace', { body: { concurrency_limit: 2 } })).status).toBe(200);
    expect((await ws.api.patch('/update-concurrency-settings', { body: { reserved_inbound_concurrency: 1 } })).status).toBe(200);
    const register = (direction: 'inbound' | 'outbound') => ws.api.post('/v2/register-phone-call', { body: { agent_id: agent.agent_id, direction } });

    const outbound = await register('outbound');
    expect(outbound.status).toBe(201);
    const refused = await register('outbound');
    expect(refused.status).toBe(429);
    expect(refused.body.message).toBe('Concurrency limit reached: 1 calls in progress (limit 2, 1 reserved for inbound calls)');
    const inbound = await register('inbound');
    expect(inbound.status).toBe(201);
    const full = await register('inbound');
    expect(full.status).toBe(429);
    const calls = (await ws.api.post('/v3/list-calls', { body: {} })).body;
    expect(calls.map((c: { call_id: string }) => c.call_id).sort()).toEqual([outbound.body.call_id, inbound.body.call_id].sort());
    for (const id of [outbound.body.call_id, inbound.body.call_id]) expect((await ws.api.post(`/v2/stop-call/${id}`)).status).toBe(200);
    expect((await ws.api.get('/get-concurrency')).body.current_concurrency).toBe(0);
  });

  it('answers a repeated idempotency_key with the first call, and 422 for the key with another body', async () => {
    const { ws, agent } = await setup();
    const body = { agent_id: agent.agent_id, idempotency_key: 'register-1', metadata: { n: 1 } };
    const repeats = await Promise.all(Array.from({ length: 5 }, () => ws.api.post('/v2/register-phone-call', { body })));
    const created = repeats.filter((res) => res.status === 201);
    // Concurrent repeats either get the first call or 409 while it is being placed; never a second call.
    expect(repeats.every((res) => res.status === 201 || res.status === 409)).toBe(true);
    expect(new Set(created.map((res) => res.body.call_id)).size).toBe(1);
    const again = await ws.api.post('/v2/register-phone-call', { body });
    expect(again.status).toBe(201);
    expect(again.body).toEqual(created[0]!.body);
    const different = await ws.api.post('/v2/register-phone-call', { body: { ...body, metadata: { n: 2 } } });
    expect(different.status).toBe(422);
    expect(different.body.message).toBe('idempotency_key register-1 was already used with a different request');
    expect((await ws.api.post('/v3/list-calls', { body: {} })).body).toHaveLength(1);
    await ws.api.post(`/v2/stop-call/${again.body.call_id}`);
  });
});
