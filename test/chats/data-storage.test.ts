import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, describe, expect, it } from 'vitest';
import { mentions, tableMentions } from '../support/table-mentions.ts';
import { startBackgroundWork } from '../../local/background.ts';
import { localWebhookQueue } from '../../local/queues.ts';
import { applyChatDataStorage } from '../../shared/chats/data-storage.ts';
import { getChatItem } from '../../shared/chats/store.ts';
import { config } from '../../shared/platform/config.ts';
import { db } from '../../shared/platform/store/db.ts';
import { startTestApp } from '../support/app.ts';
import { freshNumber, newChatAgent } from '../support/factories.ts';
import { eventually, webhookReceiver } from '../support/webhook-receiver.ts';

/*
 * A chat's data storage setting governs what it keeps once it has ended (docs/privacy.md,
 * What the data storage setting keeps): API and SMS chats whose user writes an SSN, on the
 * offline model (which echoes the user's line, so the agent's replies and the analysis'
 * summary carry it too), then get-chat and the raw table (the chat's partition, and a scan of
 * the whole table) after the end and its analysis.
 */

const app = await startTestApp();
const background = startBackgroundWork();
afterAll(() => background.stop());

/** A social security number with a valid area (shared/platform/text/pii.ts finds it). */
const SSN = '219-09-9999';
const SAID = `My SSN is ${SSN}.`;

async function setup(chatAgent: Record<string, unknown>) {
  const ws = await app.newWorkspace();
  const hooks = await webhookReceiver();
  const { chatAgent: agent } = await newChatAgent(ws.api, {
    chatAgent: { webhook_url: hooks.url, post_chat_analysis_data: [{ type: 'string', name: 'what_they_said', description: 'The user\'s last line' }], ...chatAgent },
    llm: {
      general_prompt: 'You help with orders.',
      begin_message: 'Hi {{name}}, how can I help?',
      general_tools: [
        { type: 'end_call', name: 'end_call', speak_during_execution: true, execution_message_type: 'static_text', execution_message_description: 'Goodbye, {{name}}!' },
      ],
    },
  });
  return { ws, hooks, agent };
}

/** An API chat: created with the SSN in its variables, the user writes it, then end-chat. */
async function endedChat(chatAgent: Record<string, unknown>) {
  const s = await setup(chatAgent);
  const created = await s.ws.api.post('/create-chat', { body: { agent_id: s.agent.agent_id, retell_llm_dynamic_variables: { name: 'Ada', account_ssn: SSN } } });
  expect(created.status).toBe(201);
  const chatId = created.body.chat_id as string;
  expect((await s.ws.api.post('/create-chat-completion', { body: { chat_id: chatId, content: SAID } })).status).toBe(200);
  const ended = await s.ws.api.patch(`/end-chat/${chatId}`);
  expect(ended.status).toBe(200);
  return { ...s, chatId, ended: ended.body };
}

/**
 * Every item of the table mentioning the SSN and the workspace, once the webhooks are
 * delivered: a webhook carries what its event had, and a queued message lives in the local
 * queue's table items until it is delivered (an SQS message, in AWS).
 */
async function storedMentions(workspaceId: string): Promise<string[]> {
  await localWebhookQueue().whenIdle();
  return tableMentions(SSN, workspaceId);
}

/** The chat's partition as stored. */
async function partition(chatId: string): Promise<Record<string, unknown>[]> {
  const { Items } = await db.send(new QueryCommand({ TableName: config.TABLE_NAME, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': `CHAT#${chatId}` } }));
  return Items ?? [];
}


describe('an API chat', () => {
  it('basic_attributes_only: no messages, variables or summary once ended and analysed; chat_analyzed had them; applying again changes nothing', async () => {
    const { ws, hooks, chatId, ended } = await endedChat({ data_storage_setting: 'basic_attributes_only' });
    expect(ended).not.toHaveProperty('transcript');
    expect(ended).not.toHaveProperty('message_with_tool_calls');
    const analyzed = await eventually(async () => hooks.hits.find((hit) => hit.json.event === 'chat_analyzed'), (hit) => hit !== undefined);
    expect(JSON.stringify(analyzed!.json)).toContain(SAID);

    const chat = (await ws.api.get(`/get-chat/${chatId}`)).body;
    expect(chat).toMatchObject({ chat_id: chatId, chat_status: 'ended', message_count: 3, retell_llm_dynamic_variables: {}, collected_dynamic_variables: {} });
    expect(chat).not.toHaveProperty('transcript');
    expect(chat).not.toHaveProperty('message_with_tool_calls');
    expect(chat.chat_analysis).toEqual({ user_sentiment: expect.any(String), chat_successful: expect.any(Boolean), custom_analysis_data: { what_they_said: 'My SSN is [ssn].' } });
    expect(chat.chat_cost.combined_cost).toBeGreaterThan(0);
    expect(JSON.stringify(chat)).not.toContain(SSN);

    const stored = await partition(chatId);
    expect(stored.map((item) => item.sk)).toEqual(['CHAT']);
    expect(mentions(stored, SSN)).toEqual([]);
    expect(mentions(stored, 'You said')).toEqual([]);
    expect(await storedMentions(ws.workspace_id)).toEqual([]);

    // Applied again: nothing changes.
    await applyChatDataStorage(await getChatItem(ws.workspace_id, chatId));
    expect(await partition(chatId)).toEqual(stored);

    expect((await ws.api.post(`/rerun-chat-analysis/${chatId}`)).body).toEqual({
      status: 400,
      message: `Chat ${chatId} keeps no messages to analyse again: its data storage setting is basic_attributes_only`,
    });
    expect((await ws.api.patch(`/update-chat/${chatId}`, { body: { data_storage_setting: 'everything' } })).body).toEqual({
      status: 400,
      message: 'data_storage_setting: Cannot change from basic_attributes_only to the less restrictive everything',
    });
  }, 60_000);

  it('everything_except_pii: the messages, variables and analysis with the personal data redacted', async () => {
    const { ws, chatId } = await endedChat({ data_storage_setting: 'everything_except_pii' });
    const chat = (await ws.api.get(`/get-chat/${chatId}`)).body;
    expect(chat.message_with_tool_calls.map((m: any) => m.content)).toEqual([
      'Hi Ada, how can I help?',
      'My SSN is [ssn].',
      'You said: "My SSN is [ssn].". This is Parley\'s offline model; set LLM_BASE_URL for real answers.',
    ]);
    expect(chat.transcript).toContain('User: My SSN is [ssn].\n');
    expect(chat.retell_llm_dynamic_variables).toEqual({ name: 'Ada', account_ssn: '[ssn]' });
    expect(chat.chat_analysis.chat_summary).toContain('The user first said: "My SSN is [ssn]."');
    expect(JSON.stringify(chat)).not.toContain(SSN);
    const stored = await partition(chatId);
    expect(stored).toHaveLength(4);
    expect(mentions(stored, SSN)).toEqual([]);
    expect(await storedMentions(ws.workspace_id)).toEqual([]);

    await applyChatDataStorage(await getChatItem(ws.workspace_id, chatId));
    expect(await partition(chatId)).toEqual(stored);
  }, 60_000);

  it('everything: kept as said; update-chat to basic_attributes_only on the ended chat applies it at once', async () => {
    const { ws, chatId } = await endedChat({});
    const chat = (await ws.api.get(`/get-chat/${chatId}`)).body;
    expect(chat.message_with_tool_calls[1].content).toBe(SAID);
    expect(chat.retell_llm_dynamic_variables).toEqual({ name: 'Ada', account_ssn: SSN });
    expect(mentions(await partition(chatId), SSN).length).toBeGreaterThanOrEqual(3);

    const tightened = await ws.api.patch(`/update-chat/${chatId}`, { body: { data_storage_setting: 'basic_attributes_only' } });
    expect(tightened.status).toBe(200);
    expect(tightened.body).toMatchObject({ data_storage_setting: 'basic_attributes_only', message_count: 3 });
    expect(tightened.body).not.toHaveProperty('message_with_tool_calls');
    expect((await partition(chatId)).map((item) => item.sk)).toEqual(['CHAT']);
    expect(await storedMentions(ws.workspace_id)).toEqual([]);
  }, 60_000);
});

describe('an SMS chat', () => {
  it('basic_attributes_only: the agent ends it on its turn; its replies are sent and counted, then its messages go', async () => {
    const { ws, agent } = await setup({ data_storage_setting: 'basic_attributes_only' });
    const number = freshNumber();
    const to = freshNumber();
    const imported = await ws.api.post('/import-phone-number', {
      body: { phone_number: number, termination_uri: 'sip:trunk.example.com', outbound_sms_agents: [{ agent_id: agent.agent_id, weight: 1 }] },
    });
    expect(imported.status).toBe(201);
    const chat = await ws.api.post('/create-sms-chat', { body: { from_number: number, to_number: to, retell_llm_dynamic_variables: { name: 'Ada' } } });
    expect(chat.status).toBe(201);
    const chatId = chat.body.chat_id as string;
    const answered = await ws.api.post(`/sms-chats/${chatId}/simulate-inbound`, { body: { content: `${SAID} That is all, goodbye.` } });
    expect(answered.status).toBe(200);
    expect(answered.body.chat_status).toBe('ended');

    const got = (await ws.api.get(`/get-sms-chat/${chatId}`)).body;
    expect(got).toMatchObject({ chat_status: 'ended', chat_type: 'sms_chat' });
    expect(got).not.toHaveProperty('message_with_tool_calls');
    // The opening and the goodbye went by SMS (after the end), and the chat's cost counts both.
    const sent = ((await ws.api.get('/telephony/operations?limit=100')).body as any[]).filter((op) => op.operation === 'send_sms').map((op) => op.request.body);
    expect(sent.reverse()).toEqual(['Hi Ada, how can I help?', 'Goodbye, Ada!']);
    const sms = got.chat_cost.product_costs.find((line: any) => line.product === 'sms');
    expect(sms.cost).toBeCloseTo(sms.unit_price * 2, 4);
    const stored = await partition(chatId);
    expect(stored.map((item) => item.sk)).toEqual(['CHAT']);
    expect(mentions(stored, SSN)).toEqual([]);
    expect((await ws.api.get(`/list-sms-messages?chat_id=${chatId}`)).body).toMatchObject({ items: [] });
  }, 60_000);
});
