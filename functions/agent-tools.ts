import { estimateAgent } from '../shared/agent-tools/estimates.ts';
import { askCopilot, generateAgent } from '../shared/agent-tools/generation.ts';
import { repairAgent } from '../shared/agent-tools/repair.ts';
import * as workflows from '../shared/agent-tools/workflows.ts';
import { testCustomLlmConnection } from '../shared/agent-tools/custom-llm-connection.ts';
import { domainHandler } from '../shared/platform/http/handler.ts';
import { getMcpTools } from '../shared/agent-tools/mcp-tools.ts';
import { withOutboundSlot } from '../shared/platform/egress/outbound-slots.ts';
import { agentToolRoutes } from '../shared/agent-tools/routes.ts';
import * as shareLinks from '../shared/agent-tools/share-links.ts';

export const handler = domainHandler(agentToolRoutes, {
  listShareLinks: ({ principal, params }) => shareLinks.listShareLinks(principal.workspaceId, params.agent_id),
  createShareLink: ({ principal, params }) => shareLinks.createShareLink(principal.workspaceId, params.agent_id),
  revokeShareLink: async ({ principal, params }) => {
    await shareLinks.revokeShareLink(principal.workspaceId, params.id);
  },

  listWorkflows: ({ principal, params }) => workflows.listWorkflows(principal.workspaceId, params.agent_id),
  putWorkflow: ({ principal, params, body }) =>
    workflows.putWorkflow(principal.workspaceId, params.agent_id, params.stage, body),
  testWorkflow: ({ principal, params, body }) =>
    withOutboundSlot(principal.workspaceId, () =>
      workflows.testWorkflow(principal.workspaceId, params.agent_id, params.stage, body),
    ),
  listWorkflowRuns: ({ principal, params, query }) =>
    workflows.listWorkflowRuns(principal.workspaceId, params.agent_id, query),

  generateAgent: ({ principal, body }) => generateAgent(principal.workspaceId, body),
  agentCopilot: ({ principal, params, query, body }) =>
    askCopilot(principal.workspaceId, params.agent_id, query.version, body),

  agentEstimates: ({ principal, params, query }) => estimateAgent(principal.workspaceId, params.agent_id, query.version),
  repairAgent: ({ principal, params, query }) => repairAgent(principal.workspaceId, params.agent_id, query.version),
  getMcpTools: ({ principal, params, query }) =>
    withOutboundSlot(principal.workspaceId, () => getMcpTools(principal.workspaceId, params.agent_id, query)),
  testCustomLlmConnection: ({ principal, body }) => withOutboundSlot(principal.workspaceId, () => testCustomLlmConnection(body)),
});
