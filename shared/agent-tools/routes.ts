import { defineRoutes } from '../platform/http/route.ts';
import * as z from 'zod';
import { idOf, lazySchema, queryInt, versionReferenceQuery } from '../platform/http/schemas.ts';
import { Agent, Llm } from '../agents/index.ts';
import { AgentEstimate, agentIdParams, CopilotBody, CopilotReply, CustomLlmConnectionResult, GenerateAgentBody, isWebSocketUrl, McpToolDefinition, ShareLink, shareAgentParams, stageParams, variables, versionQueryParams, Workflow, WORKFLOW_STAGES, WorkflowBody, WorkflowRun } from './schemas.ts';

export const agentToolRoutes = defineRoutes({ domain: 'agent-tools', access: 'agents' }, {
  listShareLinks: {
    method: 'GET', path: '/agents/{agent_id}/share-links', status: 200,
    summary: 'Share links (Voice Orb) of an agent, newest first, revoked ones included',
    params: shareAgentParams, response: lazySchema(() => z.array(ShareLink)),
  },
  createShareLink: {
    method: 'POST', path: '/agents/{agent_id}/share-links', status: 201,
    summary: 'Create a share link: a public page /orb/<token> that talks to the agent (a chat agent\'s: public chats)',
    params: shareAgentParams, response: ShareLink,
  },
  revokeShareLink: {
    method: 'DELETE', path: '/share-links/{id}', status: 204,
    summary: 'Revoke a share link: its page stops working at once (the link stays listed, disabled)',
    params: lazySchema(() => z.object({ id: idOf('shareLink', 'a share link ID') })),
  },

  listWorkflows: {
    method: 'GET', path: '/agents/{agent_id}/workflows', status: 200,
    summary: 'The agent’s workflows, one per configured stage (pre_call, post_call)',
    params: agentIdParams, response: lazySchema(() => z.array(Workflow)),
  },
  putWorkflow: {
    method: 'PUT', path: '/agents/{agent_id}/workflows/{stage}', status: 200,
    summary: 'Set the agent’s workflow for a stage: HTTP and LLM steps whose outputs become dynamic variables',
    params: stageParams, body: WorkflowBody, response: Workflow,
  },
  testWorkflow: {
    method: 'POST', path: '/agents/{agent_id}/workflows/{stage}/test', status: 200,
    throttle: 'outbound',
    summary: 'Run the stage’s workflow (or the unsaved one given) with sample variables; the run is recorded',
    params: stageParams,
    body: lazySchema(() =>
      z.object({
        variables: variables().default({}).describe('Sample input variables, e.g. from_number'),
        workflow: WorkflowBody.optional().describe('An unsaved workflow to try instead of the saved one'),
      }),
    ),
    response: WorkflowRun,
  },
  listWorkflowRuns: {
    method: 'GET', path: '/agents/{agent_id}/workflow-runs', status: 200,
    summary: 'Recorded workflow runs of the agent (tests and calls), newest first',
    params: agentIdParams,
    query: lazySchema(() =>
      z.object({
        limit: queryInt({ min: 1, max: 1000, default: 50 }),
        stage: z.enum(WORKFLOW_STAGES).optional(),
        pagination_key: idOf('workflowRun', 'a workflow run ID').optional(),
      }),
    ),
    response: lazySchema(() => z.array(WorkflowRun)),
  },

  generateAgent: {
    method: 'POST', path: '/generate-agent', status: 201,
    throttle: 'vendor',
    summary: 'Write a Retell LLM and an agent from a description, with the language model',
    body: GenerateAgentBody,
    response: lazySchema(() => z.object({ agent: Agent, llm: Llm })),
  },
  agentCopilot: {
    method: 'POST', path: '/agents/{agent_id}/copilot', status: 200,
    throttle: 'vendor',
    summary: 'Ask about the agent’s configuration; answers with a reply and proposed changes it never applies',
    params: agentIdParams, query: versionQueryParams, body: CopilotBody, response: CopilotReply,
  },

  agentEstimates: {
    method: 'GET', path: '/agent-estimates/{agent_id}', status: 200,
    summary: 'Cost per minute and expected latency of an agent version, from the price and latency table',
    params: agentIdParams, query: versionQueryParams, response: AgentEstimate,
  },
  repairAgent: {
    method: 'POST', path: '/repair-agent/{agent_id}', status: 200,
    summary: 'Remove references to missing knowledge bases, agents and MCP servers and remap unusable voices, in a draft',
    params: agentIdParams, query: versionQueryParams, response: Agent,
  },
  getMcpTools: {
    method: 'GET', path: '/get-mcp-tools/{agent_id}', status: 200,
    throttle: 'outbound',
    summary: 'Tools the MCP servers of the agent’s Retell LLM expose (fetched from the servers)',
    params: agentIdParams,
    query: lazySchema(() =>
      z.object({
        mcp_id: z.string().min(1).max(128).optional().describe('An MCP server of the LLM, by id or name; default: all'),
        component_id: z.string().max(128).optional().describe('Accepted for the compatible client; Retell LLMs have no components'),
        version: versionReferenceQuery().optional(),
      }),
    ),
    response: lazySchema(() => z.array(McpToolDefinition)),
  },
  testCustomLlmConnection: {
    method: 'POST', path: '/test-custom-llm-connection', status: 200,
    throttle: 'outbound',
    summary: 'Open a WebSocket to a custom LLM URL (as a call would, at <url>/<call_id>) and report how it went',
    body: lazySchema(() =>
      z.object({
        llm_websocket_url: z.string().max(2048).refine(isWebSocketUrl, 'Must be a ws:// or wss:// URL'),
        timeout_ms: z.number().int().min(500).max(10_000).default(5000),
      }),
    ),
    response: CustomLlmConnectionResult,
  },
});
