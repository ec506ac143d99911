import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { startBackgroundWork } from '../../local/background.ts';
import { startTestApp } from '../support/app.ts';
import { newAgentWithNumber, newChatAgent } from '../support/factories.ts';
import { completion, defaultReply, startFakeOpenAi, type RecordedRequest } from '../support/fake-openai.ts';
import { retellClient } from '../support/sdk.ts';
import { eventually } from '../support/webhook-receiver.ts';

/*
 * The workspace's reliability fallbacks in use (docs/account-data.md, Reliability settings):
 * the scripted OpenAI-compatible provider answers 500 for the primary model, and the chat,
 * the sandbox call and the playground answer with the fallback model; a refusal (4xx) is
 * not retried on it. The fallback voices: reliability-dispatch.test.ts.
 */
const app = await startTestApp();
const background = startBackgroundWork();
const fake = await startFakeOpenAi();
const { OpenAiCompatibleModel, useLanguageModel } = await import('../../shared/vendors/llm/index.ts');
useLanguageModel(new OpenAiCompatibleModel({ baseUrl: fake.url, retryBaseMs: 5 }));
afterAll(async () => {
  useLanguageModel(undefined);
  await background.stop();
});

const PRIMARY = 'gpt-4.1';
const FALLBACK = 'gpt-4.1-mini';
const ANALYSIS = JSON.stringify({ call_summary: 'ok', user_sentiment: 'Neutral', call_successful: true, in_voicemail: false, custom_analysis_data: {} });

/** The primary model is down (500 on every attempt, or `status`); analysis and the other models answer. */
function primaryDown(status = 500) {
  fake.setDefault((request: RecordedRequest) => {
    if (request.body?.response_format) return { body: completion(ANALYSIS) };
    if (request.body?.model === PRIMARY) return { status, body: { error: { message: 'overloaded', type: 'server_error' } } };
    return defaultReply(request);
  });
}

const turnModels = () => fake.requests.filter((request) => !request.body?.response_format).map((request) => request.body.model);

async function workspaceWithFallback(fallback: string | null = FALLBACK) {
  const ws = await app.newWorkspace();
  if (fallback) {
    const set = await ws.api.put('/workspace/reliability', { body: { fallback_llm_model: fallback, fallback_voice_ids: ['11labs-Adrian', 'cartesia-Cleo'] } });
    expect(set.status).toBe(200);
  }
  return ws;
}

beforeEach(() => fake.reset());

describe('the fallback model', () => {
  it('answers a chat completion when the primary model fails with 500, and the chat shows it', async () => {
    const ws = await workspaceWithFallback();
    const client = retellClient(app.url, ws.api_key);
    const { chatAgent } = await newChatAgent(ws.api, { llm: { general_prompt: 'You are the desk.', begin_message: 'Hello.', model: PRIMARY } });
    const chat = await client.chat.create({ agent_id: chatAgent.agent_id });
    primaryDown();
    const reply = await client.chat.createChatCompletion({ chat_id: chat.chat_id, content: 'Are you open?' });
    expect(reply.messages).toMatchObject([{ role: 'agent', content: 'fake reply' }]);
    // Three attempts at the primary (the adapter's two retries), then one at the fallback.
    expect(turnModels()).toEqual([PRIMARY, PRIMARY, PRIMARY, FALLBACK]);
    const stored: any = (await ws.api.get(`/get-chat/${chat.chat_id}`)).body;
    expect(stored.llm_fallback).toEqual({
      primary_model: PRIMARY,
      fallback_model: FALLBACK,
      count: 1,
      last_reason: 'Language model provider failed: HTTP 500 after 3 attempts',
      last_timestamp: expect.any(Number),
    });

    // The next turn tries the primary again first (it may be back), and counts the second fallback.
    fake.reset();
    primaryDown();
    await client.chat.createChatCompletion({ chat_id: chat.chat_id, content: 'And tomorrow?' });
    expect(turnModels()).toEqual([PRIMARY, PRIMARY, PRIMARY, FALLBACK]);
    expect(((await ws.api.get(`/get-chat/${chat.chat_id}`)).body as any).llm_fallback.count).toBe(2);
  });

  it('is not tried without one, nor when the provider refused the request (4xx)', async () => {
    const none = await workspaceWithFallback(null);
    const { chatAgent } = await newChatAgent(none.api, { llm: { general_prompt: 'You are the desk.', begin_message: 'Hello.', model: PRIMARY } });
    const chat = await none.api.post('/create-chat', { body: { agent_id: chatAgent.agent_id } });
    primaryDown();
    const failed = await none.api.post('/create-chat-completion', { body: { chat_id: chat.body.chat_id, content: 'Hi' } });
    expect(failed.status).toBe(502);
    expect(failed.body).toEqual({ status: 502, message: 'Language model provider failed: HTTP 500 after 3 attempts' });
    expect(turnModels()).toEqual([PRIMARY, PRIMARY, PRIMARY]);

    fake.reset();
    const ws = await workspaceWithFallback();
    const agent = await newChatAgent(ws.api, { llm: { general_prompt: 'You are the desk.', begin_message: 'Hello.', model: PRIMARY } });
    const refused = await ws.api.post('/create-chat', { body: { agent_id: agent.chatAgent.agent_id } });
    primaryDown(400);
    const answer = await ws.api.post('/create-chat-completion', { body: { chat_id: refused.body.chat_id, content: 'Hi' } });
    expect(answer.status).toBe(502);
    expect(answer.body.message).toBe('Language model provider failed: HTTP 400');
    expect(turnModels()).toEqual([PRIMARY]);
    expect(((await ws.api.get(`/get-chat/${refused.body.chat_id}`)).body as any).llm_fallback).toBeUndefined();
  });

  it('answers the sandbox call’s turns, shown on the call', async () => {
    const ws = await workspaceWithFallback();
    const { number } = await newAgentWithNumber(ws.api, { llm: { general_prompt: 'You are the desk.', begin_message: 'Hello from the desk.', model: PRIMARY } });
    primaryDown();
    const client = retellClient(app.url, ws.api_key);
    const created: any = await client.call.createPhoneCall({
      from_number: number,
      to_number: '+14155550123',
      metadata: { sandbox_call_ms: 1500, sandbox_user_says: ['Are you open today?'] },
    });
    const call = await eventually(() => client.call.retrieve(created.call_id) as Promise<any>, (c) => c.call_analysis !== undefined, 30_000);
    expect(call.call_status).toBe('ended');
    expect(call.transcript_object.map((entry: any) => [entry.role, entry.content])).toEqual([
      ['agent', 'Hello from the desk.'],
      ['user', 'Are you open today?'],
      ['agent', 'fake reply'],
    ]);
    expect(call.llm_fallback).toMatchObject({ primary_model: PRIMARY, fallback_model: FALLBACK, count: 1 });
    expect(turnModels()).toEqual([PRIMARY, PRIMARY, PRIMARY, FALLBACK]);
  });

  it('answers the playground’s turn', async () => {
    const ws = await workspaceWithFallback();
    const { chatAgent } = await newChatAgent(ws.api, { llm: { general_prompt: 'You are the desk.', begin_message: 'Hello.', model: PRIMARY } });
    primaryDown();
    const turn = await ws.api.post(`/agent-playground-completion/${chatAgent.agent_id}`, { body: { messages: [{ role: 'user', content: 'Hi there' }] } });
    expect(turn.status).toBe(200);
    expect(turn.body.messages).toMatchObject([{ role: 'agent', content: 'fake reply' }]);
    expect(turn.body.llm_fallback).toMatchObject({ primary_model: PRIMARY, fallback_model: FALLBACK, count: 1 });
    expect(turnModels()).toEqual([PRIMARY, PRIMARY, PRIMARY, FALLBACK]);
  });
});
