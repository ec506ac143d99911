import type Retell from 'retell-sdk';
import { describe, expect, it } from 'vitest';
import { LLM_MODELS } from '../../shared/agents/llms/models.ts';
import { NODE_TYPES } from '../../shared/agents/flows/flow-schemas.ts';
import { startTestApp } from '../support/app.ts';
import { retellClient, sdkFailure } from '../support/sdk.ts';

const app = await startTestApp();
const retell = retellClient(app.url, app.workspace.api_key);

type FlowParams = Retell.ConversationFlowCreateParams;
type ComponentParams = Retell.ConversationFlowComponentCreateParams;


const prompt = (text: string) => ({ type: 'prompt' as const, text });
const when = (text: string) => ({ type: 'prompt' as const, prompt: text });

/** A two-node flow: a greeting that moves to an end node. */
function flowBody(overrides: Record<string, unknown> = {}): FlowParams {
  return {
    model_choice: { model: 'gpt-4.1', type: 'cascading' },
    start_speaker: 'agent',
    nodes: [
      {
        id: 'start',
        type: 'conversation',
        instruction: prompt('Greet the caller.'),
        edges: [{ id: 'e1', transition_condition: when('The caller is done'), destination_node_id: 'end' }],
      },
      { id: 'end', type: 'end' },
    ],
    ...overrides,
  } as FlowParams;
}

function componentBody(overrides: Record<string, unknown> = {}): ComponentParams {
  return {
    name: 'Collect details',
    nodes: [
      { id: 'collect', type: 'conversation', instruction: prompt('Ask for their name.') },
      { id: 'done', type: 'end' },
    ],
    ...overrides,
  } as ComponentParams;
}

/** A component node using `componentId`, moving on to `next`. */
function componentNode(id: string, componentId: string, componentType: 'local' | 'shared', next = 'end') {
  return {
    id,
    type: 'component' as const,
    component_id: componentId,
    component_type: componentType,
    else_edge: { id: `${id}-else`, transition_condition: when('Else'), destination_node_id: next },
  };
}

/** A voice agent on the flow; publishing it publishes the flow version it runs. */
const agentOn = async (flowId: string) =>
  (await retell.agent.create({ response_engine: { type: 'conversation-flow', conversation_flow_id: flowId } } as Retell.AgentCreateParams)).agent_id;
const flowCount = async () => (await app.api.get('/list-conversation-flows')).body.length as number;
const componentCount = async () => (await app.api.get('/list-conversation-flow-components')).body.length as number;
const MODEL_LIST = LLM_MODELS.join(', ');

describe('conversation flows', () => {
  it('creates through the client, with the start node defaulting to the first node, and reads back', async () => {
    const flow = await retell.conversationFlow.create({
      model_choice: { model: 'gpt-4.1', type: 'cascading' },
      nodes: [{ id: 'start', instruction: { text: 'Greet the customer.', type: 'prompt' }, type: 'conversation' }],
      start_speaker: 'agent',
    });
    expect(flow.conversation_flow_id).toMatch(/^conversation_flow_[0-9a-f]{24}$/);
    expect(flow).toMatchObject({
      version: 0,
      is_published: false,
      start_node_id: 'start',
      start_speaker: 'agent',
      model_choice: { model: 'gpt-4.1', type: 'cascading' },
      global_prompt: null,
      components: null,
      is_transfer_cf: false,
    });
    expect(await retell.conversationFlow.retrieve(flow.conversation_flow_id)).toEqual(flow);
    expect(await retell.conversationFlow.retrieve(flow.conversation_flow_id, { version: 0 })).toEqual(flow);

    const page = await retell.conversationFlow.list();
    expect(page.has_more).toBe(false);
    expect(page.items.map((f) => f.conversation_flow_id)).toContain(flow.conversation_flow_id);
    expect((await app.api.get('/list-conversation-flows')).body).toEqual(page.items);
  });

  it('keeps node configuration as sent and drops unknown and server-controlled fields', async () => {
    const body = flowBody({
      conversation_flow_id: 'conversation_flow_000000000000000000000000',
      version: 7,
      is_published: true,
      favourite_colour: 'blue',
      global_prompt: 'Be brief.',
      nodes: [
        {
          id: 'start',
          type: 'conversation',
          instruction: prompt('Hi'),
          display_position: { x: 10, y: 20 },
          responsiveness: 0.4,
          vendor_hint: 'kept',
        },
      ],
    });
    const flow = await retell.conversationFlow.create(body);
    expect(flow.conversation_flow_id).not.toBe('conversation_flow_000000000000000000000000');
    expect(flow).toMatchObject({ version: 0, is_published: false, global_prompt: 'Be brief.' });
    expect(flow).not.toHaveProperty('favourite_colour');
    expect(flow.nodes![0]).toEqual({
      id: 'start',
      type: 'conversation',
      instruction: { type: 'prompt', text: 'Hi' },
      display_position: { x: 10, y: 20 },
      responsiveness: 0.4,
      vendor_hint: 'kept',
    });
  });

  it('lists a page at a time on /v2 and as an array on the unversioned path', async () => {
    const own = await app.newWorkspace();
    const client = retellClient(app.url, own.api_key);
    const created = [];
    for (const prompt of ['one', 'two', 'three']) created.push(await client.conversationFlow.create(flowBody({ global_prompt: prompt })));
    const page1 = await client.conversationFlow.list({ limit: 2 });
    expect(page1.items.map((f) => f.global_prompt)).toEqual(['three', 'two']);
    expect(page1).toMatchObject({ has_more: true, pagination_key: created[1]!.conversation_flow_id });
    const page2 = await client.conversationFlow.list({ limit: 2, pagination_key: page1.pagination_key });
    expect(page2.items.map((f) => f.global_prompt)).toEqual(['one']);
    expect(page2.has_more).toBe(false);
    expect(page2).not.toHaveProperty('pagination_key');
    const ascending = await client.conversationFlow.list({ sort_order: 'ascending' });
    expect(ascending.items.map((f) => f.global_prompt)).toEqual(['one', 'two', 'three']);

    const array = await own.api.get('/list-conversation-flows');
    expect(array.body.map((f: { global_prompt: string }) => f.global_prompt)).toEqual(['three', 'two', 'one']);
    const bad = await own.api.get('/v2/list-conversation-flows?pagination_key=conversation_flow_000000000000000000000000');
    expect(bad.body).toEqual({ status: 400, message: 'Invalid pagination_key' });
  });

  it('updates the latest draft in place, or the draft ?version=', async () => {
    const flow = await retell.conversationFlow.create(flowBody());
    const updated = await retell.conversationFlow.update(flow.conversation_flow_id, { global_prompt: 'Be kind.' });
    expect(updated).toMatchObject({ version: 0, is_published: false, global_prompt: 'Be kind.', start_node_id: 'start' });
    expect(updated.nodes).toEqual(flow.nodes);
    const again = await retell.conversationFlow.update(flow.conversation_flow_id, { version: 0, model_temperature: 0.3 });
    expect(again).toMatchObject({ version: 0, global_prompt: 'Be kind.', model_temperature: 0.3 });
    expect(await retell.conversationFlow.retrieve(flow.conversation_flow_id)).toEqual(again);

    // is_transfer_cf can only be set at creation.
    const ignored = await retell.conversationFlow.update(flow.conversation_flow_id, { is_transfer_cf: true });
    expect(ignored.is_transfer_cf).toBe(false);

    expect(await sdkFailure(retell.conversationFlow.update(flow.conversation_flow_id, { version: 4, global_prompt: 'x' }))).toEqual({
      status: 404,
      body: { status: 404, message: `Conversation flow ${flow.conversation_flow_id} has no version 4` },
    });
    expect((await sdkFailure(retell.conversationFlow.retrieve(flow.conversation_flow_id, { version: 4 }))).status).toBe(404);
  });

  const conversation = (id: string, extra: Record<string, unknown> = {}) => ({ id, type: 'conversation', instruction: prompt(id), ...extra });
  const edgeTo = (id: string, destination: string) => ({ id, transition_condition: when('go'), destination_node_id: destination });

  // A draft may be incomplete: the graph's problems are stored in `validation`, and what
  // runs the flow (publishing, binding a number, a call or chat) refuses it with each one.
  it.each([
    ['a duplicate node id', { nodes: [conversation('start'), conversation('start')] }, 'nodes.1.id: Duplicate node id "start"'],
    ['an unknown start node', { start_node_id: 'nowhere' }, 'start_node_id: No node with id "nowhere"'],
    ['a start node with no nodes', { nodes: [], start_node_id: 'start' }, 'start_node_id: No node with id "start"'],
    [
      'an edge to nowhere',
      { nodes: [conversation('a', { edges: [edgeTo('e', 'b')] }), conversation('b'), conversation('c', { edges: [edgeTo('e1', 'a'), edgeTo('e2', 'x')] })] },
      'nodes.2.edges.1.destination_node_id: No node with id "x"',
    ],
    ['an else edge to nowhere', { nodes: [{ id: 'b', type: 'branch', else_edge: edgeTo('e', 'gone') }] }, 'nodes.0.else_edge.destination_node_id: No node with id "gone"'],
    ['an always edge to nowhere', { nodes: [conversation('a', { always_edge: edgeTo('e', 'gone') })] }, 'nodes.0.always_edge.destination_node_id: No node with id "gone"'],
    [
      'a transfer edge to nowhere',
      { nodes: [conversation('a'), { id: 't', type: 'transfer_call', edge: edgeTo('e', 'gone'), transfer_destination: { type: 'predefined', number: '+61255501234' }, transfer_option: { type: 'cold_transfer' } }] },
      'nodes.1.edge.destination_node_id: No node with id "gone"',
    ],
    [
      'a go-back condition to nowhere',
      { nodes: [conversation('a'), conversation('g', { global_node_setting: { condition: 'asks for help', go_back_conditions: [edgeTo('back', 'gone')] } })] },
      'nodes.1.global_node_setting.go_back_conditions.0.destination_node_id: No node with id "gone"',
    ],
    [
      'a transition example to nowhere',
      { nodes: [conversation('a', { finetune_transition_examples: [{ id: 'x1', transcript: [], destination_node_id: 'gone' }] })] },
      'nodes.0.finetune_transition_examples.0.destination_node_id: No node with id "gone"',
    ],
    [
      'a shared component that does not exist',
      { nodes: [conversation('start'), componentNode('c', 'component_000000000000000000000000', 'shared', 'start')] },
      'nodes.1.component_id: No component with id "component_000000000000000000000000"',
    ],
    [
      'a shared component ID of the wrong form',
      { nodes: [conversation('start'), componentNode('c', 'greeter', 'shared', 'start')] },
      'nodes.1.component_id: No component with id "greeter"',
    ],
    [
      'a local component that is not in components',
      { nodes: [conversation('start'), componentNode('c', 'greeter', 'local', 'start')] },
      'nodes.1.component_id: No component named "greeter" in components',
    ],
    [
      'an inline component edge to nowhere',
      { components: [{ name: 'greeter', nodes: [conversation('hello', { edges: [edgeTo('e', 'start')] })] }] },
      'components.0.nodes.0.edges.0.destination_node_id: No node with id "start"',
    ],
    [
      'an inline component with an unknown start node',
      { components: [{ name: 'greeter', nodes: [conversation('hello')], start_node_id: 'bye' }] },
      'components.0.start_node_id: No node with id "bye"',
    ],
    [
      'two inline components with one name',
      { components: [{ name: 'greeter', nodes: [] }, { name: 'greeter', nodes: [] }] },
      'components.1.name: Duplicate component name "greeter"',
    ],
    [
      'an inline component that contains itself',
      {
        components: [
          { name: 'a', nodes: [componentNode('to-b', 'b', 'local', 'to-b')] },
          { name: 'b', nodes: [conversation('x'), componentNode('to-a', 'a', 'local', 'x')] },
        ],
      },
      'components.0.nodes.0.component_id: Components cannot contain themselves ("a" → "b" → "a"); ' +
        'components.1.nodes.1.component_id: Components cannot contain themselves ("b" → "a" → "b")',
    ],
    [
      'several problems at once',
      { start_node_id: 'zzz', nodes: [conversation('a', { edges: [edgeTo('e', 'q')] }), conversation('a')] },
      'nodes.1.id: Duplicate node id "a"; nodes.0.edges.0.destination_node_id: No node with id "q"; start_node_id: No node with id "zzz"',
    ],
  ])('saves a draft with %s, answering each problem in validation, and refuses to publish it with them', async (_label, overrides, message) => {
    const before = await flowCount();
    const flow = await retell.conversationFlow.create(flowBody(overrides));
    expect(flow).toMatchObject({ version: 0, is_published: false, validation: message.split('; ') });
    expect(await flowCount()).toBe(before + 1);
    const agentId = await agentOn(flow.conversation_flow_id);
    expect(await sdkFailure(retell.agent.publish(agentId, { version: 0 }))).toEqual({
      status: 400,
      body: {
        status: 400,
        message: `Version 0 of agent ${agentId} cannot be published: conversation flow ${flow.conversation_flow_id} version 0 is incomplete: ${message}`,
      },
    });
    expect(await retell.conversationFlow.retrieve(flow.conversation_flow_id)).toMatchObject({ is_published: false });
  });

  it.each([
    ['an unknown flow model', { model_choice: { model: 'gpt-3.5-turbo', type: 'cascading' } }, `model_choice.model: Unknown model "gpt-3.5-turbo"; use one of ${MODEL_LIST}`],
    ['a model the compatible API has and the model table does not', { model_choice: { model: 'gpt-5.1', type: 'cascading' } }, `model_choice.model: Unknown model "gpt-5.1"; use one of ${MODEL_LIST}`],
    [
      'an unknown node model',
      { nodes: [conversation('start', { model_choice: { model: 'llama-3', type: 'cascading' } })] },
      `nodes.0.model_choice.model: Unknown model "llama-3"; use one of ${MODEL_LIST}`,
    ],
    [
      'an unknown model in an inline component',
      { components: [{ name: 'c', nodes: [{ id: 'e', type: 'end', model_choice: { model: 'gpt-2', type: 'cascading' } }] }] },
      `components.0.nodes.0.model_choice.model: Unknown model "gpt-2"; use one of ${MODEL_LIST}`,
    ],
    ['a model choice of another type', { model_choice: { model: 'gpt-4.1', type: 'realtime' } }, 'model_choice.type: Expected one of "cascading"'],
    ['no model choice', { model_choice: undefined }, 'model_choice: Required'],
    ['a node without its required fields', { nodes: [{ id: 'c', type: 'component', component_type: 'shared' }] }, 'nodes.0.else_edge: Required; nodes.0.component_id: Required'],
    ['a conversation node without an instruction', { nodes: [{ id: 'start', type: 'conversation' }] }, 'nodes.0.instruction: Required'],
    [
      'a single edge without its condition',
      { nodes: [conversation('start', { skip_response_edge: { id: 'skip', destination_node_id: 'start' } })] },
      'nodes.0.skip_response_edge.transition_condition: Required',
    ],
    ['a node of an unknown type', { nodes: [{ id: 'x', type: 'teleport' }] }, `nodes.0.type: Expected one of ${NODE_TYPES.map((type) => `"${type}"`).join(', ')}`],
  ])('refuses %s with a 400 naming the field, writing nothing (no draft may have it)', async (_label, overrides, message) => {
    const before = await flowCount();
    const res = await sdkFailure(retell.conversationFlow.create(flowBody(overrides)));
    expect(res).toEqual({ status: 400, body: { status: 400, message } });
    expect(await flowCount()).toBe(before);
  });

  it('accepts edges without a destination, local components named by components, and a graph with every rule met', async () => {
    const flow = await retell.conversationFlow.create(
      flowBody({
        nodes: [
          conversation('start', { edges: [{ id: 'open', transition_condition: when('unsure') }], else_edge: edgeTo('else', 'greet') }),
          componentNode('greet', 'greeter', 'local', 'end'),
          { id: 'end', type: 'end', model_choice: { model: 'claude-4.5-haiku', type: 'cascading' } },
        ],
        components: [{ name: 'greeter', nodes: [conversation('hello'), conversation('bye')], start_node_id: 'bye' }, { name: 'empty', nodes: [] }],
      }),
    );
    expect(flow.start_node_id).toBe('start');
    expect(flow.components).toEqual([
      { name: 'greeter', nodes: [conversation('hello'), conversation('bye')], start_node_id: 'bye' },
      { name: 'empty', nodes: [] },
    ]);
  });

  it('checks the whole resulting flow on update: graph problems go to validation, a bad schema writes nothing', async () => {
    const flow = await retell.conversationFlow.create(flowBody());
    expect(flow).toMatchObject({ validation: [] });
    const badModel = await sdkFailure(
      retell.conversationFlow.update(flow.conversation_flow_id, { model_choice: { model: 'gpt-4o' as 'gpt-4.1', type: 'cascading' } }),
    );
    expect(badModel.body.message).toBe(`model_choice.model: Unknown model "gpt-4o"; use one of ${MODEL_LIST}`);
    expect(await retell.conversationFlow.retrieve(flow.conversation_flow_id)).toEqual(flow);

    const replaced = await retell.conversationFlow.update(flow.conversation_flow_id, { nodes: [{ id: 'only', type: 'end' }] });
    expect(replaced).toMatchObject({ version: 0, nodes: [{ id: 'only', type: 'end' }], validation: ['start_node_id: No node with id "start"'] });
    expect(await retell.conversationFlow.retrieve(flow.conversation_flow_id)).toEqual(replaced);

    const moved = await retell.conversationFlow.update(flow.conversation_flow_id, { start_node_id: null });
    expect(moved).toMatchObject({ version: 0, start_node_id: 'only', nodes: [{ id: 'only', type: 'end' }], validation: [] });
  });

  it('refuses to delete a flow an agent runs unless forced, then deletes it with its versions', async () => {
    const flow = await retell.conversationFlow.create(flowBody());
    const agent = await retell.agent.create({
      response_engine: { type: 'conversation-flow', conversation_flow_id: flow.conversation_flow_id },
    } as Retell.AgentCreateParams);
    const refused = await sdkFailure(retell.conversationFlow.delete(flow.conversation_flow_id));
    expect(refused).toEqual({
      status: 409,
      body: {
        status: 409,
        message: `Conversation flow ${flow.conversation_flow_id} is used by agent ${agent.agent_id}; point them at another engine first, or delete with force_delete=true`,
      },
    });
    expect(await retell.conversationFlow.retrieve(flow.conversation_flow_id)).toEqual(flow);
    await retell.conversationFlow.delete(flow.conversation_flow_id, { force_delete: true });
    expect((await sdkFailure(retell.conversationFlow.retrieve(flow.conversation_flow_id))).status).toBe(404);
    expect((await app.api.get(`/get-conversation-flow/${flow.conversation_flow_id}?version=0`)).status).toBe(404);

    const unused = await retell.conversationFlow.create(flowBody());
    const deleted = await app.api.delete(`/delete-conversation-flow/${unused.conversation_flow_id}`);
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');
    expect((await app.api.delete(`/delete-conversation-flow/${unused.conversation_flow_id}`)).body).toEqual({
      status: 404,
      message: `Conversation flow ${unused.conversation_flow_id} not found`,
    });
  });

  it('answers 404 for another workspace’s flow, exactly as for a missing one', async () => {
    const other = await app.newWorkspace();
    const foreign = (await other.api.post('/create-conversation-flow', { body: flowBody() })).body;
    const message = `Conversation flow ${foreign.conversation_flow_id} not found`;
    for (const res of [
      await app.api.get(`/get-conversation-flow/${foreign.conversation_flow_id}`),
      await app.api.patch(`/update-conversation-flow/${foreign.conversation_flow_id}`, { body: { global_prompt: 'mine' } }),
      await app.api.delete(`/delete-conversation-flow/${foreign.conversation_flow_id}`),
    ]) {
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ status: 404, message });
    }
    expect((await other.api.get(`/get-conversation-flow/${foreign.conversation_flow_id}`)).body).toEqual(foreign);
    expect((await app.api.get('/list-conversation-flows')).body.map((f: { conversation_flow_id: string }) => f.conversation_flow_id)).not.toContain(
      foreign.conversation_flow_id,
    );

    const agent = await app.api.post('/create-agent', {
      body: { response_engine: { type: 'conversation-flow', conversation_flow_id: foreign.conversation_flow_id } },
    });
    expect(agent.body).toEqual({ status: 400, message: `response_engine.conversation_flow_id: ${message}` });
  });

  it('refuses a malformed flow ID before looking', async () => {
    const res = await app.api.get('/get-conversation-flow/llm_000000000000000000000000');
    expect(res.body).toEqual({
      status: 400,
      message: 'conversation_flow_id: Must be a conversation flow ID (conversation_flow_ followed by 24 hex characters)',
    });
  });

  it('needs the agents scope', async () => {
    const key = (await app.api.post('/api-keys', { body: { name: 'calls only', scopes: ['calls'] } })).body.api_key;
    const scoped = app.api.withKey(key);
    for (const res of [
      await scoped.get('/v2/list-conversation-flows'),
      await scoped.post('/create-conversation-flow', { body: flowBody() }),
      await scoped.get('/list-conversation-flow-components'),
      await scoped.post('/create-conversation-flow-component', { body: componentBody() }),
    ]) {
      expect(res.status).toBe(403);
      expect(res.body.message).toBe('This API key lacks the "agents" scope');
    }
  });
});

describe('flows versioned with agents', () => {
  it('pins the flow version, publishes it with the agent, and branches a new flow draft for the next agent draft', async () => {
    const flow = await retell.conversationFlow.create(flowBody({ global_prompt: 'v0' }));
    const id = flow.conversation_flow_id;
    const agent = await retell.agent.create({
      response_engine: { type: 'conversation-flow', conversation_flow_id: id },
    } as Retell.AgentCreateParams);
    expect(agent.response_engine).toEqual({ type: 'conversation-flow', conversation_flow_id: id, version: 0 });

    await retell.agent.publish(agent.agent_id, { version: 0 });
    expect(await retell.conversationFlow.retrieve(id, { version: 0 })).toMatchObject({ version: 0, is_published: true, global_prompt: 'v0' });
    expect(await sdkFailure(retell.conversationFlow.update(id, { version: 0, global_prompt: 'sneaky' }))).toEqual({
      status: 400,
      body: { status: 400, message: `Version 0 of conversation flow ${id} is published and cannot be changed; create a new version from it` },
    });

    const next = await retell.agent.update(agent.agent_id, { agent_name: 'next' });
    expect(next).toMatchObject({ version: 1, is_published: false });
    expect(next.response_engine).toEqual({ type: 'conversation-flow', conversation_flow_id: id, version: 1 });
    expect(await retell.conversationFlow.retrieve(id)).toMatchObject({ version: 1, is_published: false, global_prompt: 'v0' });

    const edited = await retell.conversationFlow.update(id, { global_prompt: 'v1' });
    expect(edited).toMatchObject({ version: 1, is_published: false, global_prompt: 'v1' });
    expect((await retell.conversationFlow.retrieve(id, { version: 0 })).global_prompt).toBe('v0');
    expect(await retell.agent.retrieve(agent.agent_id, { version: 0 })).toMatchObject({
      is_published: true,
      response_engine: { type: 'conversation-flow', conversation_flow_id: id, version: 0 },
    });

    await retell.agent.publish(agent.agent_id, { version: 1 });
    expect(await retell.conversationFlow.retrieve(id, { version: 1 })).toMatchObject({ is_published: true, global_prompt: 'v1' });
    // Editing a flow whose latest version is published branches a new draft from it.
    const branched = await retell.conversationFlow.update(id, { global_prompt: 'v2' });
    expect(branched).toMatchObject({ version: 2, is_published: false, global_prompt: 'v2' });
  });

  it('refuses an agent pinned to a flow version that does not exist', async () => {
    const flow = await retell.conversationFlow.create(flowBody());
    const res = await app.api.post('/create-agent', {
      body: { response_engine: { type: 'conversation-flow', conversation_flow_id: flow.conversation_flow_id, version: 3 } },
    });
    expect(res.body).toEqual({
      status: 400,
      message: `response_engine.version: Conversation flow ${flow.conversation_flow_id} has no version 3`,
    });
  });
});

describe('conversation flow components', () => {
  it('creates, reads, lists, updates and deletes through the client', async () => {
    const created = await retell.conversationFlowComponent.create({
      name: 'Customer Information Collector',
      nodes: [
        {
          id: 'collect_info',
          instruction: { text: 'Ask the customer for their name and contact information.', type: 'prompt' },
          type: 'conversation',
        },
      ],
    });
    expect(created.conversation_flow_component_id).toMatch(/^component_[0-9a-f]{24}$/);
    expect(created).toMatchObject({
      name: 'Customer Information Collector',
      start_node_id: 'collect_info',
      linked_conversation_flow_ids: [],
    });
    expect(typeof created.user_modified_timestamp).toBe('number');
    const id = created.conversation_flow_component_id;
    expect(await retell.conversationFlowComponent.retrieve(id)).toEqual(created);

    const listed = await retell.conversationFlowComponent.list();
    expect(listed.items.map((c) => c.conversation_flow_component_id)).toContain(id);
    expect(listed.has_more).toBe(false);
    expect((await app.api.get('/list-conversation-flow-components')).body).toEqual(listed.items);

    const renamed = await retell.conversationFlowComponent.update(id, { name: 'Collector' });
    expect(renamed).toMatchObject({ name: 'Collector', nodes: created.nodes, start_node_id: 'collect_info' });
    expect(renamed.user_modified_timestamp).toBeGreaterThanOrEqual(created.user_modified_timestamp);
    expect(await retell.conversationFlowComponent.retrieve(id)).toEqual(renamed);

    await retell.conversationFlowComponent.delete(id);
    expect(await sdkFailure(retell.conversationFlowComponent.retrieve(id))).toEqual({
      status: 404,
      body: { status: 404, message: `Conversation flow component ${id} not found` },
    });
  });

  it('pages the list on /v2', async () => {
    const own = await app.newWorkspace();
    const client = retellClient(app.url, own.api_key);
    const created = [];
    for (const name of ['one', 'two', 'three']) created.push(await client.conversationFlowComponent.create(componentBody({ name })));
    const page1 = await client.conversationFlowComponent.list({ limit: 2 });
    expect(page1.items.map((c) => c.name)).toEqual(['three', 'two']);
    expect(page1).toMatchObject({ has_more: true, pagination_key: created[1]!.conversation_flow_component_id });
    const page2 = await client.conversationFlowComponent.list({ limit: 2, pagination_key: page1.pagination_key });
    expect(page2.items.map((c) => c.name)).toEqual(['one']);
    expect((await own.api.get('/list-conversation-flow-components?sort_order=ascending')).body.map((c: { name: string }) => c.name)).toEqual([
      'one',
      'two',
      'three',
    ]);
  });

  it('links the flows that use a component and refuses to delete it while they do', async () => {
    const component = await retell.conversationFlowComponent.create(componentBody());
    const id = component.conversation_flow_component_id;
    const flow = await retell.conversationFlow.create(
      flowBody({
        nodes: [
          { id: 'start', type: 'conversation', instruction: prompt('Hi'), else_edge: { id: 'e', transition_condition: when('Else'), destination_node_id: 'details' } },
          componentNode('details', id, 'shared'),
          { id: 'end', type: 'end' },
        ],
      }),
    );
    expect((await retell.conversationFlowComponent.retrieve(id)).linked_conversation_flow_ids).toEqual([flow.conversation_flow_id]);
    const listed = (await retell.conversationFlowComponent.list()).items.find((c) => c.conversation_flow_component_id === id);
    expect(listed?.linked_conversation_flow_ids).toEqual([flow.conversation_flow_id]);

    const outer = await retell.conversationFlowComponent.create(
      componentBody({ name: 'Outer', nodes: [componentNode('inner', id, 'shared', 'done'), { id: 'done', type: 'end' }] }),
    );

    const refused = await sdkFailure(retell.conversationFlowComponent.delete(id));
    expect(refused).toEqual({
      status: 409,
      body: {
        status: 409,
        message: `Conversation flow component ${id} is used by conversation flow ${flow.conversation_flow_id}, component ${outer.conversation_flow_component_id}; remove it from them first`,
      },
    });

    await retell.conversationFlow.update(flow.conversation_flow_id, { nodes: [{ id: 'start', type: 'end' }] });
    await retell.conversationFlowComponent.update(outer.conversation_flow_component_id, { nodes: [{ id: 'done', type: 'end' }], start_node_id: 'done' });
    expect((await retell.conversationFlowComponent.retrieve(id)).linked_conversation_flow_ids).toEqual([]);
    await retell.conversationFlowComponent.delete(id);
    expect((await app.api.get(`/get-conversation-flow-component/${id}`)).status).toBe(404);
  });

  it.each([
    ['a duplicate node id', { nodes: [{ id: 'a', type: 'end' }, { id: 'a', type: 'end' }] }, 'nodes.1.id: Duplicate node id "a"'],
    ['an unknown start node', { start_node_id: 'nope' }, 'start_node_id: No node with id "nope"'],
    [
      'an edge to nowhere',
      { nodes: [{ id: 'a', type: 'conversation', instruction: prompt('a'), edges: [{ id: 'e', transition_condition: when('x'), destination_node_id: 'b' }] }] },
      'nodes.0.edges.0.destination_node_id: No node with id "b"',
    ],
    ['a local component', { nodes: [componentNode('c', 'greeter', 'local', 'c')] }, 'nodes.0.component_type: A shared component can only use shared components'],
    [
      'a shared component that does not exist',
      { nodes: [componentNode('c', 'component_000000000000000000000000', 'shared', 'c')] },
      'nodes.0.component_id: No component with id "component_000000000000000000000000"',
    ],
  ])('saves a component with %s, answering the problem in validation', async (_label, overrides, message) => {
    const before = await componentCount();
    const component = await retell.conversationFlowComponent.create(componentBody(overrides));
    expect(component).toMatchObject({ validation: [message] });
    expect(await retell.conversationFlowComponent.retrieve(component.conversation_flow_component_id)).toEqual(component);
    expect(await componentCount()).toBe(before + 1);
  });

  it.each([
    [
      'an unknown node model',
      { nodes: [{ id: 'a', type: 'end', model_choice: { model: 'gpt-4o', type: 'cascading' } }] },
      `nodes.0.model_choice.model: Unknown model "gpt-4o"; use one of ${MODEL_LIST}`,
    ],
    ['no name', { name: undefined }, 'name: Required'],
  ])('refuses a component with %s, writing nothing', async (_label, overrides, message) => {
    const before = await componentCount();
    const res = await sdkFailure(retell.conversationFlowComponent.create(componentBody(overrides)));
    expect(res).toEqual({ status: 400, body: { status: 400, message } });
    expect(await componentCount()).toBe(before);
  });

  it('answers in validation an update that makes a component contain itself, directly or through another', async () => {
    const a = await retell.conversationFlowComponent.create(componentBody({ name: 'A' }));
    const aId = a.conversation_flow_component_id;
    const b = await retell.conversationFlowComponent.create(
      componentBody({ name: 'B', nodes: [componentNode('to-a', aId, 'shared', 'to-a')] }),
    );
    const bId = b.conversation_flow_component_id;

    const direct = await retell.conversationFlowComponent.update(aId, { nodes: [componentNode('self', aId, 'shared', 'self')], start_node_id: null });
    expect(direct).toMatchObject({ validation: [`nodes.0.component_id: Components cannot contain themselves (${aId} → ${aId})`] });
    const through = await retell.conversationFlowComponent.update(aId, { nodes: [componentNode('to-b', bId, 'shared', 'to-b')], start_node_id: null });
    expect(through).toMatchObject({ validation: [`nodes.0.component_id: Components cannot contain themselves (${aId} → ${bId} → ${aId})`] });
    const edgeless = await retell.conversationFlowComponent.update(aId, { start_node_id: 'gone' });
    expect(edgeless).toMatchObject({
      validation: [
        'start_node_id: No node with id "gone"',
        `nodes.0.component_id: Components cannot contain themselves (${aId} → ${bId} → ${aId})`,
      ],
    });
    expect(await retell.conversationFlowComponent.retrieve(aId)).toEqual(edgeless);
    // Each uses the other now, so neither can be deleted until one lets go.
    expect((await sdkFailure(retell.conversationFlowComponent.delete(aId))).status).toBe(409);
  });

  it('answers 404 for another workspace’s component, and a flow naming it as a missing one', async () => {
    const other = await app.newWorkspace();
    const foreign = (await other.api.post('/create-conversation-flow-component', { body: componentBody() })).body;
    const id = foreign.conversation_flow_component_id;
    for (const res of [
      await app.api.get(`/get-conversation-flow-component/${id}`),
      await app.api.patch(`/update-conversation-flow-component/${id}`, { body: { name: 'mine' } }),
      await app.api.delete(`/delete-conversation-flow-component/${id}`),
    ]) {
      expect(res.body).toEqual({ status: 404, message: `Conversation flow component ${id} not found` });
    }
    const flow = await app.api.post('/create-conversation-flow', {
      body: flowBody({ nodes: [componentNode('c', id, 'shared', 'c')] }),
    });
    expect(flow.body.validation).toEqual([`nodes.0.component_id: No component with id "${id}"`]);
    const agentId = await agentOn(flow.body.conversation_flow_id);
    expect((await sdkFailure(retell.agent.publish(agentId, { version: 0 }))).body.message).toBe(
      `Version 0 of agent ${agentId} cannot be published: conversation flow ${flow.body.conversation_flow_id} version 0 is incomplete: ` +
        `nodes.0.component_id: No component with id "${id}"`,
    );
    // Nothing of this workspace touched it: unchanged, linked to none of its flows.
    expect((await other.api.get(`/get-conversation-flow-component/${id}`)).body).toEqual(foreign);
  });

  it('refuses a malformed component ID before looking', async () => {
    const res = await app.api.get('/get-conversation-flow-component/conversation_flow_component_id');
    expect(res.body).toEqual({
      status: 400,
      message: 'component_id: Must be a conversation flow component ID (component_ followed by 24 hex characters)',
    });
  });
});
