import type { AddressInfo } from 'node:net';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { WebSocketServer, type WebSocket } from 'ws';
import { startTestApp } from '../support/app.ts';
import { newAgent, newAgentOn, newFlow } from '../support/factories.ts';
import { completion, startFakeOpenAi } from '../support/fake-openai.ts';

/*
 * The other engines, and analysis, on DynamoDB Local: a conversation flow walked with the
 * offline model, a custom LLM over a local WebSocket server, and post-call analysis
 * through the fake provider and the offline model.
 */
const app = await startTestApp();
const fake = await startFakeOpenAi();
const { agentTurn, analyzeConversation, closeConversation, openConversation, CustomLlmFailed } = await import(
  '../../shared/conversation/runtime.ts'
);
const { OfflineModel, OpenAiCompatibleModel, useLanguageModel } = await import('../../shared/vendors/llm/index.ts');

const ws = app.workspace.workspace_id;
const open = (agent: { agent_id: string; version: number }, callId = 'call_00000000000000000000aaaa') =>
  openConversation({ workspaceId: ws, agentId: agent.agent_id, agentVersion: agent.version, callId, channel: 'voice', dynamicVariables: {} });

beforeEach(() => {
  fake.reset();
  useLanguageModel(new OfflineModel());
});

describe('a conversation flow', () => {
  const prompt = (text: string) => ({ type: 'prompt', prompt: text });

  it('walks from the start node across two nodes to an end node, recording each transition', async () => {
    const flow = await newFlow(app.api, {
      global_prompt: 'You are the clinic front desk.',
      nodes: [
        {
          id: 'greet',
          name: 'Greeting',
          type: 'conversation',
          instruction: { type: 'static_text', text: 'Welcome to the clinic. How can I help?' },
          edges: [{ id: 'e1', destination_node_id: 'booking', transition_condition: prompt('User wants to book an appointment') }],
        },
        {
          id: 'booking',
          name: 'Booking',
          type: 'conversation',
          instruction: { type: 'static_text', text: 'Sure, which day suits you?' },
          edges: [{ id: 'e2', destination_node_id: 'bye', transition_condition: prompt('User says goodbye') }],
        },
        { id: 'bye', name: 'Goodbye', type: 'end', instruction: { type: 'static_text', text: 'Goodbye!' } },
      ],
    });
    const agent = await newAgentOn(app.api, { type: 'conversation-flow', conversation_flow_id: flow.conversation_flow_id });
    const state = await open(agent);

    const start = await agentTurn(state, { type: 'call_started' });
    expect(start.utterances).toEqual(['Welcome to the clinic. How can I help?']);
    expect(start.state.node_id).toBe('greet');

    const toBooking = await agentTurn(start.state, { type: 'user_said', text: 'I would like to book a cleaning' });
    expect(toBooking.events).toEqual([
      { role: 'user', content: 'I would like to book a cleaning', words: [] },
      { role: 'tool_call_invocation', tool_call_id: 'call_offline_3', name: 'edge_0_to_booking', arguments: '{}' },
      { role: 'tool_call_result', tool_call_id: 'call_offline_3', content: 'Moved on to booking', successful: true },
      {
        role: 'node_transition',
        former_node_id: 'greet',
        former_node_name: 'Greeting',
        new_node_id: 'booking',
        new_node_name: 'Booking',
        transition_type: 'normal',
      },
      { role: 'agent', content: 'Sure, which day suits you?', words: [] },
    ]);

    // No condition shares a word with the line: the node answers and the flow stays.
    const stay = await agentTurn(toBooking.state, { type: 'user_said', text: 'Tuesday morning' });
    expect(stay.state.node_id).toBe('booking');
    expect(stay.utterances).toEqual([`You said: "Tuesday morning". This is Parley's offline model; set LLM_BASE_URL for real answers.`]);

    const end = await agentTurn(stay.state, { type: 'user_said', text: 'Thanks, goodbye' });
    expect(end.end).toEqual({ reason: 'agent_hangup' });
    expect(end.utterances).toEqual(['Goodbye!']);
    expect(end.events.filter((event) => event.role === 'node_transition')).toEqual([
      { role: 'node_transition', former_node_id: 'booking', former_node_name: 'Booking', new_node_id: 'bye', new_node_name: 'Goodbye', transition_type: 'normal' },
    ]);
    expect(end.state.node_id).toBe('bye');
  });

  it('follows equation edges on dynamic variables, and transfer nodes transfer', async () => {
    const flow = await newFlow(app.api, {
      start_speaker: 'user',
      default_dynamic_variables: { tier: 'gold' },
      nodes: [
        {
          id: 'route',
          type: 'conversation',
          instruction: { type: 'static_text', text: 'One moment.' },
          edges: [
            {
              id: 'vip',
              destination_node_id: 'desk',
              transition_condition: { type: 'equation', equations: [{ left: '{{tier}}', operator: '==', right: 'gold' }], operator: '&&' },
            },
          ],
        },
        {
          id: 'desk',
          type: 'transfer_call',
          instruction: { type: 'static_text', text: 'Connecting you to the VIP desk.' },
          edge: { id: 'failed', destination_node_id: 'sorry', transition_condition: prompt('Transfer failed') },
          transfer_destination: { type: 'predefined', number: '+14155550177' },
          transfer_option: { type: 'cold_transfer' },
        },
        { id: 'sorry', type: 'conversation', instruction: { type: 'static_text', text: 'I cannot transfer you from here.' } },
      ],
    });
    const agent = await newAgentOn(app.api, { type: 'conversation-flow', conversation_flow_id: flow.conversation_flow_id });
    const state = await open(agent);
    expect((await agentTurn(state, { type: 'call_started' })).utterances).toEqual([]);
    const reply = await agentTurn(state, { type: 'user_said', text: 'Hi' });
    expect(reply.utterances).toEqual(['Connecting you to the VIP desk.']);
    expect(reply.transfer).toEqual({ number: '+14155550177', kind: 'cold', transfer_option: { type: 'cold_transfer' } });

    // A web call cannot be transferred: the node's transfer-failed edge is taken, unannounced.
    const web = await openConversation({ workspaceId: ws, agentId: agent.agent_id, agentVersion: agent.version, callId: 'call_00000000000000000000bbbb', channel: 'voice', dynamicVariables: {}, canTransfer: false });
    const refused = await agentTurn(web, { type: 'user_said', text: 'Hi' });
    expect(refused.utterances).toEqual(['I cannot transfer you from here.']);
    expect(refused.transfer).toBeUndefined();
    expect(refused.state.node_id).toBe('sorry');
  });
});

/** A custom LLM server: opens with config and a begin message; echoes lines, reporting a tool call; ends on "bye". */
const server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
await new Promise<void>((resolve) => server.once('listening', () => resolve()));
const url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}/llm`;
const connections: { path: string; received: any[] }[] = [];
afterAll(() => new Promise<void>((resolve) => {
  for (const client of server.clients) client.terminate();
  server.close(() => resolve());
}));

server.on('connection', (socket: WebSocket, request) => {
  const record = { path: request.url ?? '', received: [] as any[] };
  connections.push(record);
  socket.send(JSON.stringify({ response_type: 'config', config: { auto_reconnect: false, call_details: true } }));
  socket.send(JSON.stringify({ response_type: 'response', response_id: 0, content: 'Hello from the custom LLM.', content_complete: true }));
  socket.on('message', (data) => {
    const message = JSON.parse(String(data));
    record.received.push(message);
    if (message.interaction_type !== 'response_required') return;
    const last = message.transcript.at(-1).content as string;
    const id = message.response_id;
    if (/bye/i.test(last)) {
      socket.send(JSON.stringify({ response_type: 'response', response_id: id, content: 'Bye now.', content_complete: true, end_call: true }));
      return;
    }
    if (/silent/i.test(last)) return;
    socket.send(JSON.stringify({ response_type: 'tool_call_invocation', tool_call_id: 't1', name: 'lookup', arguments: '{"q":1}' }));
    socket.send(JSON.stringify({ response_type: 'tool_call_result', tool_call_id: 't1', content: 'found' }));
    socket.send(JSON.stringify({ response_type: 'response', response_id: id, content: 'You said: ', content_complete: false }));
    socket.send(JSON.stringify({ response_type: 'response', response_id: id, content: last, content_complete: true }));
  });
});


describe('a custom LLM over its WebSocket', () => {
  it('opens with call_details and the begin message, joins streamed responses, reconnects, and ends on end_call', async () => {
    const agent = await newAgentOn(app.api, { type: 'custom-llm', llm_websocket_url: url });
    const callId = 'call_00000000000000000000bbbb';
    const state = await open(agent, callId);

    const start = await agentTurn(state, { type: 'call_started' });
    expect(start.utterances).toEqual(['Hello from the custom LLM.']);
    expect(connections).toHaveLength(1);
    expect(connections[0]!.path).toBe(`/llm/${callId}`);

    const reply = await agentTurn(start.state, { type: 'user_said', text: 'Is my order ready?' });
    expect(reply.events).toEqual([
      { role: 'user', content: 'Is my order ready?', words: [] },
      { role: 'tool_call_invocation', tool_call_id: 't1', name: 'lookup', arguments: '{"q":1}' },
      { role: 'tool_call_result', tool_call_id: 't1', content: 'found' },
      { role: 'agent', content: 'You said: Is my order ready?', words: [] },
    ]);
    expect(connections).toHaveLength(1);
    expect(connections[0]!.received).toEqual([
      {
        interaction_type: 'call_details',
        call: expect.objectContaining({ call_id: callId, agent_id: agent.agent_id, agent_version: agent.version, call_status: 'ongoing' }),
      },
      {
        interaction_type: 'response_required',
        response_id: 1,
        transcript: [
          { role: 'agent', content: 'Hello from the custom LLM.' },
          { role: 'user', content: 'Is my order ready?' },
        ],
      },
    ]);

    // Another process (or a dropped socket): the next turn reconnects; the new opening message is not spoken.
    closeConversation(reply.state);
    const after = await agentTurn(reply.state, { type: 'user_said', text: 'Thanks. Bye!' });
    expect(connections).toHaveLength(2);
    expect(connections[1]!.received.map((message) => message.interaction_type)).toEqual(['call_details', 'response_required']);
    expect(connections[1]!.received[1].response_id).toBe(2);
    expect(after.utterances).toEqual(['Bye now.']);
    expect(after.end).toEqual({ reason: 'agent_hangup' });
  });

  it('is a CustomLlmFailed naming the open error when the egress guard refuses the server', async () => {
    // A host name passes at write (the URL's own address is only known by resolving it); here it resolves to a private address.
    const { useCustomLlmResolver } = await import('../../shared/conversation/engines/custom-llm.ts');
    useCustomLlmResolver(async () => [{ address: '10.0.0.9', family: 4 }]);
    try {
      const agent = await newAgentOn(app.api, { type: 'custom-llm', llm_websocket_url: 'ws://llm.parley.test/llm' });
      const state = await open(agent, 'call_00000000000000000000cccc');
      const failure = await agentTurn(state, { type: 'call_started' }).catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(CustomLlmFailed);
      expect((failure as InstanceType<typeof CustomLlmFailed>).disconnection_reason).toBe('error_llm_websocket_open');
      expect((failure as Error).message).toBe('Custom LLM failed: Destination not allowed: llm.parley.test resolves to a private address');
    } finally {
      useCustomLlmResolver(undefined);
    }
  });
});

describe('post-call analysis', () => {
  const analysisData = [
    { type: 'string', name: 'reason', description: 'Why they called' },
    { type: 'enum', name: 'department', description: 'Which team', choices: ['billing', 'sales'] },
    { type: 'boolean', name: 'wants_callback', description: 'Asked to be called back' },
    { type: 'number', name: 'order_count', description: 'Orders mentioned' },
    { type: 'system-presets', name: 'call_summary' },
  ];
  const transcript = [
    { role: 'agent' as const, content: 'Hello, Acme billing.' },
    { role: 'user' as const, content: 'Hi, please give me a callback about my invoice.' },
    { role: 'agent' as const, content: 'Sure, we will call you back.' },
    { role: 'user' as const, content: 'Great, thank you!' },
  ];

  it('asks the agent version’s analysis model in JSON mode and keeps only well-typed values', async () => {
    useLanguageModel(new OpenAiCompatibleModel({ baseUrl: fake.url, retryBaseMs: 10 }));
    const { agent } = await newAgent(app.api, { agent: { post_call_analysis_data: analysisData, post_call_analysis_model: 'gpt-4.1-mini' } });
    fake.enqueue({
      body: completion(
        JSON.stringify({
          call_summary: 'The user asked for a callback about an invoice.',
          user_sentiment: 'Positive',
          call_successful: true,
          in_voicemail: false,
          custom_analysis_data: { reason: 'invoice', department: 'support', wants_callback: 'true', order_count: 'two' },
        }),
      ),
    });
    const analysis = await analyzeConversation({ workspaceId: ws, agentId: agent.agent_id, agentVersion: agent.version, transcript, channel: 'voice' });
    expect(analysis).toEqual({
      call_summary: 'The user asked for a callback about an invoice.',
      user_sentiment: 'Positive',
      call_successful: true,
      in_voicemail: false,
      custom_analysis_data: { reason: 'invoice', wants_callback: true },
    });
    const sent = fake.requests[0]!.body;
    expect(sent.model).toBe('gpt-4.1-mini');
    expect(sent.response_format).toEqual({ type: 'json_object' });
    expect(sent.messages[1]).toEqual({
      role: 'user',
      content:
        'Transcript:\nAgent: Hello, Acme billing.\nUser: Hi, please give me a callback about my invoice.\nAgent: Sure, we will call you back.\nUser: Great, thank you!',
    });
    expect(sent.messages[0].content).toContain(
      'custom_analysis_data items (JSON): [{"name":"reason","type":"string","description":"Why they called"},' +
        '{"name":"department","type":"enum","description":"Which team","choices":["billing","sales"]},' +
        '{"name":"wants_callback","type":"boolean","description":"Asked to be called back"},' +
        '{"name":"order_count","type":"number","description":"Orders mentioned"}]',
    );
  });

  it('builds a deterministic analysis offline, with in_voicemail from the caller', async () => {
    const { agent } = await newAgent(app.api, { agent: { post_call_analysis_data: analysisData } });
    const input = { workspaceId: ws, agentId: agent.agent_id, agentVersion: agent.version, transcript, channel: 'voice' as const };
    expect(await analyzeConversation(input)).toEqual({
      call_summary: 'The user and the agent talked (2 user and 2 agent turns). The user first said: "Hi, please give me a callback about my invoice.".',
      user_sentiment: 'Positive',
      call_successful: true,
      in_voicemail: false,
      custom_analysis_data: { reason: 'Great, thank you!', department: 'billing', wants_callback: true, order_count: 2 },
    });
    expect(await analyzeConversation({ ...input, transcript: [transcript[0]!], inVoicemail: true })).toEqual({
      call_summary: 'The agent spoke 1 time; the user did not speak.',
      user_sentiment: 'Unknown',
      call_successful: false,
      in_voicemail: true,
      custom_analysis_data: { reason: '', department: 'billing', wants_callback: false, order_count: 0 },
    });
  });
});
