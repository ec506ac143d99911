import { describe, expect, it } from 'vitest';
import {
  OfflineModel,
  OpenAiCompatibleModel,
  type ChatMessage,
  type StreamEvent,
  type ToolDefinition,
} from '../../shared/vendors/llm/index.ts';
import { completion, startFakeOpenAi, toolCallCompletion } from '../support/fake-openai.ts';

/*
 * Tool calling in the language-model adapter: the OpenAI `tools` / `tool_calls` shapes on
 * the wire (complete and stream), and the offline model's deterministic rule.
 */
const llm = await startFakeOpenAi();
const model = () => new OpenAiCompatibleModel({ baseUrl: llm.url, retryBaseMs: 10 });

const lookup: ToolDefinition = {
  name: 'lookup_order',
  description: 'Finds an order',
  parameters: { type: 'object', properties: { order_id: { type: 'string' } }, required: ['order_id'] },
};

describe('OpenAI-compatible tool calls', () => {
  it('sends the tools and the tool turns in OpenAI shape, and reads the calls back', async () => {
    llm.reset();
    llm.enqueue({ body: toolCallCompletion([{ id: 'call_9', name: 'lookup_order', arguments: { order_id: '42' } }]) });
    const messages: ChatMessage[] = [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Where is order 41?' },
      { role: 'assistant', content: '', toolCalls: [{ id: 'call_1', name: 'lookup_order', arguments: '{"order_id":"41"}' }] },
      { role: 'tool', content: 'shipped', toolCallId: 'call_1' },
      { role: 'user', content: 'And 42?' },
    ];
    const answer = await model().complete({ model: 'gpt-4.1', messages, tools: [lookup] });
    expect(answer).toMatchObject({
      content: '',
      finishReason: 'tool_calls',
      toolCalls: [{ id: 'call_9', name: 'lookup_order', arguments: '{"order_id":"42"}' }],
    });
    expect(llm.requests[0]!.body.tools).toEqual([
      {
        type: 'function',
        function: {
          name: 'lookup_order',
          description: 'Finds an order',
          parameters: { type: 'object', properties: { order_id: { type: 'string' } }, required: ['order_id'] },
        },
      },
    ]);
    expect(llm.requests[0]!.body.messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Where is order 41?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'lookup_order', arguments: '{"order_id":"41"}' } }],
      },
      { role: 'tool', tool_call_id: 'call_1', content: 'shipped' },
      { role: 'user', content: 'And 42?' },
    ]);
  });

  it('sends no tools field without tools, and a text answer has no toolCalls', async () => {
    llm.reset();
    llm.enqueue({ body: completion('hi') });
    const answer = await model().complete({ model: 'gpt-4.1', messages: [{ role: 'user', content: 'hello' }] });
    expect(answer.toolCalls).toBeUndefined();
    expect(answer.content).toBe('hi');
    expect('tools' in llm.requests[0]!.body).toBe(false);
  });

  it('joins streamed tool-call fragments into whole calls', async () => {
    llm.reset();
    const chunk = (delta: unknown, finish: string | null = null) => ({ choices: [{ index: 0, delta, finish_reason: finish }] });
    llm.enqueue({
      events: [
        chunk({ role: 'assistant', tool_calls: [{ index: 0, id: 'call_s', type: 'function', function: { name: 'lookup_order', arguments: '' } }] }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: '{"order_' } }] }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: 'id":"7"}' } }] }),
        chunk({}, 'tool_calls'),
      ],
    });
    const events: StreamEvent[] = [];
    for await (const event of model().stream({ model: 'gpt-4.1', messages: [{ role: 'user', content: 'order 7' }], tools: [lookup] })) {
      events.push(event);
    }
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      type: 'done',
      content: '',
      finishReason: 'tool_calls',
      toolCalls: [{ id: 'call_s', name: 'lookup_order', arguments: '{"order_id":"7"}' }],
    });
  });
});

describe('the offline model with tools', () => {
  const offline = new OfflineModel();
  const tools: ToolDefinition[] = [
    {
      name: 'book_appointment',
      parameters: {
        type: 'object',
        properties: {
          reason: { type: 'string' },
          party_size: { type: 'integer' },
          confirmed: { type: 'boolean' },
          slot: { type: 'string', enum: ['morning', 'afternoon'] },
          notes: { type: 'array' },
          contact: { type: 'object', properties: { channel: { const: 'phone' }, priority: { type: 'number', default: 3 } } },
        },
      },
    },
    { name: 'end_call', offlineKeywords: ['bye', 'goodbye'] },
  ];

  it('calls the first tool whose name word starts a word of the line, with arguments from its schema', async () => {
    const answer = await offline.complete({
      model: 'gpt-4.1',
      messages: [
        { role: 'system', content: 'x' },
        { role: 'user', content: 'I need  Bookings for two, please' },
      ],
      tools,
    });
    expect(answer.content).toBe('');
    expect(answer.finishReason).toBe('tool_calls');
    expect(answer.toolCalls).toEqual([
      {
        id: 'call_offline_2',
        name: 'book_appointment',
        arguments: JSON.stringify({
          reason: 'I need Bookings for two, please',
          party_size: 1,
          confirmed: true,
          slot: 'morning',
          notes: [],
          contact: { channel: 'phone', priority: 3 },
        }),
      },
    ]);
  });

  it('uses the given keywords instead of the name, and calls nothing when no keyword is in the line', async () => {
    const bye = await offline.complete({ model: 'm', messages: [{ role: 'user', content: 'OK, bye!' }], tools });
    expect(bye.toolCalls).toEqual([{ id: 'call_offline_1', name: 'end_call', arguments: '{}' }]);
    // end_call has its own keywords, so the words of its name do not trigger it.
    const none = await offline.complete({ model: 'm', messages: [{ role: 'user', content: 'Please end this call' }], tools });
    expect(none.toolCalls).toBeUndefined();
    expect(none.content).toBe(`You said: "Please end this call". This is Parley's offline model; set LLM_BASE_URL for real answers.`);
  });

  it('answers in text after a tool result, quoting it', async () => {
    const answer = await offline.complete({
      model: 'm',
      messages: [
        { role: 'user', content: 'book it' },
        { role: 'assistant', content: '', toolCalls: [{ id: 'call_offline_1', name: 'book_appointment', arguments: '{}' }] },
        { role: 'tool', content: '{"ok":true}', toolCallId: 'call_offline_1' },
      ],
      tools,
    });
    expect(answer.toolCalls).toBeUndefined();
    expect(answer.content).toBe('The book_appointment tool answered: "{"ok":true}".');
  });
});
