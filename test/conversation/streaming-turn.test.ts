import type { AddressInfo } from 'node:net';
import { afterAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { WebSocketServer, type WebSocket } from 'ws';
import { startTestApp } from '../support/app.ts';
import { newAgent, newAgentOn, newFlow } from '../support/factories.ts';
import { startFakeOpenAi, streamChunks, streamToolCallChunks } from '../support/fake-openai.ts';
import { startFunctionReceiver } from '../support/function-receiver.ts';
import type { ConversationState, TurnStreamEvent } from '../../shared/conversation/index.ts';

/*
 * The streaming turn (streamAgentTurn) on DynamoDB Local: a Retell LLM through the fake
 * OpenAI-compatible provider streaming its answers (held open where the test needs to see
 * words arrive before the model finished), a conversation flow through the offline model's
 * stream, and a custom LLM over a local WebSocket server that streams its response deltas.
 */
const app = await startTestApp();
const fake = await startFakeOpenAi();
const receiver = await startFunctionReceiver();
const { agentTurn, openConversation, streamAgentTurn, transcriptObject } = await import('../../shared/conversation/index.ts');
const { OfflineModel, OpenAiCompatibleModel, useLanguageModel } = await import('../../shared/vendors/llm/index.ts');

const ws = app.workspace.workspace_id;
const USER_LINE = { type: 'user_said', text: 'Where is order 42?' } as const;
const lookupTool = {
  type: 'custom',
  name: 'lookup_order',
  description: 'Finds an order by its number',
  url: `${receiver.url}/orders`,
  parameters: { type: 'object', properties: { order_id: { type: 'string' } }, required: ['order_id'] },
};

interface OpenOptions {
  callId?: string;
  overrides?: { llm?: Record<string, unknown> };
  fallbackLlmModel?: string;
}

async function openOn(agent: { agent_id: string; version: number }, options: OpenOptions = {}) {
  return openConversation({
    workspaceId: ws,
    agentId: agent.agent_id,
    agentVersion: agent.version,
    callId: options.callId ?? 'call_0000000000000000000stream',
    channel: 'voice',
    dynamicVariables: {},
    ...(options.overrides ? { overrides: options.overrides } : {}),
    ...(options.fallbackLlmModel ? { fallbackLlmModel: options.fallbackLlmModel } : {}),
  });
}

async function openLlm(llm: Record<string, unknown>, options: OpenOptions = {}): Promise<ConversationState> {
  const { agent } = await newAgent(app.api, { llm: { general_prompt: 'You help with orders.', ...llm } });
  return openOn(agent, options);
}

async function collect(events: AsyncIterable<TurnStreamEvent>): Promise<TurnStreamEvent[]> {
  const seen: TurnStreamEvent[] = [];
  for await (const event of events) seen.push(event);
  return seen;
}

const spoken = (events: TurnStreamEvent[]) => events.flatMap((event) => (event.type === 'text' ? [event.text] : [])).join('');

/** A promise the test resolves: what a fake waits on while it holds its stream open. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

const invocation = { role: 'tool_call_invocation', tool_call_id: 'call_A1', name: 'lookup_order', arguments: '{"order_id":"42"}' } as const;
const result = { role: 'tool_call_result', tool_call_id: 'call_A1', content: '{"status":"shipped"}', successful: true } as const;
const user = { role: 'user', content: 'Where is order 42?', words: [] } as const;

beforeEach(() => {
  fake.reset();
  receiver.requests.length = 0;
  receiver.answer = () => ({ body: '{"status":"shipped"}' });
});

describe('a Retell LLM turn, streamed', () => {
  beforeEach(() => useLanguageModel(new OpenAiCompatibleModel({ baseUrl: fake.url, retryBaseMs: 10 })));

  it('hands out the first words while the model is still writing, and commits the whole reply when it was all heard', async () => {
    const state = await openLlm({});
    const held = gate();
    fake.enqueue({ events: streamChunks(['Order 42 ', 'has shipped.']), pauseAfter: 1, resume: held.opened });
    let gateAsked = 0;
    const turn = streamAgentTurn(state, USER_LINE, {
      toolGate: async () => {
        gateAsked++;
        return true;
      },
    });
    const reader = turn.events[Symbol.asyncIterator]();

    expect(await reader.next()).toEqual({ done: false, value: { type: 'text', text: 'Order 42 ' } });
    // The fake still holds the rest of the model's stream: the turn has not finished.
    expect(() => turn.commit({ text: 'Order 42', interrupted: true })).toThrow('The turn is still running: commit it once its events have ended');
    held.open();
    expect(await reader.next()).toEqual({ done: false, value: { type: 'text', text: 'has shipped.' } });
    expect(await reader.next()).toEqual({ done: true, value: undefined });

    const committed = turn.commit({ text: 'Order 42 has shipped.', interrupted: false });
    expect(committed.utterances).toEqual(['Order 42 has shipped.']);
    expect(committed.events).toEqual([user, { role: 'agent', content: 'Order 42 has shipped.', words: [] }]);
    expect(fake.requests).toHaveLength(1);
    expect(fake.requests[0]!.body).toMatchObject({ stream: true, max_tokens: 300 });
    // No tool was called, so the gate was never asked.
    expect(gateAsked).toBe(0);
    const ttft = await turn.firstTokenMs;
    expect(Number.isInteger(ttft) && ttft! >= 0).toBe(true);
  });

  it('runs a tool the model calls mid-turn once, after its gate, streaming its events between the words before and after it', async () => {
    const state = await openLlm({ general_tools: [lookupTool] });
    fake.enqueue(
      { events: streamToolCallChunks(['Let me check.'], [{ id: 'call_A1', name: 'lookup_order', arguments: { order_id: '42' } }]) },
      { events: streamChunks(['Order 42 ', 'has shipped.']) },
    );
    let gateAsked = 0;
    const turn = streamAgentTurn(state, USER_LINE, {
      toolGate: async () => {
        gateAsked++;
        return true;
      },
    });

    expect(await collect(turn.events)).toEqual([
      { type: 'text', text: 'Let me check.' },
      { type: 'event', event: invocation },
      { type: 'event', event: result },
      // A new utterance after earlier words is set apart by a space.
      { type: 'text', text: ' Order 42 ' },
      { type: 'text', text: 'has shipped.' },
    ]);
    expect(receiver.requests).toHaveLength(1);
    expect(receiver.requests[0]!.body.args).toEqual({ order_id: '42' });
    expect(gateAsked).toBe(1);
    expect(fake.requests).toHaveLength(2);
    expect(fake.requests[1]!.body.messages.slice(-3)).toEqual([
      { role: 'assistant', content: 'Let me check.' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_A1', type: 'function', function: { name: 'lookup_order', arguments: '{"order_id":"42"}' } }] },
      { role: 'tool', tool_call_id: 'call_A1', content: '{"status":"shipped"}' },
    ]);
    expect(turn.commit({ text: 'Let me check. Order 42 has shipped.', interrupted: false }).events).toEqual([
      user,
      { role: 'agent', content: 'Let me check.', words: [] },
      invocation,
      result,
      { role: 'agent', content: 'Order 42 has shipped.', words: [] },
    ]);
  });

  it('runs no tool when the gate answers false: the events end and the turn has nothing to commit', async () => {
    const state = await openLlm({ general_tools: [lookupTool] });
    fake.enqueue({ events: streamToolCallChunks(['Let me check.'], [{ id: 'call_A1', name: 'lookup_order', arguments: { order_id: '42' } }]) });
    const turn = streamAgentTurn(state, USER_LINE, { toolGate: async () => false });

    expect(await collect(turn.events)).toEqual([{ type: 'text', text: 'Let me check.' }]);
    expect(receiver.requests).toHaveLength(0);
    expect(fake.requests).toHaveLength(1);
    expect(() => turn.commit({ text: 'Let me check.', interrupted: false })).toThrow(
      'The turn was discarded: its tool gate answered false, so it has nothing to commit',
    );
  });

  it('records only what the caller heard of an interrupted reply, keeping the tool calls that ran', async () => {
    const state = await openLlm({ general_tools: [lookupTool] });
    fake.enqueue(
      { events: streamToolCallChunks(['Let me check.'], [{ id: 'call_A1', name: 'lookup_order', arguments: { order_id: '42' } }]) },
      { events: streamChunks(['Order 42 has shipped. ', 'It arrives on Tuesday.']) },
    );
    const turn = streamAgentTurn(state, USER_LINE);
    const events = await collect(turn.events);
    expect(spoken(events)).toBe('Let me check. Order 42 has shipped. It arrives on Tuesday.');

    // Cut inside the second utterance (the voice pipeline spaces words its own way).
    const cut = turn.commit({ text: 'Let me check.  Order 42 has', interrupted: true });
    expect(cut.utterances).toEqual(['Let me check.', 'Order 42 has']);
    expect(cut.events).toEqual([user, { role: 'agent', content: 'Let me check.', words: [] }, invocation, result, { role: 'agent', content: 'Order 42 has', words: [] }]);
    expect(transcriptObject(cut.state)).toEqual([user, { role: 'agent', content: 'Let me check.', words: [] }, { role: 'agent', content: 'Order 42 has', words: [] }]);

    // Cut inside the first: the second was never heard, the tool call that ran stays.
    const early = turn.commit({ text: 'Let me', interrupted: true });
    expect(early.utterances).toEqual(['Let me']);
    expect(early.state.history).toEqual([{ role: 'user', content: 'Where is order 42?' }, { role: 'agent', content: 'Let me' }, invocation, result]);

    // Nothing heard: no agent utterance at all.
    const nothing = turn.commit({ text: '', interrupted: true });
    expect(nothing.utterances).toEqual([]);
    expect(nothing.events).toEqual([user, invocation, result]);
    expect(nothing.state.history).toEqual([{ role: 'user', content: 'Where is order 42?' }, invocation, result]);
  });

  it('stops the model when aborted: the stream ends, and the words heard of the cut answer are committed', async () => {
    const state = await openLlm({});
    const held = gate();
    fake.enqueue({ events: streamChunks(['Order 42 ', 'has shipped.']), pauseAfter: 1, resume: held.opened });
    const controller = new AbortController();
    const turn = streamAgentTurn(state, USER_LINE, { signal: controller.signal });
    const reader = turn.events[Symbol.asyncIterator]();
    expect(await reader.next()).toEqual({ done: false, value: { type: 'text', text: 'Order 42 ' } });

    controller.abort(new Error('barge-in'));
    expect(await reader.next()).toEqual({ done: true, value: undefined });
    held.open();

    const committed = turn.commit({ text: 'Order', interrupted: true });
    expect(committed.utterances).toEqual(['Order']);
    expect(committed.events).toEqual([user, { role: 'agent', content: 'Order', words: [] }]);
    expect(fake.requests).toHaveLength(1);
  });

  it('runs no further tool once aborted, and records no call it did not run', async () => {
    const state = await openLlm({ general_tools: [lookupTool] });
    fake.enqueue({ events: streamToolCallChunks([], [{ id: 'call_A1', name: 'lookup_order', arguments: { order_id: '42' } }]) });
    const controller = new AbortController();
    const turn = streamAgentTurn(state, USER_LINE, {
      signal: controller.signal,
      // The caller barges in while the turn waits to be sure of itself.
      toolGate: async () => {
        controller.abort(new Error('barge-in'));
        return true;
      },
    });
    expect(await collect(turn.events)).toEqual([]);
    expect(receiver.requests).toHaveLength(0);
    expect(fake.requests).toHaveLength(1);
    const committed = turn.commit({ text: '', interrupted: true });
    expect(committed.events).toEqual([user]);
    expect(committed.state.history).toEqual([{ role: 'user', content: 'Where is order 42?' }]);
  });

  it('takes the turn’s knowledge from `retrieve` when given, and asks it only when the engine has knowledge bases', async () => {
    const queries: string[] = [];
    const retrieve = async (query: string) => {
      queries.push(query);
      return { prompt: '## Knowledge base\nOrders ship within two days.' };
    };
    const withKb = await openLlm({}, { overrides: { llm: { knowledge_base_ids: ['knowledge_base_0000000000000000000000'] } } });
    await collect(streamAgentTurn(withKb, USER_LINE, { retrieve }).events);
    expect(queries).toEqual(['Where is order 42?']);
    expect(fake.requests[0]!.body.messages[0]).toEqual({ role: 'system', content: 'You help with orders.\n\n## Knowledge base\nOrders ship within two days.' });

    const withoutKb = await openLlm({});
    await collect(streamAgentTurn(withoutKb, USER_LINE, { retrieve }).events);
    expect(queries).toHaveLength(1);
    expect(fake.requests[1]!.body.messages[0]).toEqual({ role: 'system', content: 'You help with orders.' });
  });
});

describe('the fallback model, streamed', () => {
  it('asks the fallback when the primary cannot answer before its first words', async () => {
    useLanguageModel(new OpenAiCompatibleModel({ baseUrl: fake.url, maxRetries: 0 }));
    const state = await openLlm({ model: 'gpt-4.1' }, { fallbackLlmModel: 'gpt-4.1-mini' });
    fake.enqueue({ status: 503, body: { error: { message: 'overloaded' } } }, { events: streamChunks(['Order 42 ', 'has shipped.']) });

    const turn = streamAgentTurn(state, USER_LINE);
    expect(await collect(turn.events)).toEqual([
      { type: 'text', text: 'Order 42 ' },
      { type: 'text', text: 'has shipped.' },
    ]);
    expect(fake.requests.map((request) => request.body.model)).toEqual(['gpt-4.1', 'gpt-4.1-mini']);
    const committed = turn.commit({ text: 'Order 42 has shipped.', interrupted: false });
    expect(committed.state.llm_fallback).toMatchObject({
      primary_model: 'gpt-4.1',
      fallback_model: 'gpt-4.1-mini',
      count: 1,
      last_reason: 'Language model provider failed: HTTP 503',
    });
  });
});

describe('committed as fully heard', () => {
  beforeEach(() => useLanguageModel(new OfflineModel()));

  it('equals agentTurn’s result for the same input, tool call included', async () => {
    const state = await openLlm({ begin_message: 'Hi, Acme orders here.', general_tools: [lookupTool] });
    const event = { type: 'user_said', text: 'Can you lookup my order please?' } as const;

    const turn = streamAgentTurn(state, event);
    const events = await collect(turn.events);
    const streamed = turn.commit({ text: spoken(events), interrupted: false });
    const whole = await agentTurn(state, event);

    expect(streamed).toEqual(whole);
    expect(whole.events.map((entry) => entry.role)).toEqual(['user', 'tool_call_invocation', 'tool_call_result', 'agent']);
    // The offline model streams word by word.
    expect(events.filter((item) => item.type === 'text').length).toBeGreaterThan(1);
    expect(receiver.requests).toHaveLength(2);
  });
});

describe('a conversation flow, streamed', () => {
  beforeEach(() => useLanguageModel(new OfflineModel()));

  const when = (prompt: string) => ({ type: 'prompt', prompt });

  async function openFlow() {
    const flow = await newFlow(app.api, {
      nodes: [
        {
          id: 'greet',
          name: 'Greeting',
          type: 'conversation',
          instruction: { type: 'static_text', text: 'Welcome to the clinic.' },
          edges: [
            { id: 'e0', destination_node_id: 'desk', transition_condition: when('User asks for a human') },
            { id: 'e1', destination_node_id: 'booking', transition_condition: when('User wants to book an appointment') },
          ],
        },
        { id: 'booking', name: 'Booking', type: 'conversation', instruction: { type: 'prompt', text: 'Ask which day suits them.' } },
        {
          id: 'desk',
          name: 'Front desk',
          type: 'transfer_call',
          instruction: { type: 'static_text', text: 'Connecting you now.' },
          edge: { id: 'failed', transition_condition: when('Transfer failed') },
          transfer_destination: { type: 'predefined', number: '+14155550177' },
          transfer_option: { type: 'cold_transfer' },
        },
      ],
    });
    const agent = await newAgentOn(app.api, { type: 'conversation-flow', conversation_flow_id: flow.conversation_flow_id });
    return openOn(agent);
  }

  const moved = (toId: string, toName: string, call: string) => [
    { type: 'event', event: { role: 'tool_call_invocation', tool_call_id: call, name: `edge_${toId === 'desk' ? 0 : 1}_to_${toId}`, arguments: '{}' } },
    { type: 'event', event: { role: 'tool_call_result', tool_call_id: call, content: `Moved on to ${toId}`, successful: true } },
    {
      type: 'event',
      event: { role: 'node_transition', former_node_id: 'greet', former_node_name: 'Greeting', new_node_id: toId, new_node_name: toName, transition_type: 'normal' },
    },
  ];

  it('emits a static text node’s text, and a transfer node’s text then its transfer, which an interruption does not undo', async () => {
    const state = await openFlow();
    const opening = streamAgentTurn(state, { type: 'call_started' });
    expect(await collect(opening.events)).toEqual([{ type: 'text', text: 'Welcome to the clinic.' }]);
    // Static text: no model was asked.
    expect(await opening.firstTokenMs).toBeUndefined();
    const greeted = opening.commit({ text: 'Welcome to the clinic.', interrupted: false });
    expect(greeted.state.node_id).toBe('greet');

    const turn = streamAgentTurn(greeted.state, { type: 'user_said', text: 'Can I talk to a human?' });
    expect(await collect(turn.events)).toEqual([...moved('desk', 'Front desk', 'call_offline_3'), { type: 'text', text: 'Connecting you now.' }]);
    const full = turn.commit({ text: 'Connecting you now.', interrupted: false });
    expect(full.transfer).toEqual({ number: '+14155550177', kind: 'cold', transfer_option: { type: 'cold_transfer' } });
    expect(full.utterances).toEqual(['Connecting you now.']);
    expect(full.state.node_id).toBe('desk');

    const cut = turn.commit({ text: '', interrupted: true });
    expect(cut.transfer).toEqual({ number: '+14155550177', kind: 'cold', transfer_option: { type: 'cold_transfer' } });
    expect(cut.utterances).toEqual([]);
    expect(cut.events.map((entry) => entry.role)).toEqual(['user', 'tool_call_invocation', 'tool_call_result', 'node_transition']);
  });

  it('streams a prompt node’s reply as the model writes it, as agentTurn records it', async () => {
    const state = await openFlow();
    const greeted = await agentTurn(state, { type: 'call_started' });
    const event = { type: 'user_said', text: 'I want to book an appointment' } as const;

    const turn = streamAgentTurn(greeted.state, event);
    const events = await collect(turn.events);
    expect(events.slice(0, 3)).toEqual(moved('booking', 'Booking', 'call_offline_3'));
    const words = events.slice(3);
    expect(words.every((item) => item.type === 'text')).toBe(true);
    expect(words.length).toBeGreaterThan(1);
    // The offline model, entering the node right after the edge's result, quotes that result.
    const reply = 'The edge_1_to_booking tool answered: "Moved on to booking".';
    expect(spoken(words)).toBe(reply);
    expect(turn.commit({ text: reply, interrupted: false })).toEqual(await agentTurn(greeted.state, event));
  });
});

/**
 * A custom LLM server: opens with its begin message; answers a line with a tool call and its
 * result, then "You said: ", and the rest once the test lets it (`release`).
 */
const server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
await new Promise<void>((resolve) => server.once('listening', () => resolve()));
const url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}/llm`;
const asked: { response_id: number; last: string }[] = [];
let release = gate();
afterAll(
  () =>
    new Promise<void>((resolve) => {
      for (const client of server.clients) client.terminate();
      server.close(() => resolve());
    }),
);
server.on('connection', (socket: WebSocket) => {
  socket.send(JSON.stringify({ response_type: 'response', response_id: 0, content: 'Hello from ', content_complete: false }));
  socket.send(JSON.stringify({ response_type: 'response', response_id: 0, content: 'the custom LLM.', content_complete: true }));
  socket.on('message', (data) => {
    const message = JSON.parse(String(data));
    if (message.interaction_type !== 'response_required') return;
    const id = message.response_id as number;
    const last = message.transcript.at(-1).content as string;
    asked.push({ response_id: id, last });
    socket.send(JSON.stringify({ response_type: 'tool_call_invocation', tool_call_id: 't1', name: 'lookup', arguments: '{"q":1}' }));
    socket.send(JSON.stringify({ response_type: 'tool_call_result', tool_call_id: 't1', content: 'found' }));
    socket.send(JSON.stringify({ response_type: 'response', response_id: id, content: 'You said: ', content_complete: false }));
    const held = release;
    void held.opened.then(() => socket.send(JSON.stringify({ response_type: 'response', response_id: id, content: last, content_complete: true })));
  });
});

describe('a custom LLM, streamed', () => {
  beforeEach(() => {
    asked.length = 0;
    release = gate();
  });

  it('streams the server’s response deltas and tool events as they arrive', async () => {
    const agent = await newAgentOn(app.api, { type: 'custom-llm', llm_websocket_url: url });
    const state = await openOn(agent, { callId: 'call_0000000000000000000custom' });

    const opening = streamAgentTurn(state, { type: 'call_started' });
    expect(await collect(opening.events)).toEqual([
      { type: 'text', text: 'Hello from ' },
      { type: 'text', text: 'the custom LLM.' },
    ]);
    const greeted = opening.commit({ text: 'Hello from the custom LLM.', interrupted: false });
    expect(greeted.utterances).toEqual(['Hello from the custom LLM.']);

    const turn = streamAgentTurn(greeted.state, { type: 'user_said', text: 'Is my order ready?' });
    const reader = turn.events[Symbol.asyncIterator]();
    expect(await reader.next()).toEqual({ done: false, value: { type: 'event', event: { role: 'tool_call_invocation', tool_call_id: 't1', name: 'lookup', arguments: '{"q":1}' } } });
    expect(await reader.next()).toEqual({ done: false, value: { type: 'event', event: { role: 'tool_call_result', tool_call_id: 't1', content: 'found' } } });
    expect(await reader.next()).toEqual({ done: false, value: { type: 'text', text: 'You said: ' } });
    // The server holds the rest of its reply: the turn has not finished.
    expect(() => turn.commit({ text: '', interrupted: true })).toThrow('The turn is still running: commit it once its events have ended');
    release.open();
    expect(await reader.next()).toEqual({ done: false, value: { type: 'text', text: 'Is my order ready?' } });
    expect(await reader.next()).toEqual({ done: true, value: undefined });
    const ttft = await turn.firstTokenMs;
    expect(Number.isInteger(ttft) && ttft! >= 0).toBe(true);

    expect(turn.commit({ text: 'You said: Is my order ready?', interrupted: false }).events).toEqual([
      { role: 'user', content: 'Is my order ready?', words: [] },
      { role: 'tool_call_invocation', tool_call_id: 't1', name: 'lookup', arguments: '{"q":1}' },
      { role: 'tool_call_result', tool_call_id: 't1', content: 'found' },
      { role: 'agent', content: 'You said: Is my order ready?', words: [] },
    ]);
    const cut = turn.commit({ text: 'You said:', interrupted: true });
    expect(cut.utterances).toEqual(['You said:']);
    expect(cut.state.response_id).toBe(1);
    expect(asked).toEqual([{ response_id: 1, last: 'Is my order ready?' }]);
  });

  it('answers at once from the entry before the runtime is loaded, which loads behind the events', async () => {
    // A fresh copy of the entry, as in a process whose first use of the runtime is this turn.
    vi.resetModules();
    const entry = await import('../../shared/conversation/index.ts');
    const state: ConversationState = {
      v: 1,
      workspace_id: ws,
      agent_id: 'agent_00000000000000000000lazy',
      agent_version: 0,
      call_id: 'call_0000000000000000000000lazy',
      channel: 'voice',
      engine: { type: 'custom-llm', llm_websocket_url: url },
      dynamic_variables: {},
      collected_dynamic_variables: {},
      token_limit: 32_768,
      history: [],
    };
    const turn = entry.streamAgentTurn(state, { type: 'call_started' });
    expect(() => turn.commit({ text: '', interrupted: false })).toThrow('The turn is still running: commit it once its events have ended');
    expect(spoken(await collect(turn.events))).toBe('Hello from the custom LLM.');
    expect(turn.commit({ text: 'Hello from', interrupted: true }).utterances).toEqual(['Hello from']);
    expect(await turn.firstTokenMs).toBeTypeOf('number');
    entry.closeConversation(state);
  });

  it('stops listening when aborted, and never asks that response_id again, so late words are not joined to the next reply', async () => {
    const agent = await newAgentOn(app.api, { type: 'custom-llm', llm_websocket_url: url });
    const state = await openOn(agent, { callId: 'call_000000000000000000000abort' });
    const greeted = streamAgentTurn(state, { type: 'call_started' });
    await collect(greeted.events);
    const before = greeted.commit({ text: 'Hello from the custom LLM.', interrupted: false });

    const controller = new AbortController();
    const turn = streamAgentTurn(before.state, { type: 'user_said', text: 'First try' }, { signal: controller.signal });
    const reader = turn.events[Symbol.asyncIterator]();
    await reader.next();
    await reader.next();
    expect(await reader.next()).toEqual({ done: false, value: { type: 'text', text: 'You said: ' } });
    controller.abort(new Error('barge-in'));
    expect(await reader.next()).toEqual({ done: true, value: undefined });
    // The server finishes the abandoned reply after all.
    release.open();

    // The aborted turn is dropped (a preemptive reply that did not stand); the next starts from the state before it.
    release = gate();
    const next = streamAgentTurn(before.state, { type: 'user_said', text: 'Second try' });
    const reader2 = next.events[Symbol.asyncIterator]();
    for (let i = 0; i < 3; i++) await reader2.next();
    release.open();
    const rest = [];
    for (let item = await reader2.next(); !item.done; item = await reader2.next()) rest.push(item.value);
    expect(rest).toEqual([{ type: 'text', text: 'Second try' }]);
    expect(next.commit({ text: 'You said: Second try', interrupted: false }).utterances).toEqual(['You said: Second try']);
    expect(asked).toEqual([
      { response_id: 1, last: 'First try' },
      { response_id: 2, last: 'Second try' },
    ]);
  });
});
