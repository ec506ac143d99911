import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestApp } from '../support/app.ts';
import { newAgent, newChatAgent } from '../support/factories.ts';
import { completion, startFakeOpenAi, toolCallCompletion } from '../support/fake-openai.ts';
import { startFunctionReceiver } from '../support/function-receiver.ts';
import { retellClient, sdkFailure } from '../support/sdk.ts';

/*
 * Chats and the playground against a scripted OpenAI-compatible provider
 * (test/support/fake-openai.ts): what the model received under the workspace LLM token
 * limit, the playground's JSON and its server-sent events read by a real EventSource
 * parser, and the simulation.
 */
const app = await startTestApp();
const fake = await startFakeOpenAi();
const receiver = await startFunctionReceiver();
const { OpenAiCompatibleModel, useLanguageModel } = await import('../../shared/vendors/llm/index.ts');
useLanguageModel(new OpenAiCompatibleModel({ baseUrl: fake.url, retryBaseMs: 10 }));
afterAll(() => useLanguageModel(undefined));

beforeEach(() => {
  fake.reset();
  receiver.requests.length = 0;
  receiver.answer = () => ({ body: '{"status":"shipped"}' });
});

const lookupTool = () => ({
  type: 'custom',
  name: 'lookup_order',
  description: 'Finds an order',
  url: `${receiver.url}/orders`,
  parameters: { type: 'object', properties: { order_id: { type: 'string' } }, required: ['order_id'] },
});

describe('the workspace LLM token limit', () => {
  it('drops the oldest turns first, keeps the system prompt, a tool call with its result, and caps replies at 300 tokens', async () => {
    const ws = await app.newWorkspace();
    const client = retellClient(app.url, ws.api_key);
    const { chatAgent } = await newChatAgent(ws.api, {
      llm: { general_prompt: 'You are the order desk.', begin_message: '', general_tools: [lookupTool()] },
    });
    const chat = await client.chat.create({ agent_id: chatAgent.agent_id });
    expect(fake.requests).toHaveLength(0);

    // Turn 1: the model calls the tool, reads its result, answers.
    fake.enqueue({ body: toolCallCompletion([{ id: 'call_1', name: 'lookup_order', arguments: { order_id: '42' } }]) }, { body: completion('Order 42 has shipped.') });
    const first = await client.chat.createChatCompletion({ chat_id: chat.chat_id, content: 'Where is order 42?' });
    expect(first.messages.map((m) => m.role)).toEqual(['tool_call_invocation', 'tool_call_result', 'agent']);
    expect(first.messages[1]).toMatchObject({ tool_call_id: 'call_1', content: '{"status":"shipped"}', successful: true });
    expect(receiver.requests).toHaveLength(1);

    // Four user lines of ~9,750 tokens each (4 characters a token): three fit in the limit with turn 1, four do not.
    const big = (word: string) => `${word} `.repeat(6_500).trim();
    for (const word of ['alpha', 'bravo', 'charl', 'delta']) {
      await client.chat.createChatCompletion({ chat_id: chat.chat_id, content: big(word) });
    }
    const sent = fake.requests.map((request) => request.body);
    expect(sent).toHaveLength(6);
    for (const body of sent) {
      expect(body.max_tokens).toBe(300);
      expect(body.messages[0]).toMatchObject({ role: 'system' });
      expect(body.messages[0].content).toContain('You are the order desk.');
    }
    const contents = (body: any) => body.messages.map((m: any) => m.content ?? '');
    // With three big lines everything still fits: turn 1 with its tool call and result.
    expect(contents(sent[4])).toContain('Where is order 42?');
    expect(sent[4].messages.some((m: any) => m.role === 'tool' && m.tool_call_id === 'call_1')).toBe(true);
    // The fourth dropped the oldest turns: turn 1, its tool call together with its result, and the first big line.
    const last = sent[5];
    expect(contents(last)).not.toContain('Where is order 42?');
    expect(last.messages.some((m: any) => m.role === 'tool')).toBe(false);
    expect(last.messages.some((m: any) => m.tool_calls)).toBe(false);
    expect(contents(last)).not.toContain(big('alpha'));
    expect(contents(last)).toEqual(expect.arrayContaining([big('bravo'), big('charl'), big('delta')]));
    expect(last.messages.at(-1)).toEqual({ role: 'user', content: big('delta') });
    const tokens = JSON.stringify(last.messages).length / 4;
    expect(tokens).toBeLessThan(32_768);

    // The chat keeps every message, whatever the model was shown.
    const got: any = await client.chat.retrieve(chat.chat_id);
    expect(got.message_count).toBe(12);
  });
});

describe('the agent playground', () => {
  it('answers retell-sdk\'s JSON: the agent\'s new messages on the given conversation', async () => {
    const ws = await app.newWorkspace();
    const client = retellClient(app.url, ws.api_key);
    const { agent } = await newAgent(ws.api, { llm: { general_prompt: 'You book tables.' } });
    fake.enqueue({ body: completion('A table for two at seven, done.') });
    const answer = await client.playground.completion(agent.agent_id, {
      messages: [
        { role: 'agent', content: 'Hello, how can I help?' },
        { role: 'user', content: 'A table for two at seven, please.' },
      ],
      dynamic_variables: { guest: 'Ada' },
    });
    expect(answer.messages).toEqual([expect.objectContaining({ role: 'agent', content: 'A table for two at seven, done.' })]);
    expect(answer.call_ended).toBe(false);
    expect(fake.requests[0]!.body.messages.slice(1)).toEqual([
      { role: 'assistant', content: 'Hello, how can I help?' },
      { role: 'user', content: 'A table for two at seven, please.' },
    ]);
    // Nothing was stored: no call, no chat.
    expect((await client.chat.list()).items).toEqual([]);

    const bad = await ws.api.post(`/agent-playground-completion/${agent.agent_id}`, { body: { messages: [{ role: 'agent', content: 'Hi' }] } });
    expect(bad.status).toBe(400);
    expect(bad.body.message).toBe('messages.0.role: The last message must be the user\'s (send no messages for the agent\'s opening)');
    const other = await app.newWorkspace();
    const foreign = await sdkFailure(retellClient(app.url, other.api_key).playground.completion(agent.agent_id, { messages: [] }));
    expect(foreign.status).toBe(404);
  });

  it('streams server-sent events when the request accepts text/event-stream', async () => {
    const ws = await app.newWorkspace();
    const { chatAgent } = await newChatAgent(ws.api, { llm: { general_prompt: 'You help.', general_tools: [lookupTool()] } });
    fake.enqueue({ body: toolCallCompletion([{ id: 'call_9', name: 'lookup_order', arguments: { order_id: '9' } }]) }, { body: completion('It shipped.') });
    const response = await fetch(`${app.url}/agent-playground-completion/${chatAgent.agent_id}?version=0`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ws.api_key}`, 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'Order 9?' }] }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const events: EventSourceMessage[] = [];
    const parser = createParser({ onEvent: (event) => events.push(event) });
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      parser.feed(value);
    }
    expect(events.map((event) => event.event)).toEqual(['message', 'message', 'message', 'done']);
    expect(events.slice(0, 3).map((event) => JSON.parse(event.data).role)).toEqual(['tool_call_invocation', 'tool_call_result', 'agent']);
    const done = JSON.parse(events[3]!.data);
    expect(done.messages.at(-1)).toMatchObject({ role: 'agent', content: 'It shipped.' });
    expect(done.call_ended).toBe(false);
  });

  it('answers mocked tool calls with the mock\'s output (tool_mocks) and never calls the function\'s URL', async () => {
    const ws = await app.newWorkspace();
    const client = retellClient(app.url, ws.api_key);
    const { chatAgent } = await newChatAgent(ws.api, {
      llm: { general_prompt: 'You help.', general_tools: [{ ...lookupTool(), response_variables: { order_status: 'status' } }] },
    });
    const mocks = [
      { tool_name: 'lookup_order', input_match_rule: { type: 'partial_match' as const, args: { order_id: '7' } }, output: '{"status":"lost"}', result: false },
      { tool_name: 'lookup_order', input_match_rule: { type: 'any' as const }, output: '{"status":"mocked"}' },
    ];
    fake.enqueue(
      { body: toolCallCompletion([{ id: 'call_a', name: 'lookup_order', arguments: { order_id: '42', note: 'x' } }, { id: 'call_b', name: 'lookup_order', arguments: { order_id: '7' } }]) },
      { body: completion('Done.') },
    );
    const answer = await client.playground.completion(chatAgent.agent_id, { messages: [{ role: 'user', content: 'Orders 42 and 7?' }], tool_mocks: mocks });
    expect(answer.messages.map((m: any) => [m.role, m.content ?? m.name])).toEqual([
      ['tool_call_invocation', 'lookup_order'],
      ['tool_call_invocation', 'lookup_order'],
      ['tool_call_result', '{"status":"mocked"}'],
      ['tool_call_result', '{"status":"lost"}'],
      ['agent', 'Done.'],
    ]);
    expect(answer.messages.filter((m: any) => m.role === 'tool_call_result').map((m: any) => m.successful)).toEqual([true, false]);
    // The second is the last one run: its response variables are read from the mocked output.
    expect((answer as any).dynamic_variables).toEqual({ order_status: 'lost' });
    expect(receiver.requests).toHaveLength(0);
    // The model read the mocked results.
    expect(fake.requests[1]!.body.messages.filter((m: any) => m.role === 'tool').map((m: any) => m.content)).toEqual(['{"status":"mocked"}', '{"status":"lost"}']);

    // A mock for another tool, or whose arguments do not match, leaves the function to run.
    fake.enqueue({ body: toolCallCompletion([{ id: 'call_c', name: 'lookup_order', arguments: { order_id: '8' } }]) }, { body: completion('Shipped.') });
    const unmatched = await client.playground.completion(chatAgent.agent_id, {
      messages: [{ role: 'user', content: 'Order 8?' }],
      tool_mocks: [mocks[0]!, { tool_name: 'other_tool', input_match_rule: { type: 'any' }, output: 'x' }],
    });
    expect(unmatched.messages.find((m: any) => m.role === 'tool_call_result')).toMatchObject({ content: '{"status":"shipped"}', successful: true });
    expect(receiver.requests).toHaveLength(1);

    const bad = await ws.api.post(`/agent-playground-completion/${chatAgent.agent_id}`, {
      body: { messages: [{ role: 'user', content: 'x' }], tool_mocks: [{ tool_name: 'lookup_order', input_match_rule: { type: 'exact' }, output: 'x' }] },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.message).toMatch(/^tool_mocks\.0\.input_match_rule/);
  });

  it('simulates a user against the agent for max_turns turns without creating a call', async () => {
    const ws = await app.newWorkspace();
    const { agent } = await newAgent(ws.api, { llm: { general_prompt: 'You sell shoes.', begin_message: 'Welcome to the shoe shop.' } });
    let n = 0;
    fake.setDefault((request) => {
      const system = String(request.body.messages[0]?.content ?? '');
      return { body: completion(system.startsWith('You are role-playing') ? `user line ${++n}` : 'agent line') };
    });
    const answer = await ws.api.post(`/agent-playground-simulation/${agent.agent_id}`, {
      body: { user_prompt: 'A runner looking for trail shoes, size 42.', max_turns: 3 },
    });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ agent_id: agent.agent_id, version: 0, turns: 3, ended_by: 'max_turns' });
    expect(answer.body.messages.map((m: any) => `${m.role}: ${m.content}`)).toEqual([
      'agent: Welcome to the shoe shop.',
      'user: user line 1',
      'agent: agent line',
      'user: user line 2',
      'agent: agent line',
      'user: user line 3',
      'agent: agent line',
    ]);
    const simulatedUser = fake.requests.find((request) => String(request.body.messages[0].content).startsWith('You are role-playing'))!;
    expect(simulatedUser.body.messages[0].content).toContain('A runner looking for trail shoes, size 42.');
    expect(simulatedUser.body.messages[1]).toEqual({ role: 'user', content: 'Welcome to the shoe shop.' });
    const calls = await ws.api.post('/v3/list-calls', { body: {} });
    expect(calls.body).toEqual([]);
    const tooMany = await ws.api.post(`/agent-playground-simulation/${agent.agent_id}`, { body: { user_prompt: 'x', max_turns: 21 } });
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.message).toBe('max_turns: Must be at most 20');
  });
});
