import { agentsUsingEngine } from '../shared/agents/voice-agents/index.ts';
import * as flows from '../shared/agents/flows/index.ts';
import { domainHandler } from '../shared/platform/http/handler.ts';
import { flowRoutes } from '../shared/agents/flows/flow-routes.ts';

export const handler = domainHandler(flowRoutes, {
  createConversationFlow: ({ principal, body }) => flows.createFlow(principal.workspaceId, body),
  getConversationFlow: ({ principal, params, query }) =>
    flows.getFlow(principal.workspaceId, params.conversation_flow_id, query.version),
  listConversationFlows: ({ principal, query }) => flows.listFlows(principal.workspaceId, query),
  listConversationFlowsArray: async ({ principal, query }) => (await flows.listFlows(principal.workspaceId, query)).items,
  updateConversationFlow: ({ principal, params, query, body }) =>
    flows.updateFlow(principal.workspaceId, params.conversation_flow_id, query.version, body),
  deleteConversationFlow: ({ principal, params, query }) =>
    flows.deleteFlow(principal.workspaceId, params.conversation_flow_id, {
      force: query.force_delete === 'true',
      usedBy: (flowId) => agentsUsingEngine(principal.workspaceId, flowId),
    }),

  createConversationFlowComponent: ({ principal, body }) => flows.createComponent(principal.workspaceId, body),
  getConversationFlowComponent: ({ principal, params }) =>
    flows.getComponent(principal.workspaceId, params.component_id),
  listConversationFlowComponents: ({ principal, query }) => flows.listComponents(principal.workspaceId, query),
  listConversationFlowComponentsArray: async ({ principal, query }) =>
    (await flows.listComponents(principal.workspaceId, query)).items,
  updateConversationFlowComponent: ({ principal, params, body }) =>
    flows.updateComponent(principal.workspaceId, params.component_id, body),
  deleteConversationFlowComponent: ({ principal, params }) =>
    flows.deleteComponent(principal.workspaceId, params.component_id),
});
