import { agentsUsingEngine } from '../shared/agents/agents.ts';
import * as flows from '../shared/agents/conversation-flows.ts';
import * as components from '../shared/agents/flow-components.ts';
import { domainHandler } from '../shared/platform/http/handler.ts';
import { flowRoutes } from '../shared/agents/flow-routes.ts';

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

  createConversationFlowComponent: ({ principal, body }) => components.createComponent(principal.workspaceId, body),
  getConversationFlowComponent: ({ principal, params }) =>
    components.getComponent(principal.workspaceId, params.component_id),
  listConversationFlowComponents: ({ principal, query }) => components.listComponents(principal.workspaceId, query),
  listConversationFlowComponentsArray: async ({ principal, query }) =>
    (await components.listComponents(principal.workspaceId, query)).items,
  updateConversationFlowComponent: ({ principal, params, body }) =>
    components.updateComponent(principal.workspaceId, params.component_id, body),
  deleteConversationFlowComponent: ({ principal, params }) =>
    components.deleteComponent(principal.workspaceId, params.component_id),
});
