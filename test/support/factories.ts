import { randomBytes, randomInt } from 'node:crypto';

/** Object factories: valid request bodies with overridable fields. */
export const apiKeyBody = (overrides: Record<string, unknown> = {}) => ({
  name: `key ${randomBytes(3).toString('hex')}`,
  ...overrides,
});

export const publicKeyBody = (overrides: Record<string, unknown> = {}) => ({
  name: `browser ${randomBytes(3).toString('hex')}`,
  ...overrides,
});

/** A valid, random San Francisco number (E.164); tables are per test file, so collisions are left to chance. */
export const freshNumber = () => `+1415${randomInt(200, 1000)}${String(randomInt(0, 10_000)).padStart(4, '0')}`;

interface Api {
  post(path: string, options: { body: unknown }): Promise<{ status: number; body: any }>;
}

async function created(res: Promise<{ status: number; body: any }>, what: string) {
  const { status, body } = await res;
  if (status !== 201) throw new Error(`creating ${what} answered ${status}: ${JSON.stringify(body)}`);
  return body;
}

/** A fresh number imported over SIP (a trunk at example.com), with the given fields (its agent bindings). */
export async function importNumber(api: Api, fields: Record<string, unknown> = {}): Promise<string> {
  const number = freshNumber();
  await created(api.post('/import-phone-number', { body: { phone_number: number, termination_uri: 'sip:trunk.example.com', ...fields } }), `the number ${number}`);
  return number;
}

/** A Retell LLM through the API (the compatible client's tests create theirs with retell-sdk). */
export const newLlm = (api: Api, overrides: Record<string, unknown> = {}) =>
  created(api.post('/create-retell-llm', { body: { general_prompt: 'You are helpful.', ...overrides } }), 'a Retell LLM');

/** A voice agent on a fresh Retell LLM, through the API. */
export async function newAgent(api: Api, options: { agent?: Record<string, unknown>; llm?: Record<string, unknown> } = {}) {
  const llm = await newLlm(api, options.llm);
  const agent = await created(
    api.post('/create-agent', { body: { response_engine: { type: 'retell-llm', llm_id: llm.llm_id }, ...options.agent } }),
    'an agent',
  );
  return { agent, llm };
}

/**
 * A voice agent (newAgent) and a fresh number imported over SIP that places its outbound
 * calls: what a test of phone calls starts from. `number`: more of the number's fields (its cps_limit).
 */
export async function newAgentWithNumber(api: Api, options: Parameters<typeof newAgent>[1] & { number?: Record<string, unknown> } = {}) {
  const { agent, llm } = await newAgent(api, options);
  const number = await importNumber(api, { outbound_agents: [{ agent_id: agent.agent_id, weight: 1 }], ...options.number });
  return { agent, llm, number };
}

/** A chat agent on a fresh Retell LLM, through the API. */
export async function newChatAgent(api: Api, options: { chatAgent?: Record<string, unknown>; llm?: Record<string, unknown> } = {}) {
  const llm = await newLlm(api, options.llm);
  const chatAgent = await created(
    api.post('/create-chat-agent', { body: { response_engine: { type: 'retell-llm', llm_id: llm.llm_id }, ...options.chatAgent } }),
    'a chat agent',
  );
  return { chatAgent, llm };
}

const when = (prompt: string) => ({ type: 'prompt' as const, prompt });

/**
 * A conversation flow in progress, every optional field set, as the compatible client's
 * full fixtures send one: the greeting's edges already lead to a booking node not built
 * yet, and the inline component's first node to a node not added yet. The problems it
 * has are `FLOW_IN_PROGRESS_PROBLEMS`.
 */
export const flowInProgress = (overrides: Record<string, unknown> = {}) => ({
  model_choice: { model: 'gpt-4.1', type: 'cascading', high_priority: true },
  start_speaker: 'agent',
  start_node_id: 'greeting',
  global_prompt: 'You answer the phone for a dental clinic.',
  begin_after_user_silence_ms: 2000,
  begin_tag_display_position: { x: 100, y: 200 },
  default_dynamic_variables: { clinic_name: 'Harbour Dental', opening_hours: '8 am to 6 pm' },
  flex_mode: false,
  is_transfer_cf: false,
  kb_config: { filter_score: 0.6, top_k: 3 },
  model_temperature: 0.7,
  tool_call_strict_mode: true,
  mcps: [{ name: 'calendar', url: 'https://mcp.example.com/calendar', headers: { Authorization: 'Bearer cal' }, query_params: { clinic: 'harbour' }, timeout_ms: 5000 }],
  notes: [{ id: 'note_booking', content: 'Booking branch still to build.', display_position: { x: 300, y: 150 }, size: { height: 100, width: 200 } }],
  tools: [
    {
      type: 'custom',
      name: 'find_slot',
      tool_id: 'tool_find_slot',
      description: 'Find a free appointment slot',
      url: 'https://api.example.com/slots',
      method: 'GET',
      parameters: { type: 'object', properties: {} },
      timeout_ms: 1000,
    },
  ],
  nodes: [
    {
      id: 'greeting',
      type: 'conversation',
      name: 'Greeting',
      instruction: { type: 'prompt', text: 'Greet the caller and ask how you can help.' },
      display_position: { x: 0, y: 0 },
      interruption_sensitivity: 0.5,
      responsiveness: 0.8,
      edges: [{ id: 'wants_booking', transition_condition: when('The caller wants an appointment'), destination_node_id: 'book_appointment' }],
      else_edge: { id: 'anything_else', transition_condition: when('Anything else'), destination_node_id: 'farewell' },
      global_node_setting: {
        condition: 'The caller asks to start over',
        go_back_conditions: [{ id: 'start_over', transition_condition: when('Start over'), destination_node_id: 'greeting' }],
      },
      finetune_transition_examples: [
        { id: 'checkup', transcript: [{ role: 'user', content: 'I need a check-up' }], destination_node_id: 'book_appointment' },
      ],
    },
    { id: 'farewell', type: 'end', name: 'Farewell', display_position: { x: 400, y: 0 } },
  ],
  components: [
    {
      name: 'Collect details',
      start_node_id: 'ask_name',
      flex_mode: false,
      begin_tag_display_position: { x: 0, y: 300 },
      tools: [],
      mcps: [],
      notes: [],
      nodes: [
        {
          id: 'ask_name',
          type: 'conversation',
          instruction: { type: 'prompt', text: 'Ask for their name.' },
          edges: [{ id: 'got_name', transition_condition: when('They gave their name'), destination_node_id: 'ask_phone' }],
        },
      ],
    },
  ],
  ...overrides,
});

export const FLOW_IN_PROGRESS_PROBLEMS = [
  'nodes.0.edges.0.destination_node_id: No node with id "book_appointment"',
  'nodes.0.finetune_transition_examples.0.destination_node_id: No node with id "book_appointment"',
  'components.0.nodes.0.edges.0.destination_node_id: No node with id "ask_phone"',
];

/** The nodes that complete `flowInProgress`: the booking node its greeting leads to. */
export const bookingNode = () => ({
  id: 'book_appointment',
  type: 'conversation',
  instruction: { type: 'prompt', text: 'Find a slot and book it.' },
  always_edge: { id: 'booked', transition_condition: when('Booked'), destination_node_id: 'farewell' },
});

/** A shared component in progress: its only node leads to a node not added yet. */
export const componentInProgress = (overrides: Record<string, unknown> = {}) => ({
  name: 'Insurance check',
  start_node_id: 'ask_insurer',
  nodes: [
    {
      id: 'ask_insurer',
      type: 'conversation',
      instruction: { type: 'prompt', text: 'Ask which insurer they are with.' },
      edges: [{ id: 'named', transition_condition: when('They named an insurer'), destination_node_id: 'check_cover' }],
    },
  ],
  tools: [],
  mcps: [],
  notes: [{ id: 'note_cover', content: 'Cover check to come.' }],
  flex_mode: false,
  ...overrides,
});
/** A conversation flow through the API: one static conversation node unless `nodes` are given. */
export const newFlow = (api: Api, overrides: Record<string, unknown> = {}) =>
  created(
    api.post('/create-conversation-flow', {
      body: {
        model_choice: { model: 'gpt-4.1', type: 'cascading' },
        start_speaker: 'agent',
        nodes: [{ id: 'start', type: 'conversation', instruction: { type: 'static_text', text: 'Hello.' } }],
        ...overrides,
      },
    }),
    'a conversation flow',
  );

/** A voice agent on any response engine (`{type: 'conversation-flow', …}`, `{type: 'custom-llm', …}`), through the API. */
export const newAgentOn = (api: Api, responseEngine: Record<string, unknown>, overrides: Record<string, unknown> = {}) =>
  created(api.post('/create-agent', { body: { response_engine: responseEngine, ...overrides } }), 'an agent');

/** A create-contact body with a fresh number. */
export const contactBody = (overrides: Record<string, unknown> = {}) => ({
  phone_number: freshNumber(),
  first_name: 'Ada',
  last_name: 'Lovelace',
  ...overrides,
});

/** A contact through the API. */
export const newContact = (api: Api, overrides: Record<string, unknown> = {}) =>
  created(api.post('/create-contact', { body: contactBody(overrides) }), 'a contact');

/**
 * `count` calls copied from `template` (a call item a sandbox call left, as the calls store
 * reads it): each with its own time-ordered call ID (every mention of the template's ID
 * replaced), `created_timestamp` = `firstCreatedMs + i * stepMs` with its start and end
 * shifted alike, and the fields `vary(i)` returns; the keys and index entries come from the
 * calls store's newCallItem, and the items are written in BatchWrites (putCallItems), four
 * batches of 250 at a time, each followed by its copies of the template's transcript lines
 * (in its own partition, as the calls store writes them). Answers the items written, in
 * creation order. The calls domain is imported here, not at the top, so that test files that
 * never seed do not load it before their settings are applied.
 */
export async function seedCallsLike(
  template: Record<string, unknown> & { call_id: string; created_timestamp: number },
  count: number,
  options: { firstCreatedMs: number; stepMs: number; vary?: (i: number) => Record<string, unknown> },
): Promise<Record<string, unknown>[]> {
  const [{ newCallItem, putCallItems }, { readLines }, { newTimeOrderedId }, { table }] = await Promise.all([
    import('../../shared/calls/store.ts'),
    import('../../shared/calls/line-store.ts'),
    import('../../shared/platform/ids.ts'),
    import('../../shared/platform/store/table.ts'),
  ]);
  const { pk: _pk, sk: _sk, gsi1pk: _g1, gsi1sk: _g1s, gsi2pk: _g2, gsi2sk: _g2s, idempotency_claim: _claim, ...fields } = template;
  const text = JSON.stringify(fields);
  const lines = JSON.stringify(await readLines(template.call_id));
  const items = Array.from({ length: count }, (_, i) => {
    const created = options.firstCreatedMs + i * options.stepMs;
    const callId = newTimeOrderedId('call', created);
    const copy = JSON.parse(text.replaceAll(template.call_id, callId)) as Record<string, unknown>;
    const shift = created - template.created_timestamp;
    for (const field of ['start_timestamp', 'end_timestamp'] as const) {
      if (typeof copy[field] === 'number') copy[field] = (copy[field] as number) + shift;
    }
    return newCallItem({ ...copy, ...options.vary?.(i), call_id: callId, created_timestamp: created } as Parameters<typeof newCallItem>[0]);
  });
  const chunks = Array.from({ length: Math.ceil(items.length / 250) }, (_, i) => items.slice(i * 250, (i + 1) * 250));
  let next = 0;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < chunks.length) {
        const chunk = chunks[next++]!;
        await putCallItems(chunk);
        await table.batchPut(chunk.flatMap((item) => JSON.parse(lines.replaceAll(template.call_id, item.call_id)) as Record<string, unknown>[]));
      }
    }),
  );
  return items;
}
