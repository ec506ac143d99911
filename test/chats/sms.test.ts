import { afterAll, describe, expect, it } from 'vitest';
import { startBackgroundWork } from '../../local/background.ts';
import { startTestApp } from '../support/app.ts';
import { freshNumber, newChatAgent } from '../support/factories.ts';
import { retellClient, sdkFailure } from '../support/sdk.ts';
import { eventually } from '../support/webhook-receiver.ts';

/*
 * SMS chats on the built-in mock provider (no TWILIO_ACCOUNT_SID): through HTTP with
 * retell-sdk where it has the method, on the offline model (deterministic). Every message
 * the agent sends shows in the provider operation log; nothing leaves the machine.
 */
const app = await startTestApp();
const background = startBackgroundWork();
afterAll(() => background.stop());

const OFFLINE = (line: string) => `You said: "${line}". This is Parley's offline model; set LLM_BASE_URL for real answers.`;

async function setup() {
  const ws = await app.newWorkspace();
  const { chatAgent: agent } = await newChatAgent(ws.api, {
    llm: { general_prompt: 'You book tables.', begin_message: 'Hi {{name}}, want a table?' },
  });
  const number = freshNumber();
  const imported = await ws.api.post('/import-phone-number', {
    body: { phone_number: number, termination_uri: 'sip:trunk.example.com', outbound_sms_agents: [{ agent_id: agent.agent_id, weight: 1 }] },
  });
  expect(imported.status).toBe(201);
  return { ws, agent, number, client: retellClient(app.url, ws.api_key) };
}

/** The SMS the mock provider recorded, oldest first. */
async function sentSms(api: Awaited<ReturnType<typeof setup>>['ws']['api']) {
  const ops = (await api.get('/telephony/operations?limit=1000')).body as any[];
  return ops.filter((op) => op.operation === 'send_sms').reverse().map((op) => ({ provider: op.provider, ...op.request }));
}

describe('SMS chats on the mock provider', () => {
  it('create-sms-chat (retell-sdk createSMSChat) sends the opening, simulate-inbound gets an answer by SMS, end-sms-chat analyses', async () => {
    const { ws, agent, number, client } = await setup();
    const to = freshNumber();
    const chat: any = await client.chat.createSMSChat({
      from_number: number,
      to_number: to,
      metadata: { order: 9 },
      retell_llm_dynamic_variables: { name: 'Ada' },
    });
    expect(chat).toMatchObject({
      agent_id: agent.agent_id,
      chat_type: 'sms_chat',
      chat_status: 'ongoing',
      from_number: number,
      to_number: to,
      direction: 'outbound',
      metadata: { order: 9 },
      transcript: 'Agent: Hi Ada, want a table?\n',
    });
    expect(await sentSms(ws.api)).toEqual([
      expect.objectContaining({ provider: 'mock', from: number, to, body: 'Hi Ada, want a table?', chat_id: chat.chat_id }),
    ]);

    const inbound = await ws.api.post(`/sms-chats/${chat.chat_id}/simulate-inbound`, { body: { content: 'Two people at 8' } });
    expect(inbound.status).toBe(200);
    expect(inbound.body).toEqual({
      chat_id: chat.chat_id,
      chat_status: 'ongoing',
      messages: [expect.objectContaining({ role: 'agent', content: OFFLINE('Two people at 8') })],
    });
    const sent = await sentSms(ws.api);
    expect(sent).toHaveLength(2);
    const received = (await ws.api.get('/telephony/operations')).body.filter((op: any) => op.operation === 'receive_sms');
    expect(received.map((op: any) => [op.provider, op.request])).toEqual([
      ['mock', { from: to, to: number, body: 'Two people at 8', chat_id: chat.chat_id, simulated: true }],
    ]);
    expect(sent[1]).toMatchObject({ from: number, to, body: OFFLINE('Two people at 8'), chat_id: chat.chat_id });

    const got = await ws.api.get(`/get-sms-chat/${chat.chat_id}`);
    expect(got.status).toBe(200);
    expect(got.body.message_with_tool_calls.map((m: any) => m.role)).toEqual(['agent', 'user', 'agent']);
    // The same chat through the chat routes and retell-sdk's retrieve.
    expect(((await client.chat.retrieve(chat.chat_id)) as any).message_count).toBe(3);

    const ended = await ws.api.post(`/end-sms-chat/${chat.chat_id}`);
    expect(ended.status).toBe(200);
    expect(ended.body).toMatchObject({ chat_status: 'ended', chat_analysis: expect.objectContaining({ chat_successful: true }) });
    expect(await ws.api.post(`/sms-chats/${chat.chat_id}/simulate-inbound`, { body: { content: 'Hello?' } })).toMatchObject({
      status: 400,
      body: { status: 400, message: `Chat ${chat.chat_id} has ended: no more completions` },
    });
    expect((await ws.api.post(`/end-sms-chat/${chat.chat_id}`)).body).toEqual({
      status: 400,
      message: `Chat ${chat.chat_id} is not ongoing: only an ongoing chat can be ended`,
    });
  });

  it('lists SMS chats (not API chats) and an SMS chat\'s messages newest first, paged', async () => {
    const { ws, agent, number, client } = await setup();
    const apiChat = await client.chat.create({ agent_id: agent.agent_id });
    const first: any = await client.chat.createSMSChat({ from_number: number, to_number: freshNumber() });
    const second: any = await client.chat.createSMSChat({ from_number: number, to_number: freshNumber() });
    const listed = await ws.api.get('/list-sms-chats');
    expect(listed.status).toBe(200);
    expect(listed.body.map((c: any) => c.chat_id)).toEqual([second.chat_id, first.chat_id]);
    expect(listed.body[0]).not.toHaveProperty('message_with_tool_calls');
    expect((await ws.api.get('/list-sms-chats?sort_order=ascending&limit=1')).body.map((c: any) => c.chat_id)).toEqual([first.chat_id]);
    // The API chat is a chat, never an SMS chat.
    expect((await ws.api.get(`/get-sms-chat/${apiChat.chat_id}`)).body).toEqual({ status: 404, message: 'Chat not found' });

    for (const line of ['one', 'two']) {
      expect((await ws.api.post(`/sms-chats/${first.chat_id}/simulate-inbound`, { body: { content: line } })).status).toBe(200);
    }
    const page1 = await ws.api.get(`/list-sms-messages?chat_id=${first.chat_id}&limit=2`);
    expect(page1.status).toBe(200);
    expect(page1.body.items.map((m: any) => [m.role, m.content])).toEqual([
      ['agent', OFFLINE('two')],
      ['user', 'two'],
    ]);
    expect(page1.body).toMatchObject({ has_more: true, pagination_key: '4' });
    const page2 = await ws.api.get(`/list-sms-messages?chat_id=${first.chat_id}&limit=2&pagination_key=${page1.body.pagination_key}`);
    expect(page2.body.items.map((m: any) => m.content)).toEqual([OFFLINE('one'), 'one']);
    const page3 = await ws.api.get(`/list-sms-messages?chat_id=${first.chat_id}&limit=2&pagination_key=${page2.body.pagination_key}`);
    expect(page3.body).toEqual({ items: [expect.objectContaining({ role: 'agent', content: 'Hi {{name}}, want a table?' })], has_more: false });
    expect((await ws.api.get(`/list-sms-messages?chat_id=${first.chat_id}&pagination_key=abc`)).body).toEqual({
      status: 400,
      message: 'Invalid pagination_key',
    });
    expect((await ws.api.get('/list-sms-messages')).body).toEqual({ status: 400, message: 'chat_id: Required' });
  });

  it('send-sms sends one message through the mock provider and records it', async () => {
    const { ws, number } = await setup();
    const to = freshNumber();
    const res = await ws.api.post('/send-sms', { body: { from_number: number, to_number: to, content: 'Your table is ready' } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      message_id: expect.stringMatching(/^message_[0-9a-f]{24}$/),
      from_number: number,
      to_number: to,
      content: 'Your table is ready',
      provider: 'mock',
      provider_message_id: expect.stringMatching(/^SMmock[0-9a-f]{26}$/),
      status: 'sent',
      created_timestamp: expect.any(Number),
    });
    expect(await sentSms(ws.api)).toEqual([
      { provider: 'mock', from: number, to, body: 'Your table is ready', message_id: res.body.message_id, message_sid: res.body.provider_message_id },
    ]);
  });

  it('refuses bad input with the exact 4xx', async () => {
    const { ws, number, client } = await setup();
    const cases: [string, unknown, number, string][] = [
      ['/send-sms', { from_number: number, to_number: '+1415', content: 'x' }, 400, 'to_number +1415 is not a valid E.164 number'],
      ['/send-sms', { from_number: '4155550100', to_number: freshNumber(), content: 'x' }, 400, 'from_number 4155550100 is not a valid E.164 number'],
      ['/send-sms', { from_number: number, to_number: number, content: 'x' }, 400, 'to_number: Must be another number than from_number'],
      ['/send-sms', { from_number: number, to_number: freshNumber(), content: '' }, 400, 'content: Must be at least 1 characters'],
      ['/send-sms', { from_number: number, to_number: freshNumber(), content: 'x'.repeat(1601) }, 400, 'content: Must be at most 1600 characters'],
      ['/create-sms-chat', { from_number: number, to_number: 'call me' }, 400, 'to_number call me is not a valid E.164 number'],
      ['/create-sms-chat', { from_number: number, to_number: freshNumber(), override_agent_id: 'agent_' + '0'.repeat(24) }, 400,
        `override_agent_id: agent_${'0'.repeat(24)} is not a chat agent (SMS chats run chat agents, chat_agent_…)`],
    ];
    for (const [path, body, status, message] of cases) {
      expect(await ws.api.post(path, { body }), `${path} ${JSON.stringify(body)}`).toMatchObject({ status, body: { status, message } });
    }
    const unknown = freshNumber();
    expect((await ws.api.post('/send-sms', { body: { from_number: unknown, to_number: freshNumber(), content: 'x' } })).body).toEqual({
      status: 404,
      message: `Phone number ${unknown} not found`,
    });
    // A number without an outbound SMS agent needs an override.
    const bare = freshNumber();
    expect((await ws.api.post('/import-phone-number', { body: { phone_number: bare, termination_uri: 'sip:trunk.example.com' } })).status).toBe(201);
    expect(await sdkFailure(client.chat.createSMSChat({ from_number: bare, to_number: freshNumber() }))).toEqual({
      status: 400,
      body: { status: 400, message: `Phone number ${bare} has no outbound SMS agent: set its outbound_sms_agents or send override_agent_id` },
    });
    // SMS agents on a number are chat agents of the workspace.
    expect((await ws.api.patch(`/update-phone-number/${bare}`, { body: { inbound_sms_agents: [{ agent_id: 'agent_' + '1'.repeat(24), weight: 1 }] } })).body).toEqual({
      status: 400,
      message: 'inbound_sms_agents.0.agent_id: Must be a chat agent ID (chat_agent_ followed by 24 hex characters)',
    });
    const missing = 'chat_agent_' + '2'.repeat(24);
    const refused = await ws.api.patch(`/update-phone-number/${bare}`, { body: { inbound_sms_agents: [{ agent_id: missing, weight: 1 }] } });
    expect(refused.status).toBe(400);
    expect(refused.body.message).toMatch(/^inbound_sms_agents\.0\.agent_id: /);
    // Nothing was sent for any of these.
    expect(await sentSms(ws.api)).toEqual([]);
  });

  it('keeps workspaces apart', async () => {
    const a = await setup();
    const b = await setup();
    const chat: any = await a.client.chat.createSMSChat({ from_number: a.number, to_number: freshNumber() });
    for (const res of [
      await b.ws.api.get(`/get-sms-chat/${chat.chat_id}`),
      await b.ws.api.post(`/end-sms-chat/${chat.chat_id}`),
      await b.ws.api.get(`/list-sms-messages?chat_id=${chat.chat_id}`),
      await b.ws.api.post(`/sms-chats/${chat.chat_id}/simulate-inbound`, { body: { content: 'hi' } }),
    ]) {
      expect(res.body).toEqual({ status: 404, message: 'Chat not found' });
    }
    expect((await b.ws.api.get('/list-sms-chats')).body).toEqual([]);
    // Another workspace's number sends nothing.
    expect((await b.ws.api.post('/send-sms', { body: { from_number: a.number, to_number: freshNumber(), content: 'x' } })).body).toEqual({
      status: 404,
      message: `Phone number ${a.number} not found`,
    });
    expect(await sentSms(b.ws.api)).toEqual([]);
    expect((await a.ws.api.get(`/get-sms-chat/${chat.chat_id}`)).status).toBe(200);
  });

  it('shows SMS chats in the contact\'s conversation timeline', async () => {
    const { ws, number, client } = await setup();
    const to = freshNumber();
    const contact = (await ws.api.post('/create-contact', { body: { phone_number: to } })).body;
    const chat: any = await client.chat.createSMSChat({ from_number: number, to_number: to });
    const timeline = await eventually(
      () => ws.api.get(`/list-contact-conversations/${contact.contact_id}`),
      (res) => res.body.items?.length === 1,
    );
    expect(timeline.body.items).toEqual([expect.objectContaining({ type: 'chat', chat_id: chat.chat_id, direction: 'outbound' })]);
  });

  it('refuses Twilio webhooks while Twilio is not configured', async () => {
    const res = await app.api.post('/twilio/sms-webhook', {
      rawBody: 'MessageSid=SM1&From=%2B14155550100&To=%2B14155550101&Body=hi',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: null, 'x-twilio-signature': 'abc' },
    });
    expect(res.body).toEqual({ status: 403, message: 'Twilio webhooks are not accepted: TWILIO_AUTH_TOKEN is not set' });
  });
});
