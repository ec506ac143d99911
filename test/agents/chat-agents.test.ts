import type Retell from 'retell-sdk';
import { describe, expect, it } from 'vitest';
import { startTestApp } from '../support/app.ts';
import { retellClient, sdkFailure } from '../support/sdk.ts';

const app = await startTestApp();
const retell = retellClient(app.url, app.workspace.api_key);


async function newLlm() {
  return retell.llm.create({ general_prompt: 'You are a helpful receptionist.' });
}

async function newChatAgent(overrides: Record<string, unknown> = {}) {
  const llm = await newLlm();
  const chatAgent = await retell.chatAgent.create({
    response_engine: { type: 'retell-llm', llm_id: llm.llm_id },
    ...overrides,
  } as Retell.ChatAgentCreateParams);
  return { chatAgent, llm };
}

/** Every chat agent of the default workspace (IDs), to show a refused request wrote nothing. */
async function chatAgentIds(api = app.api): Promise<string[]> {
  return (await api.get('/list-chat-agents')).body.items.map((item: { agent_id: string }) => item.agent_id);
}

const CHAT_DEFAULTS = {
  language: 'en-AU',
  timezone: 'Australia/Sydney',
  end_chat_after_silence_ms: 3_600_000,
  webhook_url: null,
  webhook_events: ['chat_started', 'chat_ended', 'chat_analyzed'],
};

describe('chat agents', () => {
  it('creates with the chat defaults (no webhook timeout) and reads back through the client', async () => {
    const { chatAgent, llm } = await newChatAgent();
    expect(chatAgent).toMatchObject({
      version: 0,
      is_published: false,
      response_engine: { type: 'retell-llm', llm_id: llm.llm_id, version: 0 },
      ...CHAT_DEFAULTS,
    });
    expect(chatAgent.agent_id).toMatch(/^chat_agent_[0-9a-f]{24}$/);
    expect(chatAgent).not.toHaveProperty('webhook_timeout_ms');
    expect(await retell.chatAgent.retrieve(chatAgent.agent_id)).toEqual(chatAgent);

    const raw = await app.api.post('/create-chat-agent', { body: { response_engine: { type: 'retell-llm', llm_id: llm.llm_id } } });
    expect(raw.status).toBe(201);
    expect(raw.body).toMatchObject({ version: 0, response_engine: { version: 0 }, ...CHAT_DEFAULTS });
  });

  it('keeps given fields and drops unknown, server-controlled and webhook timeout fields', async () => {
    const { chatAgent } = await newChatAgent({
      agent_name: 'Web chat',
      language: 'en-US',
      auto_close_message: 'Closing this chat, bye',
      webhook_url: 'https://hooks.example.com/chats',
      webhook_events: ['chat_ended', 'chat_analyzed', 'chat_ended'],
      webhook_timeout_ms: 5000,
      handbook_config: { ai_disclosure: true, nato_phonetic_alphabet: true },
      post_chat_analysis_model: 'gpt-5',
      version: 42,
      is_published: true,
      agent_id: 'chat_agent_000000000000000000000000',
      voice_id: '11labs-Chloe',
      favourite_colour: 'blue',
    });
    expect(chatAgent).toMatchObject({
      agent_name: 'Web chat',
      language: 'en-US',
      auto_close_message: 'Closing this chat, bye',
      webhook_url: 'https://hooks.example.com/chats',
      webhook_events: ['chat_ended', 'chat_analyzed'],
      handbook_config: { ai_disclosure: true },
      post_chat_analysis_model: 'gpt-5',
      version: 0,
      is_published: false,
    });
    expect(chatAgent.agent_id).not.toBe('chat_agent_000000000000000000000000');
    for (const field of ['webhook_timeout_ms', 'voice_id', 'favourite_colour']) expect(chatAgent).not.toHaveProperty(field);
    expect(chatAgent.handbook_config).toEqual({ ai_disclosure: true });

    const updated = await retell.chatAgent.update(chatAgent.agent_id, {
      webhook_url: null,
      webhook_events: [],
      webhook_timeout_ms: 9000,
    });
    expect(updated).toMatchObject({ version: 0, webhook_url: null, webhook_events: [], agent_name: 'Web chat' });
    const stored = await retell.chatAgent.getVersions(chatAgent.agent_id);
    expect(stored).toEqual([updated]);
    expect(stored[0]).not.toHaveProperty('webhook_timeout_ms');
  });

  it('runs a custom LLM as it is given', async () => {
    const created = await retell.chatAgent.create({
      response_engine: { type: 'custom-llm', llm_websocket_url: 'wss://llm.example.com/ws' },
    });
    expect(created.response_engine).toEqual({ type: 'custom-llm', llm_websocket_url: 'wss://llm.example.com/ws' });
    const published = await app.api.post(`/publish-chat-agent/${created.agent_id}`, { body: {} });
    expect(published.body).toMatchObject({ version: 0, is_published: true, response_engine: created.response_engine });
  });

  it('lists chat agents a page at a time, newest first, in the client’s shape', async () => {
    const own = await app.newWorkspace();
    const ownClient = retellClient(app.url, own.api_key);
    const llm = await ownClient.llm.create({});
    await ownClient.agent.create({ agent_name: 'voice', response_engine: { type: 'retell-llm', llm_id: llm.llm_id } } as Retell.AgentCreateParams);
    const created = [];
    for (const name of ['one', 'two', 'three']) {
      created.push(await ownClient.chatAgent.create({ agent_name: name, response_engine: { type: 'retell-llm', llm_id: llm.llm_id } }));
    }

    const page1 = await own.api.get('/list-chat-agents?limit=2');
    expect(page1.status).toBe(200);
    expect(page1.body.items.map((i: { agent_name: string }) => i.agent_name)).toEqual(['three', 'two']);
    expect(page1.body).toMatchObject({ has_more: true, pagination_key: created[1]!.agent_id });
    const page2 = await own.api.get(`/list-chat-agents?limit=2&pagination_key=${page1.body.pagination_key}`);
    expect(page2.body).toEqual({
      has_more: false,
      items: [
        {
          agent_id: created[0]!.agent_id,
          agent_name: 'one',
          channel: 'chat',
          version: 0,
          is_published: false,
          last_modification_timestamp: created[0]!.last_modification_timestamp,
          user_modified_timestamp: created[0]!.last_modification_timestamp,
          tags: {},
        },
      ],
    });
    const ascending = await own.api.get('/list-chat-agents?sort_order=ascending');
    expect(ascending.body.items.map((i: { agent_name: string }) => i.agent_name)).toEqual(['one', 'two', 'three']);

    const bad = await own.api.get('/list-chat-agents?pagination_key=chat_agent_000000000000000000000000');
    expect(bad.body).toEqual({ status: 400, message: 'Invalid pagination_key' });
    expect((await own.api.get('/list-chat-agents?limit=0')).body).toEqual({ status: 400, message: 'limit: Must be at least 1' });
  });

  it('deletes a chat agent with its versions', async () => {
    const { chatAgent } = await newChatAgent();
    await app.api.post(`/publish-chat-agent/${chatAgent.agent_id}`, { body: {} });
    await retell.chatAgent.update(chatAgent.agent_id, { agent_name: 'v1' });
    const deleted = await app.api.delete(`/delete-chat-agent/${chatAgent.agent_id}`);
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');
    expect((await sdkFailure(retell.chatAgent.retrieve(chatAgent.agent_id))).body).toEqual({
      status: 404,
      message: `Chat agent ${chatAgent.agent_id} not found`,
    });
    expect((await app.api.get(`/get-chat-agent-versions/${chatAgent.agent_id}`)).status).toBe(404);
    expect((await app.api.get(`/get-chat-agent-version/${chatAgent.agent_id}/0`)).status).toBe(404);
    expect((await sdkFailure(retell.chatAgent.delete(chatAgent.agent_id))).status).toBe(404);
    expect(await chatAgentIds()).not.toContain(chatAgent.agent_id);
  });

  it.each([
    [{ response_engine: { type: 'retell-llm', llm_id: 'llm_000000000000000000000000' } }, 'response_engine.llm_id: Retell LLM llm_000000000000000000000000 not found'],
    [{ response_engine: { type: 'retell-llm', llm_id: 'chat_agent_000000000000000000000000' } }, 'response_engine.llm_id: Must be a Retell LLM ID (llm_ followed by 24 hex characters)'],
    [
      { response_engine: { type: 'conversation-flow', conversation_flow_id: 'conversation_flow_000000000000000000000000' } },
      'response_engine.conversation_flow_id: Conversation flow conversation_flow_000000000000000000000000 not found',
    ],
    [{ response_engine: undefined }, 'response_engine: Required'],
    [{ webhook_url: 'ftp://hooks.example.com' }, 'webhook_url: Must be an http:// or https:// URL'],
    [{ webhook_url: 'not a url' }, 'webhook_url: Must be an http:// or https:// URL'],
    [{ webhook_events: ['chat_started', 'call_started'] }, 'webhook_events.1: Expected one of "chat_started", "chat_ended", "chat_analyzed"'],
    [{ webhook_events: ['transcript_updated'] }, 'webhook_events.0: Expected one of "chat_started", "chat_ended", "chat_analyzed"'],
    [{ webhook_events: 'chat_started' }, 'webhook_events: Expected array, received string'],
    [{ end_chat_after_silence_ms: 60_000 }, 'end_chat_after_silence_ms: Must be at least 120000'],
    [{ post_chat_analysis_model: 'gpt-2' }, 'post_chat_analysis_model: Unknown model "gpt-2"'],
    [{ timezone: 'Mars/Olympus' }, 'timezone: Must be an IANA time zone such as Australia/Sydney'],
    [{ language: 'xx-XX' }, 'language'],
  ])('rejects %j with a 400 naming the field and writes nothing', async (overrides: Record<string, unknown>, message: string) => {
    const llm = await newLlm();
    const before = await chatAgentIds();
    const res = await app.api.post('/create-chat-agent', {
      body: { response_engine: { type: 'retell-llm', llm_id: llm.llm_id }, ...overrides },
    });
    expect(res.status).toBe(400);
    expect(res.body.status).toBe(400);
    expect(res.body.message.startsWith(message), res.body.message).toBe(true);
    expect(await chatAgentIds()).toEqual(before);
    expect((await retell.llm.retrieve(llm.llm_id)).version).toBe(0);
  });

  it('refuses an engine version the engine does not have', async () => {
    const llm = await newLlm();
    const before = await chatAgentIds();
    const res = await app.api.post('/create-chat-agent', { body: { response_engine: { type: 'retell-llm', llm_id: llm.llm_id, version: 99 } } });
    expect(res.body).toEqual({ status: 400, message: `response_engine.version: Retell LLM ${llm.llm_id} has no version 99` });
    expect(await chatAgentIds()).toEqual(before);
  });

  it('refuses an engine of another workspace exactly like a missing one, on create and update', async () => {
    const other = await app.newWorkspace();
    const foreign = (await other.api.post('/create-retell-llm', { body: {} })).body;
    const before = await chatAgentIds();
    const res = await app.api.post('/create-chat-agent', { body: { response_engine: { type: 'retell-llm', llm_id: foreign.llm_id } } });
    expect(res.body).toEqual({ status: 400, message: `response_engine.llm_id: Retell LLM ${foreign.llm_id} not found` });
    expect(await chatAgentIds()).toEqual(before);

    const { chatAgent } = await newChatAgent({ agent_name: 'mine' });
    await app.api.post(`/publish-chat-agent/${chatAgent.agent_id}`, { body: {} });
    const update = await app.api.patch(`/update-chat-agent/${chatAgent.agent_id}`, {
      body: { agent_name: 'changed', response_engine: { type: 'retell-llm', llm_id: foreign.llm_id } },
    });
    expect(update.body).toEqual({ status: 400, message: `response_engine.llm_id: Retell LLM ${foreign.llm_id} not found` });
    const versions = await retell.chatAgent.getVersions(chatAgent.agent_id);
    expect(versions.map((v) => [v.version, v.agent_name])).toEqual([[0, 'mine']]);
    expect((await other.api.get(`/get-retell-llm/${foreign.llm_id}`)).body.version).toBe(0);
  });

  it('keeps the engine a chat agent runs from being deleted, unless forced', async () => {
    const { chatAgent, llm } = await newChatAgent();
    const voice = await retell.agent.create({ response_engine: { type: 'retell-llm', llm_id: llm.llm_id } } as Retell.AgentCreateParams);
    const refused = await sdkFailure(retell.llm.delete(llm.llm_id));
    expect(refused.body).toEqual({
      status: 409,
      message: `Retell LLM ${llm.llm_id} is used by agents ${voice.agent_id}, ${chatAgent.agent_id}; point them at another engine first, or delete with force_delete=true`,
    });
    await retell.agent.delete(voice.agent_id);
    expect((await sdkFailure(retell.llm.delete(llm.llm_id))).body.message).toBe(
      `Retell LLM ${llm.llm_id} is used by agent ${chatAgent.agent_id}; point them at another engine first, or delete with force_delete=true`,
    );
    expect((await app.api.delete(`/delete-retell-llm/${llm.llm_id}?force_delete=true`)).status).toBe(204);
  });

  it('refuses bad webhook fields on update and leaves the draft as it was', async () => {
    const { chatAgent } = await newChatAgent({ agent_name: 'as was' });
    for (const [body, message] of [
      [{ webhook_url: 'ftp://x.example' }, 'webhook_url: Must be an http:// or https:// URL'],
      [{ webhook_events: ['call_ended'] }, 'webhook_events.0: Expected one of "chat_started", "chat_ended", "chat_analyzed"'],
    ] as const) {
      const res = await app.api.patch(`/update-chat-agent/${chatAgent.agent_id}`, { body: { agent_name: 'changed', ...body } });
      expect(res.status).toBe(400);
      expect(res.body.message).toBe(message);
    }
    expect(await retell.chatAgent.retrieve(chatAgent.agent_id)).toEqual(chatAgent);
  });

  it('answers 404 for another workspace’s chat agent and for a missing one', async () => {
    const other = await app.newWorkspace();
    const llm = (await other.api.post('/create-retell-llm', { body: {} })).body;
    const foreign = (await other.api.post('/create-chat-agent', { body: { response_engine: { type: 'retell-llm', llm_id: llm.llm_id } } })).body;
    const missing = 'chat_agent_000000000000000000000000';
    for (const id of [foreign.agent_id, missing]) {
      for (const res of [
        await app.api.get(`/get-chat-agent/${id}`),
        await app.api.patch(`/update-chat-agent/${id}`, { body: { agent_name: 'mine' } }),
        await app.api.post(`/publish-chat-agent/${id}`, { body: {} }),
        await app.api.get(`/get-chat-agent-versions/${id}`),
        await app.api.get(`/get-chat-agent-version/${id}/0`),
        await app.api.post(`/restore-chat-agent-version/${id}/0`),
        await app.api.delete(`/delete-chat-agent/${id}`),
      ]) {
        expect(res.status).toBe(404);
        expect(res.body).toEqual({ status: 404, message: `Chat agent ${id} not found` });
      }
    }
    const untouched = (await other.api.get(`/get-chat-agent/${foreign.agent_id}`)).body;
    expect(untouched).toEqual(foreign);
    expect((await app.api.get('/get-chat-agent/agent_000000000000000000000000')).body).toEqual({
      status: 400,
      message: 'chat_agent_id: Must be a chat agent ID (chat_agent_ followed by 24 hex characters)',
    });
  });

  it('needs the agents scope', async () => {
    const key = (await app.api.post('/api-keys', { body: { name: 'calls only', scopes: ['calls'] } })).body.api_key;
    const llm = await newLlm();
    const before = await chatAgentIds();
    for (const res of [
      await app.api.withKey(key).get('/list-chat-agents'),
      await app.api.withKey(key).post('/create-chat-agent', { body: { response_engine: { type: 'retell-llm', llm_id: llm.llm_id } } }),
    ]) {
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ status: 403, message: 'This API key lacks the "agents" scope' });
    }
    expect(await chatAgentIds()).toEqual(before);
  });
});

describe('chat agent versions', () => {
  it('edits the draft in place, publishes it with its engine, and never changes a published version', async () => {
    const { chatAgent, llm } = await newChatAgent({ agent_name: 'v0' });
    const edited = await retell.chatAgent.update(chatAgent.agent_id, { agent_name: 'v0 edited' });
    expect(edited).toMatchObject({ version: 0, is_published: false, agent_name: 'v0 edited' });

    const published = await app.api.post(`/publish-chat-agent/${chatAgent.agent_id}`, { body: { version_title: 'launch' } });
    expect(published.status).toBe(200);
    expect(published.body).toMatchObject({ version: 0, is_published: true, version_title: 'launch', agent_name: 'v0 edited' });
    expect(await retell.chatAgent.retrieve(chatAgent.agent_id, { version: 0 })).toEqual(published.body);
    expect(await retell.llm.retrieve(llm.llm_id, { version: 0 })).toMatchObject({ is_published: true });

    const again = await app.api.post(`/publish-chat-agent/${chatAgent.agent_id}`, { body: { version: 0 } });
    expect(again.body).toEqual({ status: 400, message: `Version 0 of chat agent ${chatAgent.agent_id} is already published` });
    const refused = await sdkFailure(retell.chatAgent.update(chatAgent.agent_id, { agent_name: 'sneaky', version: 0 }));
    expect(refused).toEqual({
      status: 400,
      body: {
        status: 400,
        message: `Version 0 of chat agent ${chatAgent.agent_id} is published and cannot be changed; create a new version from it`,
      },
    });

    const next = await retell.chatAgent.update(chatAgent.agent_id, { agent_name: 'v1' });
    expect(next).toMatchObject({ version: 1, is_published: false, base_version: 0, agent_name: 'v1' });
    expect(next.response_engine).toEqual({ type: 'retell-llm', llm_id: llm.llm_id, version: 1 });
    expect(await retell.llm.retrieve(llm.llm_id)).toMatchObject({ version: 1, is_published: false });

    await retell.llm.update(llm.llm_id, { general_prompt: 'changed' });
    expect((await retell.llm.retrieve(llm.llm_id, { version: 0 })).general_prompt).toBe('You are a helpful receptionist.');
    expect(await retell.chatAgent.retrieve(chatAgent.agent_id, { version: 0 })).toEqual(published.body);

    const second = await app.api.post(`/publish-chat-agent/${chatAgent.agent_id}`, { body: { version: 1, version_description: 'second' } });
    expect(second.body).toMatchObject({ version: 1, is_published: true, version_description: 'second' });
    expect(await retell.llm.retrieve(llm.llm_id, { version: 1 })).toMatchObject({ is_published: true, general_prompt: 'changed' });
  });

  it('runs a conversation flow with the same coupling: published with it, branched from it, guarded against its delete', async () => {
    const flow = await retell.conversationFlow.create({
      model_choice: { model: 'gpt-4.1', type: 'cascading' },
      start_speaker: 'agent',
      nodes: [
        {
          id: 'start',
          type: 'conversation',
          instruction: { type: 'prompt', text: 'Greet the visitor.' },
          edges: [{ id: 'e1', transition_condition: { type: 'prompt', prompt: 'The visitor is done' }, destination_node_id: 'end' }],
        },
        { id: 'end', type: 'end' },
      ],
    } as Retell.ConversationFlowCreateParams);
    const chatAgent = await retell.chatAgent.create({
      response_engine: { type: 'conversation-flow', conversation_flow_id: flow.conversation_flow_id },
    });
    expect(chatAgent.response_engine).toEqual({ type: 'conversation-flow', conversation_flow_id: flow.conversation_flow_id, version: 0 });

    await app.api.post(`/publish-chat-agent/${chatAgent.agent_id}`, { body: {} });
    expect(await retell.conversationFlow.retrieve(flow.conversation_flow_id, { version: 0 })).toMatchObject({ is_published: true });
    const next = await retell.chatAgent.update(chatAgent.agent_id, { agent_name: 'v1' });
    expect(next.response_engine).toEqual({ type: 'conversation-flow', conversation_flow_id: flow.conversation_flow_id, version: 1 });
    expect(await retell.conversationFlow.retrieve(flow.conversation_flow_id)).toMatchObject({ version: 1, is_published: false });

    const refused = await sdkFailure(retell.conversationFlow.delete(flow.conversation_flow_id));
    expect(refused.body).toEqual({
      status: 409,
      message: `Conversation flow ${flow.conversation_flow_id} is used by agent ${chatAgent.agent_id}; point them at another engine first, or delete with force_delete=true`,
    });
  });

  it('lists every version, reads one, and restores an earlier one as the new latest draft', async () => {
    const { chatAgent, llm } = await newChatAgent({ agent_name: 'base', webhook_events: ['chat_ended'] });
    await app.api.post(`/publish-chat-agent/${chatAgent.agent_id}`, { body: {} });
    await retell.chatAgent.update(chatAgent.agent_id, { agent_name: 'second', webhook_events: ['chat_started'] });

    const versions = await retell.chatAgent.getVersions(chatAgent.agent_id);
    expect(versions.map((v) => [v.version, v.is_published, v.agent_name])).toEqual([[0, true, 'base'], [1, false, 'second']]);
    const one = await app.api.get(`/get-chat-agent-version/${chatAgent.agent_id}/0`);
    expect(one.status).toBe(200);
    expect(one.body).toEqual(versions[0]);

    const restored = await app.api.post(`/restore-chat-agent-version/${chatAgent.agent_id}/0`);
    expect(restored.status).toBe(201);
    expect(restored.body).toMatchObject({
      agent_id: chatAgent.agent_id,
      version: 2,
      base_version: 0,
      is_published: false,
      agent_name: 'base',
      webhook_events: ['chat_ended'],
    });
    // Version 0 runs a published engine version: the restored draft gets a new engine draft.
    expect(restored.body.response_engine).toEqual({ type: 'retell-llm', llm_id: llm.llm_id, version: 2 });
    expect(await retell.llm.retrieve(llm.llm_id)).toMatchObject({ version: 2, is_published: false });
    expect(await retell.chatAgent.retrieve(chatAgent.agent_id)).toEqual(restored.body);
    expect((await retell.chatAgent.getVersions(chatAgent.agent_id)).map((v) => v.version)).toEqual([0, 1, 2]);

    // Restoring a draft copies it too; the draft it copies is left as it was.
    const fromDraft = await app.api.post(`/restore-chat-agent-version/${chatAgent.agent_id}/1`);
    expect(fromDraft.body).toMatchObject({ version: 3, base_version: 1, agent_name: 'second', response_engine: { version: 1 } });
    expect((await app.api.get(`/get-chat-agent-version/${chatAgent.agent_id}/1`)).body).toEqual(versions[1]);
  });

  it('answers 404 for versions that do not exist and writes nothing', async () => {
    const { chatAgent, llm } = await newChatAgent();
    const id = chatAgent.agent_id;
    const noVersion = { status: 404, message: `Chat agent ${id} has no version 9` };
    expect((await app.api.get(`/get-chat-agent/${id}?version=9`)).body).toEqual(noVersion);
    expect((await app.api.get(`/get-chat-agent-version/${id}/9`)).body).toEqual(noVersion);
    expect((await app.api.post(`/restore-chat-agent-version/${id}/9`)).body).toEqual(noVersion);
    expect((await app.api.post(`/publish-chat-agent/${id}`, { body: { version: 9 } })).body).toEqual(noVersion);
    expect((await app.api.patch(`/update-chat-agent/${id}?version=9`, { body: { agent_name: 'x' } })).body).toEqual(noVersion);
    // A version is read by any reference; x1 could only be a tag, and chat agents have none.
    expect((await app.api.get(`/get-chat-agent-version/${id}/x1`)).body).toEqual({ status: 404, message: `Chat agent ${id} has no version or tag "x1"` });
    expect((await app.api.post(`/restore-chat-agent-version/${id}/x1`)).body).toEqual({ status: 400, message: 'version: Must be a version number' });
    expect((await app.api.get(`/get-chat-agent/${id}?version=-1`)).status).toBe(400);
    expect(await retell.chatAgent.getVersions(id)).toEqual([chatAgent]);
    expect((await retell.llm.retrieve(llm.llm_id)).version).toBe(0);
  });
});

describe('convert-agent-to-chat', () => {
  async function voiceAgent(overrides: Record<string, unknown> = {}) {
    const llm = await newLlm();
    const agent = await retell.agent.create({
      response_engine: { type: 'retell-llm', llm_id: llm.llm_id },
      ...overrides,
    } as Retell.AgentCreateParams);
    return { agent, llm };
  }

  it('carries the shared fields over, runs the same engine version and drops voice-only fields', async () => {
    const { agent, llm } = await voiceAgent({
      agent_name: 'Front desk',
      language: 'en-US',
      timezone: 'Australia/Perth',
      webhook_url: 'https://hooks.example.com/agent',
      webhook_events: ['call_ended', 'transcript_updated', 'transfer_started'],
      webhook_timeout_ms: 5000,
      responsiveness: 0.5,
      handbook_config: { ai_disclosure: true, nato_phonetic_alphabet: true },
      data_storage_setting: 'everything_except_pii',
      post_call_analysis_model: 'gpt-5',
      post_call_analysis_data: [
        { type: 'system-presets', name: 'call_summary' },
        { type: 'string', name: 'reason', description: 'Why they called' },
      ],
    });
    const before = await chatAgentIds();
    const res = await app.api.post(`/convert-agent-to-chat/${agent.agent_id}`);
    expect(res.status).toBe(201);
    const chat = res.body;
    expect(chat.agent_id).toMatch(/^chat_agent_[0-9a-f]{24}$/);
    expect(chat).toEqual({
      agent_id: chat.agent_id,
      version: 0,
      is_published: false,
      last_modification_timestamp: chat.last_modification_timestamp,
      response_engine: { type: 'retell-llm', llm_id: llm.llm_id, version: 0 },
      agent_name: 'Front desk',
      language: 'en-US',
      timezone: 'Australia/Perth',
      end_chat_after_silence_ms: 3_600_000,
      webhook_url: 'https://hooks.example.com/agent',
      webhook_events: ['chat_ended'],
      handbook_config: { ai_disclosure: true },
      data_storage_setting: 'everything_except_pii',
      post_chat_analysis_model: 'gpt-5',
      post_chat_analysis_data: [
        { type: 'system-presets', name: 'chat_summary' },
        { type: 'string', name: 'reason', description: 'Why they called' },
      ],
    });
    expect(await retell.chatAgent.retrieve(chat.agent_id)).toEqual(chat);
    expect(await chatAgentIds()).toEqual([chat.agent_id, ...before]);
    // The voice agent is untouched, and its engine draft is shared, not copied.
    expect(await retell.agent.retrieve(agent.agent_id)).toEqual(agent);
    expect((await retell.llm.retrieve(llm.llm_id)).version).toBe(0);
  });

  it('takes ?version=, and gives a published voice version’s engine a new draft', async () => {
    const { agent, llm } = await voiceAgent({ agent_name: 'published one' });
    await retell.agent.publish(agent.agent_id, { version: 0 });
    await retell.agent.update(agent.agent_id, { agent_name: 'draft one' });

    const fromPublished = await app.api.post(`/convert-agent-to-chat/${agent.agent_id}?version=0`);
    expect(fromPublished.status).toBe(201);
    expect(fromPublished.body).toMatchObject({ agent_name: 'published one', version: 0, is_published: false, ...CHAT_DEFAULTS });
    expect(fromPublished.body.response_engine).toEqual({ type: 'retell-llm', llm_id: llm.llm_id, version: 2 });
    expect(await retell.llm.retrieve(llm.llm_id, { version: 2 })).toMatchObject({ is_published: false });
    expect(await retell.llm.retrieve(llm.llm_id, { version: 0 })).toMatchObject({ is_published: true });

    const fromLatest = await app.api.post(`/convert-agent-to-chat/${agent.agent_id}`);
    expect(fromLatest.body).toMatchObject({ agent_name: 'draft one', response_engine: { llm_id: llm.llm_id, version: 1 } });
    expect((await retell.llm.retrieve(llm.llm_id)).version).toBe(2);
  });

  it('refuses a missing, foreign or engine-less source and writes nothing', async () => {
    const other = await app.newWorkspace();
    const otherLlm = (await other.api.post('/create-retell-llm', { body: {} })).body;
    const foreign = (await other.api.post('/create-agent', { body: { response_engine: { type: 'retell-llm', llm_id: otherLlm.llm_id } } })).body;
    const { agent, llm } = await voiceAgent();
    const before = await chatAgentIds();

    const cases: [string, number, string][] = [
      [`/convert-agent-to-chat/${foreign.agent_id}`, 404, `Agent ${foreign.agent_id} not found`],
      ['/convert-agent-to-chat/agent_000000000000000000000000', 404, 'Agent agent_000000000000000000000000 not found'],
      [`/convert-agent-to-chat/${agent.agent_id}?version=9`, 404, `Agent ${agent.agent_id} has no version 9`],
      ['/convert-agent-to-chat/chat_agent_000000000000000000000000', 400, 'agent_id: Must be an agent ID (agent_ followed by 24 hex characters)'],
    ];
    for (const [path, status, message] of cases) {
      const res = await app.api.post(path);
      expect(res.body, path).toEqual({ status, message });
    }

    await app.api.delete(`/delete-retell-llm/${llm.llm_id}?force_delete=true`);
    const engineless = await app.api.post(`/convert-agent-to-chat/${agent.agent_id}`);
    expect(engineless.body).toEqual({ status: 400, message: `response_engine.llm_id: Retell LLM ${llm.llm_id} not found` });
    expect(await chatAgentIds()).toEqual(before);
    expect((await chatAgentIds(other.api)).length).toBe(0);
  });
});
