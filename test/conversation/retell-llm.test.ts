import { beforeEach, describe, expect, it } from 'vitest';
import { startTestApp } from '../support/app.ts';
import { newAgent } from '../support/factories.ts';
import { completion, startFakeOpenAi, toolCallCompletion } from '../support/fake-openai.ts';
import { startFunctionReceiver } from '../support/function-receiver.ts';

/*
 * The conversation runtime on a Retell LLM, on DynamoDB Local: through the fake
 * OpenAI-compatible provider (tool call round trips to a local custom-function receiver,
 * signed with the workspace's webhook key), and through the offline model's deterministic
 * tool rule (custom function, end_call, transfer_call).
 */
const app = await startTestApp();
const fake = await startFakeOpenAi();
const receiver = await startFunctionReceiver();
const { agentTurn, openConversation, transcriptObject } = await import('../../shared/conversation/index.ts');
const { OfflineModel, OpenAiCompatibleModel, useLanguageModel } = await import('../../shared/vendors/llm/index.ts');
const { verifyWebhookSignature } = await import('../../shared/webhooks/index.ts');

const lookupTool = (overrides: Record<string, unknown> = {}) => ({
  type: 'custom',
  name: 'lookup_order',
  description: 'Finds an order by its number',
  url: `${receiver.url}/orders`,
  parameters: { type: 'object', properties: { order_id: { type: 'string' } }, required: ['order_id'] },
  ...overrides,
});

async function open(llm: Record<string, unknown>, dynamicVariables: Record<string, string> = {}) {
  const { agent } = await newAgent(app.api, { llm });
  const state = await openConversation({
    workspaceId: app.workspace.workspace_id,
    agentId: agent.agent_id,
    agentVersion: agent.version,
    callId: 'call_0123456789abcdef01234567',
    channel: 'voice',
    dynamicVariables,
    metadata: { ticket: 7 },
    fromNumber: '+14155550100',
    toNumber: '+14155550199',
  });
  return { agent, state };
}

beforeEach(() => {
  fake.reset();
  receiver.requests.length = 0;
  receiver.answer = () => ({ body: '{"ok":true}' });
});

describe('through an OpenAI-compatible provider', () => {
  beforeEach(() => useLanguageModel(new OpenAiCompatibleModel({ baseUrl: fake.url, retryBaseMs: 10 })));

  it('speaks the begin message, runs a custom function the model calls, and feeds the result back', async () => {
    const { agent, state } = await open(
      { general_prompt: 'You help {{name}} with orders.', begin_message: 'Hi {{name}}, Acme orders here.', general_tools: [lookupTool()] },
      { name: 'Ada' },
    );
    const opening = await agentTurn(state, { type: 'call_started' });
    expect(opening.utterances).toEqual(['Hi Ada, Acme orders here.']);
    expect(opening.events).toEqual([{ role: 'agent', content: 'Hi Ada, Acme orders here.', words: [] }]);
    expect(fake.requests).toHaveLength(0);

    receiver.answer = () => ({ body: '{"status":"shipped"}' });
    fake.enqueue(
      { body: toolCallCompletion([{ id: 'call_A1', name: 'lookup_order', arguments: { order_id: '42' } }]) },
      { body: completion('Order 42 has shipped.') },
    );
    const reply = await agentTurn(opening.state, { type: 'user_said', text: 'Where is order 42?' });
    expect(reply.utterances).toEqual(['Order 42 has shipped.']);
    expect(reply.end).toBeUndefined();
    expect(reply.transfer).toBeUndefined();
    expect(reply.events).toEqual([
      { role: 'user', content: 'Where is order 42?', words: [] },
      { role: 'tool_call_invocation', tool_call_id: 'call_A1', name: 'lookup_order', arguments: '{"order_id":"42"}' },
      { role: 'tool_call_result', tool_call_id: 'call_A1', content: '{"status":"shipped"}', successful: true },
      { role: 'agent', content: 'Order 42 has shipped.', words: [] },
    ]);
    expect(transcriptObject(reply.state)).toEqual([
      { role: 'agent', content: 'Hi Ada, Acme orders here.', words: [] },
      { role: 'user', content: 'Where is order 42?', words: [] },
      { role: 'agent', content: 'Order 42 has shipped.', words: [] },
    ]);
    // The state given is never changed: the caller keeps the one it stored.
    expect(opening.state.history).toHaveLength(1);

    // The model saw the tools, the prompt with its variables filled, and the 300-token reply cap.
    expect(fake.requests[0]!.body).toMatchObject({
      model: 'gpt-4.1',
      max_tokens: 300,
      temperature: 0,
      tools: [
        {
          type: 'function',
          function: {
            name: 'lookup_order',
            description: 'Finds an order by its number',
            parameters: { type: 'object', properties: { order_id: { type: 'string' } }, required: ['order_id'] },
          },
        },
      ],
    });
    expect(fake.requests[1]!.body.messages).toEqual([
      { role: 'system', content: 'You help Ada with orders.' },
      { role: 'assistant', content: 'Hi Ada, Acme orders here.' },
      { role: 'user', content: 'Where is order 42?' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_A1', type: 'function', function: { name: 'lookup_order', arguments: '{"order_id":"42"}' } }] },
      { role: 'tool', tool_call_id: 'call_A1', content: '{"status":"shipped"}' },
    ]);

    // The custom function: POSTed, signed with both headers by the webhook key, the call's context in the body.
    expect(receiver.requests).toHaveLength(1);
    const sent = receiver.requests[0]!;
    expect(sent.method).toBe('POST');
    expect(sent.path).toBe('/orders');
    expect(sent.headers['content-type']).toBe('application/json');
    expect(sent.headers['x-parley-signature']).toBe(sent.headers['x-retell-signature']);
    expect(verifyWebhookSignature(sent.text, app.workspace.api_key, sent.headers['x-retell-signature']!)).toBe(true);
    expect(verifyWebhookSignature(sent.text, 'key_not_the_webhook_key', sent.headers['x-retell-signature']!)).toBe(false);
    expect(sent.body).toEqual({
      call: {
        call_id: 'call_0123456789abcdef01234567',
        call_type: 'phone_call',
        agent_id: agent.agent_id,
        agent_version: agent.version,
        call_status: 'ongoing',
        from_number: '+14155550100',
        to_number: '+14155550199',
        metadata: { ticket: 7 },
        retell_llm_dynamic_variables: { name: 'Ada' },
        collected_dynamic_variables: {},
        transcript: 'Agent: Hi Ada, Acme orders here.\nUser: Where is order 42?',
        transcript_object: [
          { role: 'agent', content: 'Hi Ada, Acme orders here.' },
          { role: 'user', content: 'Where is order 42?' },
        ],
      },
      name: 'lookup_order',
      args: { order_id: '42' },
    });
  });

  it("turns a function's timeout and error status into tool results, and the conversation goes on", async () => {
    const { state } = await open({
      general_prompt: 'Help.',
      begin_message: '',
      general_tools: [
        lookupTool({ name: 'slow_lookup', url: `${receiver.url}/slow`, timeout_ms: 1000 }),
        lookupTool({ name: 'broken_lookup', url: `${receiver.url}/broken` }),
      ],
    });
    receiver.answer = (request) => (request.path === '/slow' ? { delayMs: 3000, body: '{}' } : { status: 503, body: 'down for maintenance' });
    fake.enqueue(
      {
        body: toolCallCompletion([
          { id: 'call_S', name: 'slow_lookup', arguments: { order_id: '1' } },
          { id: 'call_B', name: 'broken_lookup', arguments: { order_id: '2' } },
        ]),
      },
      { body: completion('Sorry, our order system is not answering.') },
    );
    const started = Date.now();
    const reply = await agentTurn(state, { type: 'user_said', text: 'Orders 1 and 2?' });
    expect(Date.now() - started).toBeLessThan(2900);
    expect(reply.events).toEqual([
      { role: 'user', content: 'Orders 1 and 2?', words: [] },
      { role: 'tool_call_invocation', tool_call_id: 'call_S', name: 'slow_lookup', arguments: '{"order_id":"1"}' },
      { role: 'tool_call_invocation', tool_call_id: 'call_B', name: 'broken_lookup', arguments: '{"order_id":"2"}' },
      { role: 'tool_call_result', tool_call_id: 'call_S', content: 'Error: the function did not answer within 1000 ms', successful: false },
      { role: 'tool_call_result', tool_call_id: 'call_B', content: 'Error: the function answered HTTP 503: down for maintenance', successful: false },
      { role: 'agent', content: 'Sorry, our order system is not answering.', words: [] },
    ]);
    expect(fake.requests[1]!.body.messages.slice(-3)).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_S', type: 'function', function: { name: 'slow_lookup', arguments: '{"order_id":"1"}' } },
          { id: 'call_B', type: 'function', function: { name: 'broken_lookup', arguments: '{"order_id":"2"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_S', content: 'Error: the function did not answer within 1000 ms' },
      { role: 'tool', tool_call_id: 'call_B', content: 'Error: the function answered HTTP 503: down for maintenance' },
    ]);
  });

  it('waits for the user when the user speaks first, and the model opens when there is no begin message', async () => {
    const userFirst = await open({ general_prompt: 'Help.', start_speaker: 'user', begin_message: 'never said' });
    expect((await agentTurn(userFirst.state, { type: 'call_started' })).utterances).toEqual([]);
    const modelFirst = await open({ general_prompt: 'Greet warmly.' });
    fake.enqueue({ body: completion('Good morning!') });
    expect((await agentTurn(modelFirst.state, { type: 'call_started' })).utterances).toEqual(['Good morning!']);
    expect(fake.requests.at(-1)!.body.messages).toEqual([{ role: 'system', content: 'Greet warmly.' }]);
  });

  it('sends the model only what fits the token limit: the system prompt, then the latest turns, a tool call with its result', async () => {
    const { agent } = await newAgent(app.api, { llm: { general_prompt: 'Keep it short.', begin_message: '' } });
    const state = await openConversation({
      workspaceId: app.workspace.workspace_id,
      agentId: agent.agent_id,
      agentVersion: agent.version,
      callId: 'call_0123456789abcdef0123cafe',
      channel: 'chat',
      dynamicVariables: {},
      llmTokenLimit: 1024,
    });
    // 1,024 tokens less 300 for the reply and 4 for the prompt leave 720: about 2,880 characters.
    const long = (letter: string) => letter.repeat(1200); // 300 tokens
    state.history.push(
      { role: 'user', content: long('a') },
      { role: 'tool_call_invocation', tool_call_id: 'old', name: 'lookup', arguments: '{}' },
      // After the latest two turns 418 tokens are left; the call (2) and its result (500) go together, never the call alone.
      { role: 'tool_call_result', tool_call_id: 'old', content: 'b'.repeat(2000) },
      { role: 'agent', content: long('c') },
    );
    fake.enqueue({ body: completion('Short answer.') });
    await agentTurn(state, { type: 'user_said', text: 'And now?' });
    expect(fake.requests[0]!.body.messages).toEqual([
      { role: 'system', content: 'Keep it short.' },
      { role: 'assistant', content: long('c') },
      { role: 'user', content: 'And now?' },
    ]);
  });

  it("moves between a multi-state LLM's states through their edge tools", async () => {
    const { state } = await open({
      general_prompt: 'You are a clinic receptionist.',
      begin_message: '',
      starting_state: 'intake',
      states: [
        { name: 'intake', state_prompt: 'Find out what they need.', edges: [{ destination_state_name: 'booking', description: 'The user wants an appointment' }] },
        { name: 'booking', state_prompt: 'Book the appointment.' },
      ],
    });
    fake.enqueue(
      { body: toolCallCompletion([{ id: 'call_T', name: 'transition_to_booking', arguments: {} }]) },
      { body: completion('Which day suits you?') },
    );
    const reply = await agentTurn(state, { type: 'user_said', text: 'I need an appointment' });
    expect(reply.utterances).toEqual(['Which day suits you?']);
    expect(reply.state.llm_state).toBe('booking');
    expect(fake.requests[0]!.body.messages[0]).toEqual({ role: 'system', content: 'You are a clinic receptionist.\n\nFind out what they need.' });
    expect(fake.requests[0]!.body.tools.map((tool: any) => tool.function.name)).toEqual(['transition_to_booking']);
    expect(fake.requests[1]!.body.messages[0]).toEqual({ role: 'system', content: 'You are a clinic receptionist.\n\nBook the appointment.' });
    expect(reply.events.slice(1, 3)).toEqual([
      { role: 'tool_call_invocation', tool_call_id: 'call_T', name: 'transition_to_booking', arguments: '{}' },
      { role: 'tool_call_result', tool_call_id: 'call_T', content: 'Moved on to booking', successful: true },
    ]);
  });
});

describe('through the offline model', () => {
  beforeEach(() => useLanguageModel(new OfflineModel()));

  const tools = () => [
    lookupTool({
      name: 'book_appointment',
      url: `${receiver.url}/book`,
      parameters: { type: 'object', properties: { reason: { type: 'string' }, party_size: { type: 'integer' } } },
    }),
    { type: 'end_call', name: 'end_call', speak_during_execution: true, execution_message_type: 'static_text', execution_message_description: 'Goodbye, {{name}}!' },
    {
      type: 'transfer_call',
      name: 'transfer_to_desk',
      transfer_destination: { type: 'predefined', number: '+14155550123' },
      transfer_option: { type: 'warm_transfer' },
    },
  ];

  it('calls the tool whose name the user asks for, with arguments from its schema, then quotes the result', async () => {
    const { state } = await open({ general_prompt: 'Book visits.', begin_message: 'Hello!', general_tools: tools() }, { name: 'Ada' });
    receiver.answer = () => ({ body: '{"booked":"Tuesday 10:00"}' });
    const reply = await agentTurn(state, { type: 'user_said', text: 'Can I book an appointment for Tuesday?' });
    expect(reply.events).toEqual([
      { role: 'user', content: 'Can I book an appointment for Tuesday?', words: [] },
      {
        role: 'tool_call_invocation',
        tool_call_id: 'call_offline_2',
        name: 'book_appointment',
        arguments: '{"reason":"Can I book an appointment for Tuesday?","party_size":1}',
      },
      { role: 'tool_call_result', tool_call_id: 'call_offline_2', content: '{"booked":"Tuesday 10:00"}', successful: true },
      { role: 'agent', content: 'The book_appointment tool answered: "{"booked":"Tuesday 10:00"}".', words: [] },
    ]);
    expect(receiver.requests.map((request) => request.body.args)).toEqual([{ reason: 'Can I book an appointment for Tuesday?', party_size: 1 }]);
  });

  it('answers in text when no tool is asked for', async () => {
    const { state } = await open({ general_prompt: 'Book visits.', begin_message: '', general_tools: tools() });
    const reply = await agentTurn(state, { type: 'user_said', text: 'What are your opening hours?' });
    expect(reply.utterances).toEqual([`You said: "What are your opening hours?". This is Parley's offline model; set LLM_BASE_URL for real answers.`]);
    expect(receiver.requests).toHaveLength(0);
  });

  it('ends the call on goodbye, after the closing message, and says nothing more', async () => {
    const { state } = await open({ general_prompt: 'Book visits.', begin_message: '', general_tools: tools() }, { name: 'Ada' });
    const reply = await agentTurn(state, { type: 'user_said', text: 'That is all, goodbye.' });
    expect(reply.end).toEqual({ reason: 'agent_hangup' });
    expect(reply.utterances).toEqual(['Goodbye, Ada!']);
    expect(reply.events).toEqual([
      { role: 'user', content: 'That is all, goodbye.', words: [] },
      { role: 'agent', content: 'Goodbye, Ada!', words: [] },
      { role: 'tool_call_invocation', tool_call_id: 'call_offline_2', name: 'end_call', arguments: '{}' },
      { role: 'tool_call_result', tool_call_id: 'call_offline_2', content: 'The call was ended.', successful: true },
    ]);
    expect(reply.state.ended).toBe(true);
    const after = await agentTurn(reply.state, { type: 'user_said', text: 'Hello?' });
    expect(after).toEqual({ state: reply.state, utterances: [], events: [] });
  });

  it('transfers to the predefined number when the user asks for a human, warm as the option says', async () => {
    const { state } = await open({ general_prompt: 'Book visits.', begin_message: '', general_tools: tools() });
    const reply = await agentTurn(state, { type: 'user_said', text: 'Let me talk to a human please' });
    expect(reply.transfer).toEqual({ number: '+14155550123', kind: 'warm', transfer_option: { type: 'warm_transfer' } });
    expect(reply.end).toBeUndefined();
    expect(reply.events.slice(1)).toEqual([
      { role: 'tool_call_invocation', tool_call_id: 'call_offline_2', name: 'transfer_to_desk', arguments: '{}' },
      { role: 'tool_call_result', tool_call_id: 'call_offline_2', content: 'Transferring the call to +14155550123.', successful: true },
    ]);
  });
});
