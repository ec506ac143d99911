import { describe, expect, it } from 'vitest';
import { startTestApp } from '../support/app.ts';
import { freshNumber, newChatAgent, newContact } from '../support/factories.ts';
import type { ApiClient } from '../support/http.ts';
import { retellClient } from '../support/sdk.ts';

/*
 * A chat's cost (retell-sdk ChatCost, cents) from billing's price table, equal to what the
 * ledger charges; the combined_cost list filter; the SMS fields on sent messages; do-not-call
 * contacts refused before texting; the SMS chat list's number filters. On the mock messaging
 * provider and the offline model.
 */
const app = await startTestApp();

async function setup() {
  const ws = await app.newWorkspace();
  const { chatAgent: agent } = await newChatAgent(ws.api, { llm: { general_prompt: 'You book tables.', begin_message: 'Hi, want a table?' } });
  const number = freshNumber();
  const imported = await ws.api.post('/import-phone-number', {
    body: { phone_number: number, termination_uri: 'sip:trunk.example.com', outbound_sms_agents: [{ agent_id: agent.agent_id, weight: 1 }] },
  });
  expect(imported.status).toBe(201);
  return { ws, agent, number, client: retellClient(app.url, ws.api_key) };
}

/** The ledger's charges by reference (a chat ID): USD by line. */
async function chargedCents(api: ApiClient, chatId: string): Promise<Record<string, number>> {
  const entries = (await api.get('/billing?limit=100')).body.entries as { reference?: string; lines?: Record<string, number> }[];
  const sums: Record<string, number> = {};
  for (const entry of entries.filter((e) => e.reference === chatId)) {
    for (const [line, usd] of Object.entries(entry.lines ?? {})) sums[line] = Math.round(((sums[line] ?? 0) + usd * 100) * 10_000) / 10_000;
  }
  return sums;
}

const sentSms = async (api: ApiClient) =>
  ((await api.get('/telephony/operations?limit=1000')).body as { operation: string }[]).filter((op) => op.operation === 'send_sms');

describe('chat_cost', () => {
  it('is set when a chat ends, from the prices the ledger charges (chat messages; SMS chats: and each SMS)', async () => {
    const { ws, agent, number, client } = await setup();
    const chat = await client.chat.create({ agent_id: agent.agent_id });
    await client.chat.createChatCompletion({ chat_id: chat.chat_id, content: 'Two at eight' });
    expect((await client.chat.retrieve(chat.chat_id)).chat_cost).toBeUndefined();
    const ended: any = await client.chat.end(chat.chat_id);
    // Opening, the user's line, the answer: 3 messages × 0.2 cents.
    const apiCost = { product_costs: [{ product: 'chat', unit_price: 0.2, cost: 0.6 }], combined_cost: 0.6 };
    expect(ended.chat_cost).toEqual(apiCost);
    expect((await client.chat.retrieve(chat.chat_id)).chat_cost).toEqual(apiCost);
    expect(await chargedCents(ws.api, chat.chat_id)).toEqual({ chat: 0.6 });

    // An SMS chat: the opening sent, one inbound message answered by SMS, then the end.
    const sms: any = await client.chat.createSMSChat({ from_number: number, to_number: freshNumber() });
    expect((await ws.api.post(`/sms-chats/${sms.chat_id}/simulate-inbound`, { body: { content: 'Yes please' } })).status).toBe(200);
    const smsEnded = await ws.api.post(`/end-sms-chat/${sms.chat_id}`);
    expect(smsEnded.status).toBe(200);
    expect(smsEnded.body.chat_cost).toEqual({
      product_costs: [
        { product: 'chat', unit_price: 0.2, cost: 0.6 },
        { product: 'sms', unit_price: 0.75, cost: 1.5 },
      ],
      combined_cost: 2.1,
    });
    expect(await chargedCents(ws.api, sms.chat_id)).toEqual({ chat: 0.6, sms: 1.5 });
    expect(await sentSms(ws.api)).toHaveLength(2);

    // combined_cost filters (retell-sdk's FilterCriteria): an ongoing chat has no cost and matches none.
    const ongoing = await client.chat.create({ agent_id: agent.agent_id });
    const ids = async (filter: any) => (await client.chat.list({ filter_criteria: { combined_cost: filter } })).items.map((c) => c.chat_id);
    expect(await ids({ op: 'ge', value: 1, type: 'number' })).toEqual([sms.chat_id]);
    expect(await ids({ op: 'lt', value: 1, type: 'number' })).toEqual([chat.chat_id]);
    expect(await ids({ op: 'bt', value: [0, 5], type: 'range' })).toEqual([sms.chat_id, chat.chat_id]);
    expect((await client.chat.list()).items.map((c) => c.chat_id)).toEqual([ongoing.chat_id, sms.chat_id, chat.chat_id]);
    const bad = await ws.api.post('/v3/list-chats', { body: { filter_criteria: { combined_cost: { op: 'gt', value: 'x' } } } });
    expect(bad.status).toBe(400);
  });
});

describe('SMS messages', () => {
  it('carry the carrier, its message ID and the delivery status once sent (list-sms-messages)', async () => {
    const { ws, number, client } = await setup();
    const sms: any = await client.chat.createSMSChat({ from_number: number, to_number: freshNumber() });
    await ws.api.post(`/sms-chats/${sms.chat_id}/simulate-inbound`, { body: { content: 'Table for 3' } });
    const page = await ws.api.get(`/list-sms-messages?chat_id=${sms.chat_id}`);
    expect(page.status).toBe(200);
    const sent = (await sentSms(ws.api)) as any[];
    const sids = sent.map((op) => op.request.message_sid).reverse();
    expect(page.body.items.map((m: any) => [m.role, m.provider, m.provider_message_id, m.sms_status])).toEqual([
      ['agent', 'mock', sids[1], 'sent'],
      ['user', undefined, undefined, undefined],
      ['agent', 'mock', sids[0], 'sent'],
    ]);
    expect(page.body.items[0].sms_status_rank).toBeUndefined();
  });

  it('list-sms-chats filters by from_number and to_number', async () => {
    const { ws, number, client } = await setup();
    const [a, b] = [freshNumber(), freshNumber()];
    const first: any = await client.chat.createSMSChat({ from_number: number, to_number: a });
    const second: any = await client.chat.createSMSChat({ from_number: number, to_number: b });
    const list = async (query: string) => {
      const res = await ws.api.get(`/list-sms-chats${query}`);
      expect(res.status).toBe(200);
      return res.body.map((c: any) => c.chat_id);
    };
    expect(await list('')).toEqual([second.chat_id, first.chat_id]);
    expect(await list(`?to_number=${encodeURIComponent(a)}`)).toEqual([first.chat_id]);
    expect(await list(`?from_number=${encodeURIComponent(number)}&to_number=${encodeURIComponent(b)}`)).toEqual([second.chat_id]);
    expect(await list(`?from_number=${encodeURIComponent(a)}`)).toEqual([]);
    expect((await ws.api.get('/list-sms-chats?to_number=12')).body).toEqual({ status: 400, message: 'to_number 12 is not a valid E.164 number' });
  });
});

describe('do-not-call', () => {
  it('refuses send-sms and create-sms-chat to a contact flagged do-not-call with 400, sending nothing', async () => {
    const { ws, number, client } = await setup();
    const flagged = await newContact(ws.api, { do_not_call: true });
    const to = flagged.phone_number as string;
    const message = `to_number ${to} belongs to a contact flagged do-not-call: no SMS is sent to it`;
    expect((await ws.api.post('/send-sms', { body: { from_number: number, to_number: to, content: 'Hi' } })).body).toEqual({ status: 400, message });
    expect((await ws.api.post('/create-sms-chat', { body: { from_number: number, to_number: to } })).body).toEqual({ status: 400, message });
    expect(await sentSms(ws.api)).toEqual([]);
    expect((await ws.api.get('/list-sms-chats')).body).toEqual([]);

    // Another workspace's flag does not apply here; a contact without the flag is texted.
    const other = await app.newWorkspace();
    expect((await other.api.post('/create-contact', { body: { phone_number: freshNumber(), do_not_call: true } })).status).toBe(201);
    const allowed = await newContact(ws.api, { do_not_call: false });
    expect((await ws.api.post('/send-sms', { body: { from_number: number, to_number: allowed.phone_number, content: 'Hi' } })).status).toBe(200);
    // Once the flag is lifted, the number is texted again.
    expect((await ws.api.patch(`/update-contact/${flagged.contact_id}`, { body: { do_not_call: false } })).status).toBe(200);
    const chat: any = await client.chat.createSMSChat({ from_number: number, to_number: to });
    expect(chat.chat_status).toBe('ongoing');
    expect(await sentSms(ws.api)).toHaveLength(2);
  });
});
