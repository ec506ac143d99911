import { describe, expect, it } from 'vitest';
import { startTestApp } from '../support/app.ts';
import { freshNumber, newChatAgent } from '../support/factories.ts';
import type { ApiClient } from '../support/http.ts';

/*
 * Chats and SMS are charged (docs/billing.md, price table): $0.002 per user or agent message
 * of an ended chat, once per chat; $0.0075 per SMS sent, once per message. SMS routes are
 * spend routes. On the mock messaging provider and the offline model; no free credit here.
 */
const app = await startTestApp({ FREE_CREDIT_USD: '0' });
const { recordChatCharge, recordSmsCharge } = await import('../../shared/billing/index.ts');

type Ws = Awaited<ReturnType<typeof app.newWorkspace>>;

async function billing(api: ApiClient) {
  const res = await api.get('/billing?limit=100');
  expect(res.status).toBe(200);
  return res.body;
}

async function setup(creditUsd: number) {
  const ws = await app.newWorkspace();
  if (creditUsd > 0) expect((await ws.api.post('/billing/add-credits', { body: { amount_usd: creditUsd } })).status).toBe(200);
  const { chatAgent: agent } = await newChatAgent(ws.api, { llm: { general_prompt: 'You book tables.', begin_message: 'Hi, want a table?' } });
  const number = freshNumber();
  const imported = await ws.api.post('/import-phone-number', {
    body: { phone_number: number, termination_uri: 'sip:trunk.example.com', outbound_sms_agents: [{ agent_id: agent.agent_id, weight: 1 }] },
  });
  expect(imported.status).toBe(201);
  return { ws, agent, number };
}

const sentSms = async (ws: Ws) => ((await ws.api.get('/telephony/operations?limit=1000')).body as { operation: string }[]).filter((op) => op.operation === 'send_sms');
const charges = (entries: any[]) => entries.filter((entry) => entry.kind !== 'credit_grant');

describe('chat charges', () => {
  it('charges an ended chat once, by its user and agent messages', async () => {
    const { ws, agent } = await setup(1);
    const chat = await ws.api.post('/create-chat', { body: { agent_id: agent.agent_id } });
    expect(chat.status).toBe(201);
    const chatId = chat.body.chat_id as string;
    expect((await ws.api.post('/create-chat-completion', { body: { chat_id: chatId, content: 'Two at eight' } })).status).toBe(200);
    // Nothing is charged while the chat goes on.
    expect(charges((await billing(ws.api)).entries)).toEqual([]);

    expect((await ws.api.patch(`/end-chat/${chatId}`)).status).toBe(200);
    const after = await billing(ws.api);
    // Opening, the user's line, the agent's answer: 3 messages × $0.002.
    expect(charges(after.entries)).toEqual([
      expect.objectContaining({ kind: 'chat_charge', amount_usd: -0.006, lines: { chat: 0.006 }, reference: chatId, description: `Chat ${chatId} (3 messages)` }),
    ]);
    expect(after.balance_usd).toBe(0.994);
    expect(after.month_charges_usd).toBe(0.006);

    // Ending again is refused; the end reported again (or concurrently) charges nothing more.
    expect((await ws.api.patch(`/end-chat/${chatId}`)).status).toBe(400);
    const again = await Promise.all([1, 2, 3].map(() => recordChatCharge({ workspaceId: ws.workspace_id, chatId, messageCount: 3 })));
    expect(again.map((result) => result?.created)).toEqual([false, false, false]);
    const final = await billing(ws.api);
    expect(charges(final.entries)).toHaveLength(1);
    expect(final.balance_usd).toBe(0.994);

    const usage = (await ws.api.get('/billing/usage')).body;
    expect(usage.totals).toEqual({ chat: 0.006 });
    expect(usage.total_usd).toBe(0.006);
  });
});

describe('SMS charges and the spend check', () => {
  it('charges each SMS sent once, and an SMS chat its messages at its end', async () => {
    const { ws, number } = await setup(1);
    const to = freshNumber();
    const chat = await ws.api.post('/create-sms-chat', { body: { from_number: number, to_number: to } });
    expect(chat.status).toBe(201);
    const chatId = chat.body.chat_id as string;
    expect((await ws.api.post(`/sms-chats/${chatId}/simulate-inbound`, { body: { content: 'Two at eight' } })).status).toBe(200);
    const sent = await ws.api.post('/send-sms', { body: { from_number: number, to_number: freshNumber(), content: 'Your table is ready' } });
    expect(sent.status).toBe(200);
    expect((await ws.api.post(`/end-sms-chat/${chatId}`)).status).toBe(200);
    expect(await sentSms(ws)).toHaveLength(3);

    const overview = await billing(ws.api);
    const kinds = charges(overview.entries).map((entry: { kind: string; amount_usd: number; reference: string }) => [entry.kind, entry.amount_usd, entry.reference]);
    expect(kinds.sort()).toEqual(
      [
        ['chat_charge', -0.006, chatId],
        ['sms_charge', -0.0075, chatId],
        ['sms_charge', -0.0075, chatId],
        ['sms_charge', -0.0075, sent.body.message_id],
      ].sort(),
    );
    // 3 SMS × $0.0075 + 3 chat messages × $0.002.
    expect(overview.balance_usd).toBe(0.9715);
    expect((await ws.api.get('/billing/usage')).body.totals).toEqual({ chat: 0.006, sms: 0.0225 });

    // A message's charge reported again is the same entry.
    const duplicate = await recordSmsCharge({ workspaceId: ws.workspace_id, messageId: sent.body.message_id });
    expect(duplicate.created).toBe(false);
    expect((await billing(ws.api)).balance_usd).toBe(0.9715);
  });

  it('refuses create-sms-chat and send-sms with 402 when out of credit or over budget, sending nothing', async () => {
    const { ws, number } = await setup(0);
    const exhausted = { status: 402, error_code: 'credit_exhausted', message: 'Credit balance is $0.00; add credits to continue' };
    const chat = await ws.api.post('/create-sms-chat', { body: { from_number: number, to_number: freshNumber() } });
    expect(chat.status).toBe(402);
    expect(chat.body).toEqual(exhausted);
    const sms = await ws.api.post('/send-sms', { body: { from_number: number, to_number: freshNumber(), content: 'Hello' } });
    expect(sms.status).toBe(402);
    expect(sms.body).toEqual(exhausted);
    expect((await ws.api.post('/billing/check', { body: { action: 'sms' } })).body).toEqual({ action: 'sms', allowed: false, ...exhausted, status: undefined });
    expect(await sentSms(ws)).toEqual([]);
    expect((await ws.api.get('/list-sms-chats')).body).toEqual([]);

    // With credit but the month's budget spent: budget_reached.
    await ws.api.post('/billing/add-credits', { body: { amount_usd: 5 } });
    await ws.api.patch('/billing/settings', { body: { monthly_budget_usd: 0.02 } });
    for (const n of [0, 1, 2]) await recordSmsCharge({ workspaceId: ws.workspace_id, messageId: `message_budget_spender_00000${n}` });
    const overBudget = await ws.api.post('/send-sms', { body: { from_number: number, to_number: freshNumber(), content: 'Hello' } });
    expect(overBudget.status).toBe(402);
    expect(overBudget.body).toEqual({ status: 402, error_code: 'budget_reached', message: 'Monthly budget of $0.02 is spent ($0.02 this month)' });
    expect(await sentSms(ws)).toEqual([]);
  });
});
