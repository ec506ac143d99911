import { verify as retellVerify } from 'retell-sdk';
import { afterAll, describe, expect, it } from 'vitest';
import { startBackgroundWork } from '../../local/background.ts';
import { startTestApp } from '../support/app.ts';
import { newAgent, newChatAgent } from '../support/factories.ts';
import { retellClient, sdkFailure } from '../support/sdk.ts';
import { eventually, webhookReceiver } from '../support/webhook-receiver.ts';

/*
 * Chats through HTTP with retell-sdk, on the offline model (deterministic): create to
 * chat_analyzed with signed webhooks, concurrent completions on one chat, the listing,
 * tenant isolation and the exact 4xx messages.
 */
const app = await startTestApp();
const background = startBackgroundWork();
afterAll(() => background.stop());

async function setup(chatAgent: Record<string, unknown> = {}, llm: Record<string, unknown> = {}) {
  const ws = await app.newWorkspace();
  const hooks = await webhookReceiver();
  const { chatAgent: agent } = await newChatAgent(ws.api, {
    chatAgent: { webhook_url: hooks.url, ...chatAgent },
    llm: { general_prompt: 'You help with orders.', begin_message: 'Hi {{name}}, how can I help?', ...llm },
  });
  return { ws, hooks, agent, client: retellClient(app.url, ws.api_key) };
}

const OFFLINE = (line: string) => `You said: "${line}". This is Parley's offline model; set LLM_BASE_URL for real answers.`;

describe('a chat from create to chat_analyzed', () => {
  it('opens with the begin message, answers completions, ends, analyses, and sends signed chat events', async () => {
    const { ws, hooks, agent, client } = await setup({
      post_chat_analysis_data: [{ type: 'boolean', name: 'wants_refund', description: 'Did the user ask for a refund?' }],
    });
    const created: any = await client.chat.create({
      agent_id: agent.agent_id,
      metadata: { customer: 7 },
      retell_llm_dynamic_variables: { name: 'Ada', vip: true as never },
    });
    expect(created).toMatchObject({
      agent_id: agent.agent_id,
      version: 0,
      chat_status: 'ongoing',
      chat_type: 'api_chat',
      metadata: { customer: 7 },
      retell_llm_dynamic_variables: { name: 'Ada', vip: 'true' },
      end_timestamp: null,
      transcript: 'Agent: Hi Ada, how can I help?\n',
    });
    expect(created.chat_id).toMatch(/^chat_[0-9a-f]{24}$/);
    expect(created.message_with_tool_calls).toEqual([
      expect.objectContaining({ role: 'agent', content: 'Hi Ada, how can I help?', message_id: expect.stringMatching(/^message_[0-9a-f]{24}$/) }),
    ]);

    const reply = await client.chat.createChatCompletion({ chat_id: created.chat_id, content: 'I want a refund for my order' });
    expect(reply.messages).toEqual([expect.objectContaining({ role: 'agent', content: OFFLINE('I want a refund for my order') })]);
    const second = await client.chat.createChatCompletion({ chat_id: created.chat_id, content: 'Thanks, that is great' });
    expect(second.messages).toHaveLength(1);

    const got: any = await client.chat.retrieve(created.chat_id);
    expect(got.message_with_tool_calls.map((m: any) => m.role)).toEqual(['agent', 'user', 'agent', 'user', 'agent']);
    expect(got.message_count).toBe(5);

    await client.chat.end(created.chat_id);
    const analyzed: any = await client.chat.retrieve(created.chat_id);
    expect(analyzed.chat_status).toBe('ended');
    expect(analyzed.end_timestamp).toBeGreaterThanOrEqual(analyzed.start_timestamp);
    expect(analyzed.chat_analysis).toEqual({
      chat_summary: 'The user and the agent talked (2 user and 3 agent turns). The user first said: "I want a refund for my order".',
      user_sentiment: 'Positive',
      chat_successful: true,
      custom_analysis_data: { wants_refund: true },
    });

    // A completion on an ended chat is 400; ending twice too.
    expect(await sdkFailure(client.chat.createChatCompletion({ chat_id: created.chat_id, content: 'Hello?' }))).toEqual({
      status: 400,
      body: { status: 400, message: `Chat ${created.chat_id} has ended: no more completions` },
    });
    expect(await sdkFailure(client.chat.end(created.chat_id))).toEqual({
      status: 400,
      body: { status: 400, message: `Chat ${created.chat_id} is not ongoing: only an ongoing chat can be ended` },
    });

    const hits = await eventually(
      async () => hooks.hits,
      (list) => list.length >= 3,
      20_000,
    );
    expect(hits.map((hit) => hit.json.event)).toEqual(['chat_started', 'chat_ended', 'chat_analyzed']);
    for (const hit of hits) {
      const signature = hit.headers['x-retell-signature'] as string;
      expect(hit.headers['x-parley-signature']).toBe(signature);
      expect(await retellVerify(hit.body, ws.api_key, signature)).toBe(true);
      expect(await retellVerify(hit.body, 'key_wrong', signature)).toBe(false);
      expect((hit.json as any).chat.chat_id).toBe(created.chat_id);
    }
    expect((hits[2]!.json as any).chat.chat_analysis.custom_analysis_data).toEqual({ wants_refund: true });
    expect((hits[1]!.json as any).chat.message_with_tool_calls).toHaveLength(5);

    // Rerun: the analysis again (POST of the spec and PUT of the client), and its event.
    const rerun: any = await client.chat.rerunAnalysis(created.chat_id);
    expect(rerun.chat_analysis.chat_summary).toBe(analyzed.chat_analysis.chat_summary);
    const post = await ws.api.post(`/rerun-chat-analysis/${created.chat_id}`);
    expect(post.status).toBe(200);
    await eventually(async () => hooks.hits.length, (n) => n >= 5);
    expect(hooks.hits.slice(3).map((hit) => hit.json.event)).toEqual(['chat_analyzed', 'chat_analyzed']);
  });

  it('sends chat events to the workspace URL when the agent has none, and only the events the agent keeps', async () => {
    const ws = await app.newWorkspace();
    const hooks = await webhookReceiver();
    expect((await ws.api.patch('/workspace', { body: { webhook_url: hooks.url } })).status).toBe(200);
    const { chatAgent } = await newChatAgent(ws.api, { chatAgent: { webhook_events: ['chat_ended'] } });
    const client = retellClient(app.url, ws.api_key);
    const chat = await client.chat.create({ agent_id: chatAgent.agent_id });
    await client.chat.end(chat.chat_id);
    // A second chat's end is queued after everything the first could have queued (the local queue delivers in order).
    const later = await client.chat.create({ agent_id: chatAgent.agent_id });
    await client.chat.end(later.chat_id);
    await eventually(async () => hooks.hits.length, (n) => n >= 2);
    expect(hooks.hits.map((hit) => [hit.json.event, (hit.json as any).chat.chat_id])).toEqual([
      ['chat_ended', chat.chat_id],
      ['chat_ended', later.chat_id],
    ]);
  });

  it('rerun is refused on an ongoing chat', async () => {
    const { client, agent } = await setup();
    const chat = await client.chat.create({ agent_id: agent.agent_id });
    expect(await sdkFailure(client.chat.rerunAnalysis(chat.chat_id))).toEqual({
      status: 400,
      body: { status: 400, message: 'Chat analysis can only be rerun on ended chats' },
    });
  });
});

describe('concurrent completions', () => {
  it('serialises 10 completions on one chat: every user message and its reply are kept, in order', async () => {
    const { client, agent } = await setup({}, { begin_message: '' });
    const chat = await client.chat.create({ agent_id: agent.agent_id });
    const lines = Array.from({ length: 10 }, (_, i) => `message number ${i}`);
    const replies = await Promise.all(lines.map((content) => client.chat.createChatCompletion({ chat_id: chat.chat_id, content })));
    replies.forEach((reply, i) => expect(reply.messages).toEqual([expect.objectContaining({ role: 'agent', content: OFFLINE(lines[i]!) })]));

    const got: any = await client.chat.retrieve(chat.chat_id);
    expect(got.message_count).toBe(20);
    const messages = got.message_with_tool_calls as { role: string; content: string }[];
    expect(messages).toHaveLength(20);
    // Pairs: each user line is followed by the reply to it, whatever order the completions won.
    const users = new Set<string>();
    for (let i = 0; i < 20; i += 2) {
      expect(messages[i]!.role).toBe('user');
      expect(messages[i + 1]).toMatchObject({ role: 'agent', content: OFFLINE(messages[i]!.content) });
      users.add(messages[i]!.content);
    }
    expect([...users].sort()).toEqual([...lines].sort());
  });
});

describe('agent versions, updates, listing, deletion', () => {
  it('resolves agent_version, updates fields, lists as the client and the spec want, and deletes', async () => {
    const { ws, client, agent } = await setup();
    const published = await ws.api.post(`/publish-chat-agent/${agent.agent_id}`, { body: {} });
    expect(published.status).toBe(200);
    const first = await client.chat.create({ agent_id: agent.agent_id, agent_version: 'latest_published' });
    expect(first.version).toBe(0);
    const second = await client.chat.create({ agent_id: agent.agent_id, agent_version: 0 });
    const third = await client.chat.create({ agent_id: agent.agent_id });

    const updated: any = await client.chat.update(first.chat_id, {
      metadata: { ticket: 'A-1' },
      custom_attributes: { tier: 'gold' },
      data_storage_setting: 'everything',
      override_dynamic_variables: { name: 'Grace' },
    });
    expect(updated).toMatchObject({ metadata: { ticket: 'A-1' }, custom_attributes: { tier: 'gold' }, override_dynamic_variables: { name: 'Grace' } });
    const down = await ws.api.patch(`/update-chat/${first.chat_id}`, { body: { data_storage_setting: 'basic_attributes_only' } });
    expect(down.status).toBe(200);
    const up = await ws.api.patch(`/update-chat/${first.chat_id}`, { body: { data_storage_setting: 'everything' } });
    expect(up.status).toBe(400);
    expect(up.body.message).toBe('data_storage_setting: Cannot change from basic_attributes_only to the less restrictive everything');

    await client.chat.end(second.chat_id);
    const page = await client.chat.list({ limit: 2 });
    expect(page.items.map((c) => c.chat_id)).toEqual([third.chat_id, second.chat_id]);
    expect(page.has_more).toBe(true);
    expect((page.items[0] as any).transcript).toBeUndefined();
    const next = await client.chat.list({ limit: 2, pagination_key: page.pagination_key });
    expect(next.items.map((c) => c.chat_id)).toEqual([first.chat_id]);
    expect(next.has_more).toBe(false);
    const ended = await client.chat.list({ filter_criteria: { chat_status: { op: 'in', type: 'enum', value: ['ended'] } }, include_total: true });
    expect(ended.items.map((c) => c.chat_id)).toEqual([second.chat_id]);
    expect(ended.total).toBe(1);
    const ascending = await ws.api.get('/list-chats?sort_order=ascending');
    expect(ascending.status).toBe(200);
    expect(ascending.body.map((c: any) => c.chat_id)).toEqual([first.chat_id, second.chat_id, third.chat_id]);
    const badKey = await ws.api.post('/v3/list-chats', { body: { pagination_key: 'chat_nope' } });
    expect(badKey.status).toBe(400);
    expect(badKey.body.message).toBe('Invalid pagination_key');

    await client.chat.delete(third.chat_id);
    expect(await sdkFailure(client.chat.retrieve(third.chat_id))).toEqual({ status: 404, body: { status: 404, message: 'Chat not found' } });
    expect((await ws.api.get('/list-chats')).body.map((c: any) => c.chat_id)).toEqual([second.chat_id, first.chat_id]);
  });
});

describe('exact 4xx and tenant isolation', () => {
  it('refuses bad input with clear messages', async () => {
    const { ws, client, agent } = await setup();
    const { agent: voice } = await newAgent(ws.api);
    expect(await sdkFailure(client.chat.create({ agent_id: voice.agent_id }))).toEqual({
      status: 400,
      body: { status: 400, message: `agent_id: ${voice.agent_id} is not a chat agent (chats run chat agents, chat_agent_…)` },
    });
    const unknown = 'chat_agent_0123456789abcdef01234567';
    expect((await sdkFailure(client.chat.create({ agent_id: unknown }))).status).toBe(404);
    const noVersion = await sdkFailure(client.chat.create({ agent_id: agent.agent_id, agent_version: 7 }));
    expect(noVersion.status).toBe(404);
    expect(noVersion.body.message).toContain('has no version 7');
    const missing = await ws.api.post('/create-chat-completion', { body: { chat_id: 'chat_x' } });
    expect(missing.status).toBe(400);
    expect(missing.body.message).toBe('content: Required');
    const empty = await ws.api.post('/create-chat', { body: {} });
    expect(empty.status).toBe(400);
    expect(empty.body.message).toBe('agent_id: Required');
    const gone = await ws.api.post('/create-chat-completion', { body: { chat_id: 'chat_0123456789abcdef01234567', content: 'hi' } });
    expect(gone.status).toBe(404);
    expect(gone.body.message).toBe('Chat not found');
  });

  it('keeps another workspace\'s chats out of reach', async () => {
    const { client, agent } = await setup();
    const chat = await client.chat.create({ agent_id: agent.agent_id });
    const other = await app.newWorkspace();
    const intruder = retellClient(app.url, other.api_key);
    const notFound = { status: 404, body: { status: 404, message: 'Chat not found' } };
    expect(await sdkFailure(intruder.chat.retrieve(chat.chat_id))).toEqual(notFound);
    expect(await sdkFailure(intruder.chat.createChatCompletion({ chat_id: chat.chat_id, content: 'hi' }))).toEqual(notFound);
    expect(await sdkFailure(intruder.chat.update(chat.chat_id, { metadata: {} }))).toEqual(notFound);
    expect(await sdkFailure(intruder.chat.end(chat.chat_id))).toEqual(notFound);
    expect(await sdkFailure(intruder.chat.delete(chat.chat_id))).toEqual(notFound);
    expect(await sdkFailure(intruder.chat.rerunAnalysis(chat.chat_id))).toEqual(notFound);
    expect((await intruder.chat.list()).items).toEqual([]);
    expect((await sdkFailure(intruder.chat.create({ agent_id: agent.agent_id }))).status).toBe(404);
    // Untouched for its owner.
    expect((await client.chat.retrieve(chat.chat_id)).chat_status).toBe('ongoing');
  });
});
