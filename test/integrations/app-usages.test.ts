import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestApp } from '../support/app.ts';
import { newAgentOn, newChatAgent, newFlow, newLlm } from '../support/factories.ts';
import { fakeOAuth } from '../support/fake-oauth.ts';
import { completion, startFakeOpenAi, toolCallCompletion } from '../support/fake-openai.ts';
import type { ApiClient } from '../support/http.ts';
import { retellClient, sdkFailure } from '../support/sdk.ts';

/*
 * Agent tools that use an integration app (docs/integrations.md, "App tools"): the `app`
 * tool type checked on save, list-app-usages computed from the engines' and agents'
 * versions, deleting an app in use (409 naming its users, or forced), repair dropping
 * tools of a deleted app, and the runtime running the tool in a chat and the playground
 * (a scripted OpenAI-compatible model; the app is a pasted-credential Zendesk app in front
 * of the fake vendor API on 127.0.0.1).
 */
const app = await startTestApp();
const vendor = await fakeOAuth();
const model = await startFakeOpenAi();
const { OpenAiCompatibleModel, useLanguageModel } = await import('../../shared/vendors/llm/index.ts');
useLanguageModel(new OpenAiCompatibleModel({ baseUrl: model.url, retryBaseMs: 10 }));
afterAll(() => useLanguageModel(undefined));
beforeEach(() => model.reset());

const zendeskApp = async (api: ApiClient) => {
  const created = await api.post('/create-app', {
    body: {
      provider: 'zendesk',
      type: 'support',
      name: 'Help desk',
      tenant_url: vendor.url,
      auth_config: { type: 'basic', username: 'agent@example.com/token', password: 'zendesk-secret' },
    },
  });
  expect(created.status).toBe(201);
  return created.body.app_id as string;
};

const ticketTool = (appId: string, overrides: Record<string, unknown> = {}) => ({
  type: 'app',
  name: 'open_ticket',
  description: 'Open a support ticket for the caller',
  app_id: appId,
  tool: 'create_ticket',
  ...overrides,
});

describe('app tools on save', () => {
  it('refuses an unknown tool of the provider, another workspace\'s app and a malformed tool, on LLMs, flows and components', async () => {
    const ws = await app.newWorkspace();
    const other = await app.newWorkspace();
    const appId = await zendeskApp(ws.api);
    const foreignAppId = await zendeskApp(other.api);

    const unknownTool = await ws.api.post('/create-retell-llm', { body: { general_tools: [ticketTool(appId, { tool: 'book_meeting' })] } });
    expect(unknownTool.status).toBe(400);
    expect(unknownTool.body.message).toBe(
      `general_tools.0.tool: zendesk has no tool book_meeting (it has create_ticket, get_ticket; GET /get-app-tool-schema?app_id=${appId})`,
    );
    const foreign = await ws.api.post('/create-retell-llm', {
      body: { states: [{ name: 'main', tools: [ticketTool(foreignAppId)] }], starting_state: 'main' },
    });
    expect(foreign.status).toBe(400);
    expect(foreign.body.message).toBe(`states.0.tools.0.app_id: App ${foreignAppId} not found`);
    const malformed = await ws.api.post('/create-retell-llm', { body: { general_tools: [{ type: 'app', name: 'open ticket', app_id: 'nope' }] } });
    expect(malformed.status).toBe(400);
    expect(malformed.body.message).toBe(
      'general_tools.0.name: Must be 1 to 64 letters, digits, underscores or dashes; general_tools.0.app_id: Must be an app ID (app_ followed by 24 hex characters); general_tools.0.tool: Required',
    );

    const llm = await newLlm(ws.api);
    const update = await ws.api.patch(`/update-retell-llm/${llm.llm_id}`, { body: { general_tools: [ticketTool(foreignAppId)] } });
    expect(update.status).toBe(400);
    expect(update.body.message).toBe(`general_tools.0.app_id: App ${foreignAppId} not found`);
    const flow = await ws.api.post('/create-conversation-flow', {
      body: {
        model_choice: { model: 'gpt-4.1', type: 'cascading' },
        start_speaker: 'agent',
        nodes: [{ id: 'start', type: 'conversation', instruction: { type: 'static_text', text: 'Hello.' } }],
        tools: [ticketTool(appId, { tool_id: 't1', tool: 'get_tickets' })],
      },
    });
    expect(flow.status).toBe(400);
    expect(flow.body.message).toBe(`tools.0.tool: zendesk has no tool get_tickets (it has create_ticket, get_ticket; GET /get-app-tool-schema?app_id=${appId})`);
    const component = await ws.api.post('/create-conversation-flow-component', {
      body: { name: 'Support', nodes: [{ id: 'n1', type: 'end' }], tools: [ticketTool(foreignAppId, { tool_id: 't1' })] },
    });
    expect(component.status).toBe(400);
    expect(component.body.message).toBe(`tools.0.app_id: App ${foreignAppId} not found`);

    // The other workspace's LLM may use its own app; nothing was written in this one.
    expect((await other.api.post('/create-retell-llm', { body: { general_tools: [ticketTool(foreignAppId)] } })).status).toBe(201);
    expect((await ws.api.get('/list-retell-llms')).body.map((item: any) => item.llm_id)).toEqual([llm.llm_id]);
  });
});

describe('list-app-usages and deleting an app in use', () => {
  it('names the agents (with their versions) and the unattached engines, refuses the delete with their names, and repair drops the tools after a forced delete', async () => {
    const ws = await app.newWorkspace();
    const client = retellClient(app.url, ws.api_key);
    const appId = await zendeskApp(ws.api);
    const unused = await zendeskApp(ws.api);
    expect(await client.app.listUsages(unused)).toEqual({ items: [], has_more: false });

    // An agent on an LLM with the tool: version 0 published, version 1 a new draft (its LLM draft keeps the tool).
    const llm = await newLlm(ws.api, { general_tools: [ticketTool(appId)] });
    const agent = await newAgentOn(ws.api, { type: 'retell-llm', llm_id: llm.llm_id }, { agent_name: 'Front desk' });
    expect((await ws.api.post(`/publish-agent-version/${agent.agent_id}`, { body: {} })).status).toBe(200);
    const draft = await ws.api.patch(`/update-agent/${agent.agent_id}`, { body: { agent_name: 'Front desk 2' } });
    expect(draft.body.version).toBe(1);
    // A flow agent whose flow names the app, and an LLM no agent runs.
    const flow = await newFlow(ws.api, { tools: [ticketTool(appId, { tool_id: 't1' })] });
    const flowAgent = await newAgentOn(ws.api, { type: 'conversation-flow', conversation_flow_id: flow.conversation_flow_id }, { agent_name: 'Flow desk' });
    const loose = await newLlm(ws.api, { general_tools: [ticketTool(appId, { name: 'file_ticket' })] });
    // Neither an LLM without the tool nor another app's tool counts.
    const otherLlm = await newLlm(ws.api, { general_tools: [ticketTool(unused)] });

    const usages = await client.app.listUsages(appId);
    expect(usages.has_more).toBe(false);
    expect(usages.items).toEqual([
      { type: 'llm', llm_id: loose.llm_id, configured_timestamp: expect.any(Number) },
      { type: 'agent', agent_id: flowAgent.agent_id, agent_name: 'Flow desk', agent_versions: [0], configured_timestamp: expect.any(Number) },
      { type: 'agent', agent_id: agent.agent_id, agent_name: 'Front desk 2', agent_versions: [1, 0], configured_timestamp: expect.any(Number) },
    ]);
    const times = usages.items.map((item) => item.configured_timestamp);
    expect([...times].sort((a, b) => b - a)).toEqual(times);
    // Pages and order.
    const first = await ws.api.get(`/list-app-usages/${appId}?limit=2&sort_order=ascending`);
    expect(first.body.items.map((item: any) => item.agent_id ?? item.llm_id)).toEqual([agent.agent_id, flowAgent.agent_id]);
    expect(first.body).toMatchObject({ has_more: true, pagination_key: flowAgent.agent_id });
    const second = await ws.api.get(`/list-app-usages/${appId}?limit=2&sort_order=ascending&pagination_key=${flowAgent.agent_id}`);
    expect(second.body).toEqual({ items: [usages.items[0]], has_more: false });
    expect((await ws.api.get(`/list-app-usages/${appId}?pagination_key=agent_nope`)).status).toBe(400);

    // Another workspace sees neither the app nor its usages.
    const other = await app.newWorkspace();
    const foreign = await other.api.get(`/list-app-usages/${appId}`);
    expect(foreign.status).toBe(404);
    expect(foreign.body.message).toBe(`App ${appId} not found`);
    expect((await other.api.delete(`/delete-app/${appId}?force_delete=true`)).status).toBe(404);

    const inUse = await sdkFailure(client.app.delete(appId));
    expect(inUse.status).toBe(409);
    expect(inUse.body.message).toBe(
      `App ${appId} is used by Retell LLM ${loose.llm_id}, agent ${flowAgent.agent_id} (Flow desk), agent ${agent.agent_id} (Front desk 2); ` +
        'remove it from them first (or pass force_delete=true)',
    );
    // Computed on read: once the LLM using the other app is gone, that app deletes without force.
    expect((await sdkFailure(client.app.delete(unused))).body.message).toBe(
      `App ${unused} is used by Retell LLM ${otherLlm.llm_id}; remove it from them first (or pass force_delete=true)`,
    );
    expect((await ws.api.delete(`/delete-retell-llm/${otherLlm.llm_id}`)).status).toBe(204);
    await client.app.delete(unused);
    expect((await ws.api.get(`/get-app/${appId}`)).status).toBe(200);
    await client.app.delete(appId, { force_delete: true });
    expect((await ws.api.get(`/get-app/${appId}`)).status).toBe(404);

    // Repair drops the tool of the deleted app from the agent's draft engine; other tools stay.
    const repaired = await ws.api.post(`/repair-agent/${agent.agent_id}`);
    expect(repaired.status).toBe(200);
    const engine = await ws.api.get(`/get-retell-llm/${llm.llm_id}?version=1`);
    expect(engine.body.general_tools).toEqual([]);
    expect((await ws.api.get(`/get-retell-llm/${llm.llm_id}?version=0`)).body.general_tools).toEqual([ticketTool(appId)]);
  });
});

describe('app tools in conversations', () => {
  it('offers the tool with the catalogue parameters, runs it through the app in a chat, mocks it in the playground, and answers a deleted app as a tool error', async () => {
    const ws = await app.newWorkspace();
    const client = retellClient(app.url, ws.api_key);
    const appId = await zendeskApp(ws.api);
    const { chatAgent } = await newChatAgent(ws.api, {
      llm: { general_prompt: 'You run the help desk.', begin_message: '', general_tools: [ticketTool(appId)] },
    });
    const chat = await client.chat.create({ agent_id: chatAgent.agent_id });
    const vendorCalls = vendor.apiRequests.length;

    const args = { subject: 'Refund', description: 'Wants a refund for order 42' };
    model.enqueue({ body: toolCallCompletion([{ id: 'call_1', name: 'open_ticket', arguments: args }]) }, { body: completion('Ticket 42 is open.') });
    const reply = await client.chat.createChatCompletion({ chat_id: chat.chat_id, content: 'I want a refund for order 42' });
    expect(reply.messages.map((m: any) => [m.role, m.content ?? m.name])).toEqual([
      ['tool_call_invocation', 'open_ticket'],
      ['tool_call_result', '{"ticket":{"id":42,"status":"new","subject":"Refund"}}'],
      ['agent', 'Ticket 42 is open.'],
    ]);
    expect(reply.messages[1]).toMatchObject({ tool_call_id: 'call_1', successful: true });
    // The model was offered the catalogue's create_ticket parameters under the tool's own name.
    expect(model.requests[0]!.body.tools).toEqual([
      {
        type: 'function',
        function: {
          name: 'open_ticket',
          description: 'Open a support ticket for the caller',
          parameters: expect.objectContaining({ type: 'object', required: ['subject', 'description'], properties: expect.objectContaining({ priority: { type: 'string', enum: ['low', 'normal', 'high', 'urgent'] } }) }),
        },
      },
    ]);
    expect(vendor.apiRequests.slice(vendorCalls)).toEqual([
      expect.objectContaining({ method: 'POST', path: '/api/v2/tickets.json', body: { ticket: { subject: 'Refund', comment: { body: 'Wants a refund for order 42' } } } }),
    ]);
    // The result reached the chat's transcript.
    const got: any = await client.chat.retrieve(chat.chat_id);
    expect(got.message_with_tool_calls.find((m: any) => m.role === 'tool_call_result')).toMatchObject({
      content: '{"ticket":{"id":42,"status":"new","subject":"Refund"}}',
      successful: true,
    });

    // The playground's tool_mocks stand in for app tools: nothing reaches the vendor.
    model.enqueue({ body: toolCallCompletion([{ id: 'call_2', name: 'open_ticket', arguments: args }]) }, { body: completion('Mocked.') });
    const mocked = await client.playground.completion(chatAgent.agent_id, {
      messages: [{ role: 'user', content: 'Open a ticket' }],
      tool_mocks: [{ tool_name: 'open_ticket', input_match_rule: { type: 'any' }, output: '{"ticket":{"id":1}}' }],
    });
    expect(mocked.messages.find((m: any) => m.role === 'tool_call_result')).toMatchObject({ content: '{"ticket":{"id":1}}', successful: true });
    expect(vendor.apiRequests.length).toBe(vendorCalls + 1);

    // Missing required arguments and a deleted app are tool errors the model reads; the chat goes on.
    await client.app.delete(appId, { force_delete: true });
    model.enqueue({ body: toolCallCompletion([{ id: 'call_3', name: 'open_ticket', arguments: args }]) }, { body: completion('Sorry, I cannot open tickets now.') });
    const failed = await client.chat.createChatCompletion({ chat_id: chat.chat_id, content: 'Another ticket please' });
    expect(failed.messages.map((m: any) => [m.role, m.content ?? m.name])).toEqual([
      ['tool_call_invocation', 'open_ticket'],
      ['tool_call_result', `Error: App ${appId} not found`],
      ['agent', 'Sorry, I cannot open tickets now.'],
    ]);
    expect(failed.messages[1]).toMatchObject({ successful: false });
    expect(vendor.apiRequests.length).toBe(vendorCalls + 1);
  });
});
