import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { startFakeLiveKit, signedWebhook } from '../support/fake-livekit.ts';
import { call } from '../support/http.ts';
import { startTestApp } from '../support/app.ts';
import { freshNumber, newAgent } from '../support/factories.ts';
import { retellClient } from '../support/sdk.ts';
import { eventually, webhookReceiver } from '../support/webhook-receiver.ts';

// Inbound phone calls through LiveKit's SIP service: the dispatch rule puts each caller in an
// `inbound-` room, and the caller's participant_joined webhook runs inbound admission.
const livekit = await startFakeLiveKit();
const app = await startTestApp({
  LIVEKIT_URL: livekit.url,
  LIVEKIT_API_KEY: livekit.apiKey,
  LIVEKIT_API_SECRET: livekit.apiSecret,
  INBOUND_QUEUE_TIMEOUT_MS: '1000',
});
const { startBackgroundWork } = await import('../../local/background.ts');
const background = startBackgroundWork();
afterAll(() => background.stop());

const CALLER = '+14155550123';

async function livekitEvent(event: Record<string, unknown>) {
  const signed = await signedWebhook(event);
  return call(app.url, 'POST', '/livekit/webhook', {
    rawBody: signed.body,
    headers: { 'content-type': 'application/json', authorization: signed.authorization },
  });
}

/** A caller dialled `number`: LiveKit's dispatch rule made a room, and the caller joined it. */
function sipCaller(number: string, attributes: Record<string, string> = {}) {
  const room = `inbound-_${CALLER}_${randomBytes(4).toString('hex')}`;
  livekit.openRoom(room);
  const participant = {
    identity: `sip_${CALLER}`,
    kind: 'SIP',
    attributes: { 'sip.phoneNumber': CALLER, 'sip.trunkPhoneNumber': number, 'sip.callID': 'SCL_abc', ...attributes },
  };
  return {
    room,
    participant,
    joins: () => livekitEvent({ event: 'participant_joined', id: `EV_join_${room}`, room: { name: room }, participant }),
    leaves: () => livekitEvent({ event: 'participant_left', id: `EV_left_${room}`, room: { name: room }, participant }),
  };
}

async function inboundSetup(numberFields: Record<string, unknown> = {}) {
  const ws = await app.newWorkspace();
  const hooks = await webhookReceiver();
  const { agent } = await newAgent(ws.api, { agent: { webhook_url: hooks.url } });
  const number = freshNumber();
  const imported = await ws.api.post('/import-phone-number', {
    body: { phone_number: number, termination_uri: 'sip:trunk.example.com', inbound_agents: [{ agent_id: agent.agent_id, weight: 1 }], ...numberFields },
  });
  expect(imported.status, JSON.stringify(imported.body)).toBe(201);
  return { ws, hooks, agent, number, client: retellClient(app.url, ws.api_key) };
}

const listCalls = async (ws: Awaited<ReturnType<typeof inboundSetup>>['ws']) => (await ws.api.post('/v3/list-calls', { body: {} })).body as any[];

describe('an inbound SIP caller on LiveKit', () => {
  it('is admitted as a call, gets the agent dispatched into its room, goes live, and ends when the caller hangs up', async () => {
    const { ws, hooks, agent, number, client } = await inboundSetup();
    const caller = sipCaller(number, { 'sip.h.x-customer-id': 'c-42', 'sip.h.diversion': '<sip:+14155550100@carrier>' });
    const joined = await caller.joins();
    expect(joined.status).toBe(200);
    // The webhook claims the room and queues the admission for the call-steps job.
    expect(joined.body).toEqual({ applied: 'queued' });

    await eventually(
      async () => livekit.calls('AgentDispatchService/CreateDispatch').filter((req) => req.body.room === caller.room),
      (list) => list.length === 1,
      20_000,
    );
    const [created] = await listCalls(ws);
    expect(created).toMatchObject({
      call_type: 'phone_call',
      direction: 'inbound',
      agent_id: agent.agent_id,
      from_number: CALLER,
      to_number: number,
      retell_llm_dynamic_variables: { 'x-customer-id': 'c-42', diversion: '<sip:+14155550100@carrier>' },
      metadata: { sip_headers: { 'x-customer-id': 'c-42', diversion: '<sip:+14155550100@carrier>' } },
    });
    const callId = created.call_id;
    const dispatches = livekit.calls('AgentDispatchService/CreateDispatch').filter((req) => req.body.room === caller.room);
    expect(dispatches).toHaveLength(1);
    expect(JSON.parse(dispatches[0]!.body.metadata)).toMatchObject({
      call_id: callId,
      call_type: 'phone_call',
      direction: 'inbound',
      from_number: CALLER,
      to_number: number,
      dynamic_variables: { 'x-customer-id': 'c-42' },
      report_token: expect.stringMatching(/^wrt_/),
    });
    // No room of its own: the caller's room is the call's.
    expect(livekit.calls('RoomService/CreateRoom').filter((req) => req.body.name === callId)).toEqual([]);
    await eventually(() => client.call.retrieve(callId) as Promise<any>, (c) => c.call_status === 'ongoing');

    // A redelivered webhook creates nothing more, nor does a redelivered admission message.
    expect((await caller.joins()).body).toEqual({ applied: 'ignored: room already handled' });
    const { admitInboundSipCaller } = await import('../../shared/calls/inbound/sip.ts');
    const redelivered = await admitInboundSipCaller({ step: 'inbound_sip', call_id: callId, room: caller.room, participant: caller.participant });
    expect(redelivered).toEqual({ applied: 'ignored: already admitted' });
    expect(await listCalls(ws)).toHaveLength(1);
    expect(livekit.calls('AgentDispatchService/CreateDispatch').filter((req) => req.body.room === caller.room)).toHaveLength(1);

    // The caller hangs up: the call ends and its room (found through the claim) is deleted.
    expect((await caller.leaves()).body).toEqual({ applied: 'ended' });
    expect(await client.call.retrieve(callId)).toMatchObject({ call_status: 'ended', disconnection_reason: 'user_hangup' });
    expect(livekit.calls('RoomService/DeleteRoom').map((req) => req.body.room)).toContain(caller.room);
    expect(livekit.rooms.has(caller.room)).toBe(false);
    await eventually(async () => hooks.events(callId), (events) => events.includes('call_ended'));
    expect(hooks.events(callId).slice(0, 2)).toEqual(['call_started', 'call_ended']);
    expect((await ws.api.get('/get-concurrency')).body.current_concurrency).toBe(0);

    // The SIP trace comes from the caller's SIP participant (its sip.* attributes, its join and hang-up).
    const trace = (await ws.api.get(`/v2/get-call-sip-trace/${callId}`)).body;
    expect(trace).toMatchObject({
      synthetic: false,
      source: 'livekit_sip_participant',
      sip_call_id: 'SCL_abc',
      sip_participant: { participant_identity: `sip_${CALLER}`, phone_number: CALLER, trunk_phone_number: number, status_transitions: [{ status: 'hangup', source: 'webhook' }] },
    });
    expect(trace.messages.map((m: any) => `${m.direction} ${m.method ?? m.status_code}`)).toEqual(['received INVITE', 'sent 100', 'sent 200', 'received ACK', 'received BYE', 'sent 200']);
    expect(trace.messages[0]).toMatchObject({ basis: 'participant_joined' });
    expect(trace.messages[0].raw).toContain(`From: <sip:${CALLER}@`);
    expect(trace.messages[0].raw).toContain(`To: <sip:${number}@`);
  });

  it("transfers an admitted caller cold by a REFER of the caller's own identity in the dispatch rule's room", async () => {
    const { ws, number, client } = await inboundSetup();
    const caller = sipCaller(number);
    expect((await caller.joins()).body).toEqual({ applied: 'queued' });
    const [created] = await eventually(() => listCalls(ws), (calls) => calls.length === 1);
    const callId = created.call_id;
    await eventually(() => client.call.retrieve(callId) as Promise<any>, (c) => c.call_status === 'ongoing');
    const dispatch = livekit.calls('AgentDispatchService/CreateDispatch').find((req) => req.body.room === caller.room)!;
    const { report_token: token } = JSON.parse(dispatch.body.metadata);

    const asked = await call(app.url, 'POST', `/internal/calls/${callId}/events`, {
      rawBody: JSON.stringify({ event: 'transfer_requested', sequence: 1, timestamp: Date.now(), destination: '+14155550142', kind: 'cold' }),
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    });
    expect(asked.status).toBe(204);
    await eventually(() => client.call.retrieve(callId) as Promise<any>, (c) => c.call_status === 'ended');
    const refers = livekit.calls('SIP/TransferSIPParticipant').filter((req) => req.body.roomName === caller.room);
    expect(refers.map((req) => req.body)).toEqual([
      { roomName: caller.room, participantIdentity: caller.participant.identity, transferTo: 'tel:+14155550142', ringingTimeout: '30s' },
    ]);
    expect(livekit.calls('SIP/TransferSIPParticipant').filter((req) => req.body.roomName === callId)).toEqual([]);
  });

  it('hangs up a caller of a number no workspace has, and one the inbound webhook rejects, leaving no call', async () => {
    const unknown = sipCaller(freshNumber());
    expect((await unknown.joins()).body).toEqual({ applied: 'queued' });
    await eventually(async () => livekit.rooms.has(unknown.room), (open) => !open);

    const hook = await webhookReceiver(() => ({ status: 200, body: JSON.stringify({ call_inbound: { reject: true } }) }));
    const { ws, number } = await inboundSetup({ inbound_webhook_url: hook.url });
    const rejected = sipCaller(number);
    expect((await rejected.joins()).body).toEqual({ applied: 'queued' });
    await eventually(async () => livekit.rooms.has(rejected.room), (open) => !open);
    expect(hook.hits).toHaveLength(1);
    expect(hook.hits[0]!.json).toMatchObject({ event: 'call_inbound', call_inbound: { from_number: CALLER, to_number: number } });
    expect(livekit.rooms.has(rejected.room)).toBe(false);
    expect(await listCalls(ws)).toEqual([]);
    expect(livekit.calls('AgentDispatchService/CreateDispatch').filter((req) => req.body.room === rejected.room)).toEqual([]);
  });

  it('hangs up a caller without a dialled number', async () => {
    const caller = sipCaller('');
    const { 'sip.trunkPhoneNumber': _dropped, ...attributes } = caller.participant.attributes;
    const res = await livekitEvent({ event: 'participant_joined', room: { name: caller.room }, participant: { ...caller.participant, attributes } });
    expect(res.body).toEqual({ applied: 'refused: the caller has no dialled number (sip.trunkPhoneNumber)' });
    expect(livekit.rooms.has(caller.room)).toBe(false);
  });

  it('forwards the caller to fallback_number by SIP REFER when no slot frees up, or ends it no_concurrency_fallback', async () => {
    const { ws, agent, number, client } = await inboundSetup({ fallback_number: '+14155550777' });
    expect((await ws.api.patch('/workspace', { body: { concurrency_limit: 1 } })).status).toBe(200);
    const busy: any = await client.call.createWebCall({ agent_id: agent.agent_id });

    const forwarded = sipCaller(number);
    expect((await forwarded.joins()).body).toEqual({ applied: 'queued' });
    const transfers = await eventually(
      async () => livekit.calls('SIP/TransferSIPParticipant').filter((req) => req.body.roomName === forwarded.room),
      (list) => list.length > 0,
      20_000,
    );
    expect(transfers).toHaveLength(1);
    expect(transfers[0]!.body).toMatchObject({ participantIdentity: forwarded.participant.identity, transferTo: 'tel:+14155550777' });

    expect((await ws.api.patch(`/update-phone-number/${number}`, { body: { fallback_number: null } })).status).toBe(200);
    const dropped = sipCaller(number);
    expect((await dropped.joins()).body).toEqual({ applied: 'queued' });
    const calls = await eventually(
      async () => (await listCalls(ws)).filter((c) => c.direction === 'inbound'),
      (list) => list.length === 1 && list[0].call_status === 'not_connected',
      20_000,
    );
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ call_status: 'not_connected', disconnection_reason: 'no_concurrency_fallback' });
    // The room is deleted right after the call's end is written (not in the same write).
    await eventually(async () => livekit.rooms.has(dropped.room), (open) => !open);
    await client.call.stop(busy.call_id);
  });

  it('ends the call with error_unknown when LiveKit refuses the agent dispatch', async () => {
    const { ws, number } = await inboundSetup();
    const caller = sipCaller(number);
    livekit.failNext('AgentDispatchService/CreateDispatch', { status: 500, code: 'internal' });
    expect((await caller.joins()).body).toEqual({ applied: 'queued' });
    const [ended] = await eventually(() => listCalls(ws), (calls) => calls.length === 1 && calls[0].call_status === 'error');
    expect(ended).toMatchObject({ call_status: 'error', disconnection_reason: 'error_unknown' });
    // The room is deleted right after the call's end is written (not in the same write).
    await eventually(async () => livekit.rooms.has(caller.room), (open) => !open);
    expect((await ws.api.get('/get-concurrency')).body.current_concurrency).toBe(0);
  });
});

/** A call_inbound webhook endpoint that holds every answer until `release()`: admission is in progress meanwhile. */
async function heldInboundWebhook() {
  const asked: string[] = [];
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    req.on('end', () => {
      asked.push(body);
      void released.then(() => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ call_inbound: {} })));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  afterAll(() => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/inbound`, asked, release };
}

describe('an inbound SIP caller who hangs up while admission runs (the room race)', () => {
  it('is not lost: the early participant_left is kept on the room claim and admission ends the call at once, slot released', async () => {
    const inbound = await heldInboundWebhook();
    const { ws, hooks, number, client } = await inboundSetup({ inbound_webhook_url: inbound.url });
    const caller = sipCaller(number);
    expect((await caller.joins()).body).toEqual({ applied: 'queued' });
    // Admission is waiting for the call_inbound webhook's answer: no call exists yet.
    await eventually(async () => inbound.asked.length, (n) => n === 1);
    expect(await listCalls(ws)).toEqual([]);

    // The caller hangs up now: LiveKit's webhooks find no call, and are recorded, not dropped.
    expect((await caller.leaves()).body).toEqual({ applied: 'recorded: the caller left before the call was admitted' });
    // A redelivery and the room finishing change nothing more.
    expect((await caller.leaves()).body).toEqual({ applied: 'recorded: the caller left before the call was admitted' });
    expect((await livekitEvent({ event: 'room_finished', id: `EV_fin_${caller.room}`, room: { name: caller.room } })).body).toEqual({
      applied: 'recorded: the caller left before the call was admitted',
    });

    inbound.release();
    const [ended] = await eventually(() => listCalls(ws), (calls) => calls.length === 1 && calls[0].call_status !== 'registered');
    expect(ended).toMatchObject({ direction: 'inbound', call_status: 'not_connected', disconnection_reason: 'user_hangup' });
    expect((await client.concurrency.retrieve()).current_concurrency).toBe(0);
    // The agent was never dispatched to a room nobody is in.
    expect(livekit.calls('AgentDispatchService/CreateDispatch').filter((req) => req.body.room === caller.room)).toEqual([]);
    // call_ended went out (the call was never started); a late webhook about the room changes nothing.
    await eventually(async () => hooks.events(ended.call_id), (events) => events.includes('call_ended'));
    expect(hooks.events(ended.call_id)).not.toContain('call_started');
    expect((await caller.leaves()).body).toEqual({ applied: 'ignored' });
    expect(await client.call.retrieve(ended.call_id)).toMatchObject({ call_status: 'not_connected', disconnection_reason: 'user_hangup' });
  });

  it('ends an admitted call the agent has not answered yet when its caller leaves (no longer ignored while registered)', async () => {
    const { ws, number, client } = await inboundSetup();
    const caller = sipCaller(number);
    expect((await caller.joins()).body).toEqual({ applied: 'queued' });
    const [admitted] = await eventually(() => listCalls(ws), (calls) => calls.length === 1);
    const left = await caller.leaves();
    expect(left.status).toBe(200);
    const final = await eventually(() => client.call.retrieve(admitted.call_id) as Promise<any>, (c) => c.call_status !== 'registered' && c.call_status !== 'ongoing');
    // Whether the join step made it ongoing first or not, the caller leaving ended it, with its slot.
    expect(['ended', 'not_connected']).toContain(final.call_status);
    expect(final.disconnection_reason).toBe('user_hangup');
    expect((await client.concurrency.retrieve()).current_concurrency).toBe(0);
  });
});
