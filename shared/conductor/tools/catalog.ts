import type { Domain } from '../../platform/http/route.ts';
import type { Access } from '../../platform/auth/scopes.ts';

/*
 * The assistant's tools (docs/assistant.md, "Tools"): each is one route of the API's route
 * table, run as the caller through that route's own function (./dispatch.ts), so what a
 * tool may do, how its input is checked and what the audit log records are the route's.
 * A tool names its route by ID and repeats the route's method, path, function and scope
 * rather than importing the route table (which sits above the domains and would carry every
 * domain's schemas into the conductor's bundle); test/conductor/tools.test.ts holds them to
 * the route table.
 *
 * `confirm`: the tool publishes, deletes, spends or places calls, so it never runs in the
 * turn that proposes it (docs/assistant.md, "Confirmations").
 */

/** A JSON Schema object of a tool's arguments (what a model is shown). */
type JsonObjectSchema = { type: 'object'; properties: Record<string, unknown>; required?: string[] };

export interface ToolRequest {
  params: Record<string, string>;
  query?: Record<string, string>;
  body?: unknown;
}

export interface Tool {
  name: string;
  description: string;
  /** The route table's ID of the route. */
  route: string;
  method: string;
  /** The route's path, `{param}` placeholders filled from the arguments of the same name. */
  path: string;
  domain: Domain;
  /** The scope the route needs (the spec's scope table): a key without it is refused by the route. */
  scope: Access;
  confirm: boolean;
  /** Writes are recorded in the audit log as the assistant's; reads are not. */
  writes: boolean;
  parameters: JsonObjectSchema;
  /** Answer fields a route hands out once (a token): never kept in the session. */
  secrets?: readonly string[];
  /** What a write changed, for its audit entry, from its arguments and answer. */
  target?: (args: Record<string, unknown>, result: unknown) => { type: string; id: string } | undefined;
}

const tool = (route: string, spec: Omit<Tool, 'route'>): Tool => ({ route, ...spec });

const str = (description: string) => ({ type: 'string', description });
const obj = (properties: Record<string, unknown>, required: string[] = []): JsonObjectSchema => ({ type: 'object', properties, ...(required.length ? { required } : {}) });
const field = (name: string) => (result: unknown) => {
  const value = (result as Record<string, unknown> | undefined)?.[name];
  return typeof value === 'string' ? value : undefined;
};
const targetOf = (type: string, name: string) => (args: Record<string, unknown>, result: unknown) => {
  const id = typeof args[name] === 'string' ? (args[name] as string) : field(name)(result);
  return id ? { type, id } : undefined;
};

const agentFields = {
  agent_name: str("The agent's name"),
  voice_id: str('A voice ID (GET /list-voices); the default voice when left out'),
  language: str('e.g. en-US'),
  response_engine: { type: 'object', description: '{"type": "retell-llm", "llm_id": …} or {"type": "conversation-flow", "conversation_flow_id": …}' },
};

export const TOOLS: readonly Tool[] = [
  tool('listAgents', {
    name: 'list_agents', description: "List the workspace's voice agents (latest versions), newest first",
    method: 'GET', path: '/v2/list-agents', domain: 'agents', scope: 'agents', confirm: false, writes: false,
    parameters: obj({ limit: { type: 'integer', description: 'At most this many (default 50)' } }),
  }),
  tool('getAgent', {
    name: 'get_agent', description: 'Get a voice agent',
    method: 'GET', path: '/get-agent/{agent_id}', domain: 'agents', scope: 'agents', confirm: false, writes: false,
    parameters: obj({ agent_id: str('The agent ID') }, ['agent_id']),
  }),
  tool('createAgent', {
    name: 'create_agent', description: 'Create a voice agent on a response engine (an LLM or a conversation flow)',
    method: 'POST', path: '/create-agent', domain: 'agents', scope: 'agents', confirm: false, writes: true,
    parameters: obj(agentFields, ['response_engine']),
    target: targetOf('agent', 'agent_id'),
  }),
  tool('updateAgent', {
    name: 'update_agent', description: "Update a voice agent's draft: each field given replaces its own (rename with agent_name)",
    method: 'PATCH', path: '/update-agent/{agent_id}', domain: 'agents', scope: 'agents', confirm: false, writes: true,
    parameters: obj({ agent_id: str('The agent ID'), ...agentFields }, ['agent_id']),
    target: targetOf('agent', 'agent_id'),
  }),
  tool('publishAgentVersion', {
    name: 'publish_agent', description: "Publish a voice or chat agent's draft version (the latest unless version is given)",
    method: 'POST', path: '/publish-agent-version/{agent_id}', domain: 'agents', scope: 'agents', confirm: true, writes: true,
    parameters: obj({ agent_id: str('The agent ID'), version: { type: 'integer', description: 'The draft version to publish' } }, ['agent_id']),
    target: targetOf('agent', 'agent_id'),
  }),
  tool('deleteAgent', {
    name: 'delete_agent', description: 'Delete a voice agent and all its versions',
    method: 'DELETE', path: '/delete-agent/{agent_id}', domain: 'agents', scope: 'agents', confirm: true, writes: true,
    parameters: obj({ agent_id: str('The agent ID') }, ['agent_id']),
    target: targetOf('agent', 'agent_id'),
  }),
  tool('createRetellLlm', {
    name: 'create_llm', description: 'Create a response engine (an LLM with its prompt)',
    method: 'POST', path: '/create-retell-llm', domain: 'agents', scope: 'agents', confirm: false, writes: true,
    parameters: obj({ general_prompt: str('The system prompt'), begin_message: str('What the agent says first'), model: str('e.g. gpt-4.1') }),
    target: targetOf('llm', 'llm_id'),
  }),
  tool('getRetellLlm', {
    name: 'get_llm', description: 'Get a response engine (its prompt, model and tools)',
    method: 'GET', path: '/get-retell-llm/{llm_id}', domain: 'agents', scope: 'agents', confirm: false, writes: false,
    parameters: obj({ llm_id: str('The LLM ID') }, ['llm_id']),
  }),
  tool('updateRetellLlm', {
    name: 'update_llm', description: "Update a response engine's draft (its prompt with general_prompt)",
    method: 'PATCH', path: '/update-retell-llm/{llm_id}', domain: 'agents', scope: 'agents', confirm: false, writes: true,
    parameters: obj({ llm_id: str('The LLM ID'), general_prompt: str('The new system prompt'), begin_message: str('What the agent says first'), model: str('e.g. gpt-4.1') }, ['llm_id']),
    target: targetOf('llm', 'llm_id'),
  }),
  tool('createConversationFlow', {
    name: 'create_conversation_flow', description: 'Create a conversation flow (nodes and edges)',
    method: 'POST', path: '/create-conversation-flow', domain: 'flows', scope: 'agents', confirm: false, writes: true,
    parameters: obj({ start_speaker: str('agent or user'), nodes: { type: 'array', items: { type: 'object' } }, global_prompt: str('The prompt every node shares') }, ['nodes']),
    target: targetOf('conversation_flow', 'conversation_flow_id'),
  }),
  tool('updateConversationFlow', {
    name: 'update_conversation_flow', description: "Update a conversation flow's draft",
    method: 'PATCH', path: '/update-conversation-flow/{conversation_flow_id}', domain: 'flows', scope: 'agents', confirm: false, writes: true,
    parameters: obj({ conversation_flow_id: str('The flow ID'), nodes: { type: 'array', items: { type: 'object' } }, global_prompt: str('The prompt every node shares') }, ['conversation_flow_id']),
    target: targetOf('conversation_flow', 'conversation_flow_id'),
  }),
  tool('agentPlaygroundCompletion', {
    name: 'playground_turn', description: "One turn of an agent on the given messages in the playground (nothing is stored)",
    method: 'POST', path: '/agent-playground-completion/{agent_id}', domain: 'chats', scope: 'agents', confirm: false, writes: false,
    parameters: obj({ agent_id: str('The agent ID'), messages: { type: 'array', items: { type: 'object', properties: { role: str('user or agent'), content: str('The text') } } } }, ['agent_id', 'messages']),
  }),
  tool('createChatCompletion', {
    name: 'create_chat_completion', description: "Send a user message to a chat and get the agent's reply (spends)",
    method: 'POST', path: '/create-chat-completion', domain: 'chats', scope: 'calls', confirm: true, writes: true,
    parameters: obj({ chat_id: str('The chat ID'), content: str("The user's message") }, ['chat_id', 'content']),
    target: targetOf('chat', 'chat_id'),
  }),
  tool('createTestCaseDefinition', {
    name: 'create_test_case', description: 'Create a test case: a simulated caller and success criteria for one response engine',
    method: 'POST', path: '/create-test-case-definition', domain: 'agents', scope: 'agents', confirm: false, writes: true,
    parameters: obj({ name: str('The name'), response_engine: { type: 'object' }, user_prompt: str('Who the simulated caller is and what they want'), metrics: { type: 'array', items: { type: 'string' } } }, ['name', 'response_engine', 'user_prompt']),
    target: targetOf('test_case_definition', 'test_case_definition_id'),
  }),
  tool('createBatchTest', {
    name: 'create_batch_test', description: 'Run test cases against a response engine version as simulated conversations (spends)',
    method: 'POST', path: '/create-batch-test', domain: 'agents', scope: 'agents', confirm: true, writes: true,
    parameters: obj({ response_engine: { type: 'object' }, test_case_definition_ids: { type: 'array', items: { type: 'string' } } }, ['response_engine', 'test_case_definition_ids']),
    target: targetOf('batch_test', 'test_case_batch_job_id'),
  }),
  tool('getTestRun', {
    name: 'get_test_run', description: 'Get one run of a test case (its transcript and result)',
    method: 'GET', path: '/get-test-run/{test_case_job_id}', domain: 'agents', scope: 'agents', confirm: false, writes: false,
    parameters: obj({ test_case_job_id: str('The test run ID') }, ['test_case_job_id']),
  }),
  tool('getBatchTest', {
    name: 'get_batch_test', description: 'Get a batch test: the response engine version its runs ran against, and its counts',
    method: 'GET', path: '/get-batch-test/{test_case_batch_job_id}', domain: 'agents', scope: 'agents', confirm: false, writes: false,
    parameters: obj({ test_case_batch_job_id: str('The batch test ID') }, ['test_case_batch_job_id']),
  }),
  tool('createWebCall', {
    name: 'create_web_call', description: 'Start a web call with an agent (places a call: spends)',
    method: 'POST', path: '/v3/create-web-call', domain: 'calls', scope: 'calls', confirm: true, writes: true,
    parameters: obj({ agent_id: str('The agent ID') }, ['agent_id']),
    target: targetOf('call', 'call_id'),
  }),
  tool('listCalls', {
    name: 'list_calls', description: 'List calls, newest first, with optional filter_criteria',
    method: 'POST', path: '/v3/list-calls', domain: 'calls', scope: 'calls', confirm: false, writes: false,
    parameters: obj({ limit: { type: 'integer' }, filter_criteria: { type: 'object' } }),
  }),
  tool('getCall', {
    name: 'get_call', description: 'Get a call with its transcript and analysis',
    method: 'GET', path: '/v2/get-call/{call_id}', domain: 'calls', scope: 'calls', confirm: false, writes: false,
    parameters: obj({ call_id: str('The call ID') }, ['call_id']),
  }),
  tool('getQaResult', {
    name: 'get_qa_result', description: "Get a QA result: a call's scores against its cohort's rubric, with reasons",
    method: 'GET', path: '/qa/results/{result_id}', domain: 'qa', scope: 'analytics', confirm: false, writes: false,
    parameters: obj({ result_id: str('The QA result ID') }, ['result_id']),
  }),
  tool('listQaResults', {
    name: 'list_qa_results', description: "List a QA cohort's results",
    method: 'GET', path: '/qa/cohorts/{cohort_id}/results', domain: 'qa', scope: 'analytics', confirm: false, writes: false,
    parameters: obj({ cohort_id: str('The QA cohort ID'), limit: { type: 'integer' } }, ['cohort_id']),
  }),
  tool('addKnowledgeBaseSources', {
    name: 'add_knowledge_base_sources', description: 'Add texts or URLs to a knowledge base (indexed in the background)',
    method: 'POST', path: '/add-knowledge-base-sources/{knowledge_base_id}', domain: 'knowledge-bases', scope: 'kb', confirm: false, writes: true,
    parameters: obj({ knowledge_base_id: str('The knowledge base ID'), knowledge_base_texts: { type: 'array', items: { type: 'object', properties: { title: str('Title'), text: str('Text') } } }, knowledge_base_urls: { type: 'array', items: { type: 'string' } } }, ['knowledge_base_id']),
    target: targetOf('knowledge_base', 'knowledge_base_id'),
  }),
  tool('createInvite', {
    name: 'invite_member', description: 'Invite someone to the workspace with a role (admins only)',
    method: 'POST', path: '/workspace/invites', domain: 'members', scope: 'admin', confirm: false, writes: true,
    parameters: obj({ email: str('Their email'), role: str('admin, developer or member') }, ['email']),
    secrets: ['token'],
    target: (_args, result) => (field('invite_id')(result) ? { type: 'invite', id: field('invite_id')(result)! } : undefined),
  }),
  tool('updateBillingSettings', {
    name: 'update_billing_settings', description: "Change the workspace's billing settings (admins only)",
    method: 'PATCH', path: '/billing/settings', domain: 'billing', scope: 'admin', confirm: false, writes: true,
    parameters: obj({ monthly_budget_usd: { type: 'number' }, auto_recharge: { type: 'object' } }),
    target: () => ({ type: 'billing', id: 'settings' }),
  }),
];

const byName = new Map(TOOLS.map((entry) => [entry.name, entry]));

export const toolNamed = (name: string): Tool | undefined => byName.get(name);

/** A read the assistant makes besides its tools (checking an attachment, the walkthrough's progress). */
export interface RouteRead {
  route: string;
  method: 'GET' | 'POST';
  path: string;
  domain: Domain;
  scope: Access;
}

/** How an attachment is checked: the type's read route, as the caller (404 when it is not in the workspace). */
export const ATTACHMENT_READS: Readonly<Record<string, RouteRead & { param: string }>> = {
  agent: { route: 'getAgent', method: 'GET', path: '/get-agent/{agent_id}', domain: 'agents', scope: 'agents', param: 'agent_id' },
  chat_agent: { route: 'getChatAgent', method: 'GET', path: '/get-chat-agent/{chat_agent_id}', domain: 'chat-agents', scope: 'agents', param: 'chat_agent_id' },
  llm: { route: 'getRetellLlm', method: 'GET', path: '/get-retell-llm/{llm_id}', domain: 'agents', scope: 'agents', param: 'llm_id' },
  conversation_flow: { route: 'getConversationFlow', method: 'GET', path: '/get-conversation-flow/{conversation_flow_id}', domain: 'flows', scope: 'agents', param: 'conversation_flow_id' },
  knowledge_base: { route: 'getKnowledgeBase', method: 'GET', path: '/get-knowledge-base/{knowledge_base_id}', domain: 'knowledge-bases', scope: 'kb', param: 'knowledge_base_id' },
  call: { route: 'getCall', method: 'GET', path: '/v2/get-call/{call_id}', domain: 'calls', scope: 'calls', param: 'call_id' },
  chat: { route: 'getChat', method: 'GET', path: '/get-chat/{chat_id}', domain: 'chats', scope: 'calls', param: 'chat_id' },
  qa_cohort: { route: 'getQaCohort', method: 'GET', path: '/qa/cohorts/{cohort_id}', domain: 'qa', scope: 'analytics', param: 'cohort_id' },
  qa_result: { route: 'getQaResult', method: 'GET', path: '/qa/results/{result_id}', domain: 'qa', scope: 'analytics', param: 'result_id' },
  test_run: { route: 'getTestRun', method: 'GET', path: '/get-test-run/{test_case_job_id}', domain: 'agents', scope: 'agents', param: 'test_case_job_id' },
};

/** The walkthrough's reads (shared/conductor/walkthrough). */
export const WALKTHROUGH_READS = {
  llms: { route: 'listRetellLlms', method: 'GET', path: '/v2/list-retell-llms', domain: 'agents', scope: 'agents' },
  agents: { route: 'listAgents', method: 'GET', path: '/v2/list-agents', domain: 'agents', scope: 'agents' },
  chats: { route: 'listChats', method: 'GET', path: '/list-chats', domain: 'chats', scope: 'calls' },
  testCases: { route: 'listTestCaseDefinitions', method: 'GET', path: '/list-test-case-definitions', domain: 'agents', scope: 'agents' },
  calls: { route: 'listCalls', method: 'POST', path: '/v3/list-calls', domain: 'calls', scope: 'calls' },
} as const satisfies Record<string, RouteRead>;

/**
 * Every route group whose function the assistant invokes (tools, attachment checks, the
 * walkthrough): lib/ grants the conductor function lambda:InvokeFunction on exactly these.
 */
export function invokedRouteGroups(): Domain[] {
  const groups = [...TOOLS, ...Object.values(ATTACHMENT_READS), ...Object.values(WALKTHROUGH_READS)].map((read) => read.domain);
  return [...new Set(groups)].sort();
}
