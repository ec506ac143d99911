import type Retell from 'retell-sdk';
import { describe, expect, it } from 'vitest';
import { assertRunnable } from '../../shared/agents/index.ts';
import { Invalid, NotFound, VersionNotFound } from '../../shared/platform/errors.ts';
import { startTestApp } from '../support/app.ts';
import {
  bookingNode,
  componentInProgress,
  FLOW_IN_PROGRESS_PROBLEMS,
  flowInProgress,
  freshNumber,
  newAgent,
} from '../support/factories.ts';
import { retellClient, sdkFailure } from '../support/sdk.ts';

/*
 * A draft may be incomplete: saving a flow or a shared component stores it and answers
 * its graph's problems in `validation`; publishing an agent version that runs it, binding
 * it to a number and starting a call or chat with it (assertRunnable) refuse it with a
 * 400 naming each problem.
 */
const app = await startTestApp();
const retell = retellClient(app.url, app.workspace.api_key);

type FlowParams = Retell.ConversationFlowCreateParams;
type ComponentParams = Retell.ConversationFlowComponentCreateParams;

const createFlow = (body: Record<string, unknown> = flowInProgress()) => retell.conversationFlow.create(body as unknown as FlowParams);
const incomplete = (flowId: string, version: number, problems: string[]) =>
  `conversation flow ${flowId} version ${version} is incomplete: ${problems.join('; ')}`;

/** An agent (voice or chat) running the flow. */
async function agentOn(flowId: string, channel: 'voice' | 'chat' = 'voice'): Promise<string> {
  const response_engine = { type: 'conversation-flow' as const, conversation_flow_id: flowId };
  if (channel === 'chat') return (await retell.chatAgent.create({ response_engine })).agent_id;
  return (await retell.agent.create({ response_engine } as Retell.AgentCreateParams)).agent_id;
}

/** The flow in progress with its booking node and the component's second node added. */
const completed = () => {
  const body = flowInProgress();
  const [component] = body.components;
  return {
    nodes: [...body.nodes, bookingNode()],
    components: [{ ...component!, nodes: [...component!.nodes, { id: 'ask_phone', type: 'end' }] }],
  } as unknown as FlowParams;
};

describe('conversation flows in progress', () => {
  it('saves the client’s full fixture with edges to nodes not built yet, answering the problems in validation', async () => {
    const flow = await createFlow();
    expect(flow).toMatchObject({ version: 0, is_published: false, start_node_id: 'greeting', global_prompt: 'You answer the phone for a dental clinic.' });
    expect(flow.nodes).toEqual(flowInProgress().nodes);
    expect((flow as { validation?: string[] }).validation).toEqual(FLOW_IN_PROGRESS_PROBLEMS);
    expect(await retell.conversationFlow.retrieve(flow.conversation_flow_id)).toEqual(flow);
    const listed = (await retell.conversationFlow.list()).items.find((f) => f.conversation_flow_id === flow.conversation_flow_id);
    expect(listed).toEqual(flow);

    const finished = await retell.conversationFlow.update(flow.conversation_flow_id, completed());
    expect((finished as { validation?: string[] }).validation).toEqual([]);
    const again = await retell.conversationFlow.update(flow.conversation_flow_id, { start_node_id: 'nowhere' });
    expect((again as { validation?: string[] }).validation).toEqual(['start_node_id: No node with id "nowhere"']);
  });

  it('still refuses what no draft may be: unknown node types, missing required fields, unknown models', async () => {
    const before = (await app.api.get('/list-conversation-flows')).body.length;
    const res = await sdkFailure(
      createFlow(
        flowInProgress({
          model_choice: { model: 'gpt-3.5-turbo', type: 'cascading' },
          nodes: [{ id: 'x', type: 'conversation' }, { id: 'y', type: 'teleport' }],
        }),
      ),
    );
    expect(res.status).toBe(400);
    expect(res.body.message).toMatch(
      /^model_choice\.model: Unknown model "gpt-3\.5-turbo"; use one of [^:]+; nodes\.0\.instruction: Required; nodes\.1\.type: Expected one of "conversation", /,
    );
    expect((await app.api.get('/list-conversation-flows')).body.length).toBe(before);
  });

  it('refuses to publish an agent version that runs an incomplete flow, naming each problem, and publishes nothing', async () => {
    const flow = await createFlow();
    const id = flow.conversation_flow_id;
    for (const channel of ['voice', 'chat'] as const) {
      const agentId = await agentOn(id, channel);
      const label = channel === 'voice' ? 'agent' : 'chat agent';
      expect(await sdkFailure(retell.agent.publish(agentId, { version: 0 }))).toEqual({
        status: 400,
        body: { status: 400, message: `Version 0 of ${label} ${agentId} cannot be published: ${incomplete(id, 0, FLOW_IN_PROGRESS_PROBLEMS)}` },
      });
      const agentAfter = channel === 'voice' ? await retell.agent.retrieve(agentId) : await retell.chatAgent.retrieve(agentId);
      expect(agentAfter.is_published).toBe(false);
    }
    expect(await retell.conversationFlow.retrieve(id)).toMatchObject({ is_published: false });

    await retell.conversationFlow.update(id, completed());
    const agentId = await agentOn(id);
    await retell.agent.publish(agentId, { version: 0 });
    expect(await retell.agent.retrieve(agentId, { version: 'latest_published' })).toMatchObject({ version: 0 });
    expect(await retell.conversationFlow.retrieve(id, { version: 0 })).toMatchObject({ is_published: true, validation: [] });
  });

  it('refuses to bind a number to an agent whose version cannot run', async () => {
    const flow = await createFlow();
    const agentId = await agentOn(flow.conversation_flow_id);
    const { agent: ready } = await newAgent(app.api);
    const number = freshNumber();
    const body = { phone_number: number, termination_uri: 'sip:trunk.example.com', inbound_agents: [{ agent_id: ready.agent_id, weight: 1 }, { agent_id: agentId, weight: 1 }] };
    expect(await sdkFailure(retell.phoneNumber.import(body as Retell.PhoneNumberImportParams))).toEqual({
      status: 400,
      body: {
        status: 400,
        message: `inbound_agents.1: Agent ${agentId} version 0 cannot run: ${incomplete(flow.conversation_flow_id, 0, FLOW_IN_PROGRESS_PROBLEMS)}`,
      },
    });
    expect((await app.api.get(`/get-phone-number/${encodeURIComponent(number)}`)).status).toBe(404);

    await retell.phoneNumber.import({ ...body, inbound_agents: [{ agent_id: ready.agent_id, weight: 1 }] } as Retell.PhoneNumberImportParams);
    expect(
      await sdkFailure(retell.phoneNumber.update(number, { outbound_agents: [{ agent_id: agentId, weight: 1 }] } as Retell.PhoneNumberUpdateParams)),
    ).toMatchObject({ status: 400, body: { message: expect.stringMatching(new RegExp(`^outbound_agents\\.0: Agent ${agentId} version 0 cannot run: `)) } });

    await retell.conversationFlow.update(flow.conversation_flow_id, completed());
    const bound = await retell.phoneNumber.update(number, { outbound_agents: [{ agent_id: agentId, weight: 1 }] } as Retell.PhoneNumberUpdateParams);
    expect(bound.outbound_agents).toEqual([{ agent_id: agentId, weight: 1 }]);
  });

  it('assertRunnable, what a call or chat will check before it starts: the version a reference names, voice or chat', async () => {
    const flow = await createFlow();
    const id = flow.conversation_flow_id;
    const voice = await agentOn(id);
    const chat = await agentOn(id, 'chat');
    const ws = app.workspace.workspace_id;
    for (const [agentId, label] of [[voice, 'Agent'], [chat, 'Chat agent']] as const) {
      const refused = await assertRunnable(ws, agentId).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(Invalid);
      expect((refused as Error).message).toBe(`${label} ${agentId} version 0 cannot run: ${incomplete(id, 0, FLOW_IN_PROGRESS_PROBLEMS)}`);
      await expect(assertRunnable(ws, agentId, 'latest_published')).rejects.toBeInstanceOf(VersionNotFound);
    }
    await retell.conversationFlow.update(id, completed());
    expect(await assertRunnable(ws, voice)).toEqual({ agent_id: voice, version: 0 });
    expect(await assertRunnable(ws, chat, 0)).toEqual({ agent_id: chat, version: 0 });

    // What a published version runs is checked as strictly: a flow it runs can be force-deleted.
    const { agent, llm } = await newAgent(app.api);
    await retell.agent.publish(agent.agent_id, { version: 0 });
    expect(await assertRunnable(ws, agent.agent_id, 'latest_published')).toEqual({ agent_id: agent.agent_id, version: 0 });
    await retell.llm.delete(llm.llm_id, { force_delete: true });
    await expect(assertRunnable(ws, agent.agent_id)).rejects.toThrow(
      `Agent ${agent.agent_id} version 0 cannot run: Retell LLM ${llm.llm_id} not found`,
    );

    const other = await app.newWorkspace();
    await expect(assertRunnable(other.workspace_id, voice)).rejects.toThrow(new NotFound(`Agent ${voice} not found`));
  });
});

describe('shared components in progress', () => {
  it('saves a component in progress with its problems, and refuses to publish a flow that uses it until it is complete', async () => {
    const component = await retell.conversationFlowComponent.create(componentInProgress() as unknown as ComponentParams);
    const componentId = component.conversation_flow_component_id;
    expect((component as { validation?: string[] }).validation).toEqual(['nodes.0.edges.0.destination_node_id: No node with id "check_cover"']);
    expect(await retell.conversationFlowComponent.retrieve(componentId)).toEqual(component);

    const when = { type: 'prompt', prompt: 'Else' };
    const flow = await createFlow({
      model_choice: { model: 'gpt-4.1', type: 'cascading' },
      start_speaker: 'agent',
      nodes: [
        { id: 'insurance', type: 'component', component_id: componentId, component_type: 'shared', else_edge: { id: 'done', transition_condition: when, destination_node_id: 'bye' } },
        { id: 'bye', type: 'end' },
      ],
    });
    expect((flow as { validation?: string[] }).validation).toEqual([]);
    const agentId = await agentOn(flow.conversation_flow_id);
    expect(await sdkFailure(retell.agent.publish(agentId, { version: 0 }))).toEqual({
      status: 400,
      body: {
        status: 400,
        message: `Version 0 of agent ${agentId} cannot be published: ${incomplete(flow.conversation_flow_id, 0, [
          `${componentId}.nodes.0.edges.0.destination_node_id: No node with id "check_cover"`,
        ])}`,
      },
    });

    const fixed = await retell.conversationFlowComponent.update(componentId, {
      nodes: [...componentInProgress().nodes, { id: 'check_cover', type: 'end' }],
    } as ComponentParams);
    expect((fixed as { validation?: string[] }).validation).toEqual([]);
    await retell.agent.publish(agentId, { version: 0 });
    expect((await retell.agent.retrieve(agentId)).is_published).toBe(true);
  });

  it('saves a component that contains itself, and refuses a flow that uses it', async () => {
    const component = await retell.conversationFlowComponent.create(componentInProgress() as unknown as ComponentParams);
    const id = component.conversation_flow_component_id;
    const componentNode = (nodeId: string, next: string) => ({
      id: nodeId,
      type: 'component',
      component_id: id,
      component_type: 'shared',
      else_edge: { id: `${nodeId}-else`, transition_condition: { type: 'prompt', prompt: 'x' }, destination_node_id: next },
    });
    const looped = await retell.conversationFlowComponent.update(id, {
      nodes: [componentNode('self', 'self')],
      start_node_id: null,
    } as unknown as ComponentParams);
    const cycle = `nodes.0.component_id: Components cannot contain themselves (${id} → ${id})`;
    expect((looped as { validation?: string[] }).validation).toEqual([cycle]);

    const flow = await createFlow({
      model_choice: { model: 'gpt-4.1', type: 'cascading' },
      start_speaker: 'agent',
      nodes: [componentNode('use', 'bye'), { id: 'bye', type: 'end' }],
    });
    const agentId = await agentOn(flow.conversation_flow_id);
    expect((await sdkFailure(retell.agent.publish(agentId, { version: 0 }))).body.message).toBe(
      `Version 0 of agent ${agentId} cannot be published: ${incomplete(flow.conversation_flow_id, 0, [`${id}.${cycle}`])}`,
    );

    // Once no flow uses it, nothing keeps it (using itself does not): it can be deleted.
    await retell.conversationFlow.update(flow.conversation_flow_id, { nodes: [{ id: 'bye', type: 'end' }], start_node_id: null } as FlowParams);
    await retell.conversationFlowComponent.delete(id);
    expect((await app.api.get(`/get-conversation-flow-component/${id}`)).status).toBe(404);
  });
});
