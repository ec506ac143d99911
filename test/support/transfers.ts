import { expect } from 'vitest';
import type { startLiveKitTestApp } from './fake-livekit.ts';
import { freshNumber, newAgent } from './factories.ts';
import { call, type ApiClient } from './http.ts';
import { retellClient } from './sdk.ts';
import { eventually, webhookReceiver, type ReceivedWebhook } from './webhook-receiver.ts';

/** What the transfer tests share: the events they subscribe to, a number bound to the agent, webhook lookups and a live call on the fake LiveKit. */

export const SANDBOX_TRANSFER_EVENTS = ['call_started', 'call_ended', 'call_analyzed', 'transfer_started', 'transfer_bridged', 'transfer_cancelled', 'transfer_ended'];
const LIVE_TRANSFER_EVENTS = ['call_started', 'call_ended', 'transfer_started', 'transfer_bridged', 'transfer_cancelled', 'transfer_ended'];
/** The front desk's number transfers go to. */
export const DESK = '+14155550142';

/** Imports a fresh number whose outbound calls the agent makes; answers the number. */
export async function outboundNumberFor(api: ApiClient, agentId: string): Promise<string> {
  const number = freshNumber();
  const imported = await api.post('/import-phone-number', {
    body: { phone_number: number, termination_uri: 'sip:trunk.example.com', outbound_agents: [{ agent_id: agentId, weight: 1 }] },
  });
  expect(imported.status).toBe(201);
  return number;
}

export const getCall = (client: ReturnType<typeof retellClient>, callId: string) => client.call.retrieve(callId) as Promise<any>;

/** The one webhook of this event for the call (fails on none or several). */
export function hitOf(hits: ReceivedWebhook[], callId: string, event: string): ReceivedWebhook {
  const found = hits.filter((hit) => hit.json.call?.call_id === callId && hit.json.event === event);
  expect(found, event).toHaveLength(1);
  return found[0]!;
}

export const before = (events: (string | undefined)[], first: string, second: string) =>
  expect(events.indexOf(first), `${first} before ${second}`).toBeLessThan(events.indexOf(second));

type LiveKitTestApp = Awaited<ReturnType<typeof startLiveKitTestApp>>;

/** A live phone call (dialled and answered on the fake LiveKit), a way to report for its worker, and the data messages the worker was sent. */
export async function livePhoneCall({ app, livekit }: LiveKitTestApp) {
  const ws = await app.newWorkspace();
  const hooks = await webhookReceiver();
  const { agent } = await newAgent(ws.api, { agent: { webhook_url: hooks.url, webhook_events: LIVE_TRANSFER_EVENTS } });
  const number = await outboundNumberFor(ws.api, agent.agent_id);
  const client = retellClient(app.url, ws.api_key);
  const created: any = await client.call.createPhoneCall({ from_number: number, to_number: '+14155550177' });
  await eventually(() => getCall(client, created.call_id), (c) => c.call_status === 'ongoing');
  const dispatch = livekit.calls('AgentDispatchService/CreateDispatch').find((req) => req.body.room === created.call_id)!;
  const { report_token: token } = JSON.parse(dispatch.body.metadata);
  const report = (body: Record<string, unknown>) =>
    call(app.url, 'POST', `/internal/calls/${created.call_id}/events`, {
      rawBody: JSON.stringify({ timestamp: Date.now(), ...body }),
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    });
  const get = () => getCall(client, created.call_id);
  const told = () =>
    livekit
      .calls('RoomService/SendData')
      .filter((req) => req.body.room === created.call_id)
      .map((req) => JSON.parse(Buffer.from(req.body.data, 'base64').toString('utf8')));
  return { ws, hooks, number, callId: created.call_id as string, report, get, told, client };
}

/** A transfer_call tool to `number` (the front desk by default) with this option and any other tool fields (custom_sip_headers, …). */
export const deskTool = (option: Record<string, unknown>, extra: Record<string, unknown> = {}, number = DESK) => ({
  type: 'transfer_call',
  name: 'transfer_to_desk',
  description: 'Transfer the caller to the front desk.',
  transfer_destination: { type: 'predefined', number },
  transfer_option: option,
  ...extra,
});

/** Uploads an asset (POST /create-asset, multipart); answers its asset_id. */
export async function uploadAsset(baseUrl: string, key: string, bytes: Buffer, filename: string, type: string): Promise<string> {
  const form = new FormData();
  form.append('file', new Blob([bytes], { type }), filename);
  const request = new Request('http://local/', { method: 'POST', body: form });
  const created = await call(baseUrl, 'POST', '/create-asset', {
    key,
    rawBody: Buffer.from(await request.arrayBuffer()),
    headers: { 'content-type': request.headers.get('content-type')! },
  });
  expect(created.status).toBe(201);
  return created.body.asset_id as string;
}
