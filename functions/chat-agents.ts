import * as chatAgents from '../shared/agents/chat-agents/index.ts';
import { domainHandler } from '../shared/platform/http/handler.ts';
import { chatAgentRoutes } from '../shared/agents/chat-agents/chat-agent-routes.ts';

export const handler = domainHandler(chatAgentRoutes, {
  createChatAgent: ({ principal, body }) => chatAgents.createChatAgent(principal.workspaceId, body),
  getChatAgent: ({ principal, params, query }) =>
    chatAgents.getChatAgent(principal.workspaceId, params.chat_agent_id, query.version),
  listChatAgents: ({ principal, query }) => chatAgents.listChatAgents(principal.workspaceId, query),
  updateChatAgent: ({ principal, params, query, body }) =>
    chatAgents.updateChatAgent(principal.workspaceId, params.chat_agent_id, query.version, body),
  deleteChatAgent: ({ principal, params }) => chatAgents.deleteChatAgent(principal.workspaceId, params.chat_agent_id),
  publishChatAgent: ({ principal, params, body }) =>
    chatAgents.publishChatAgent(principal.workspaceId, params.chat_agent_id, body),
  getChatAgentVersions: ({ principal, params }) =>
    chatAgents.allChatAgentVersions(principal.workspaceId, params.chat_agent_id),
  getChatAgentVersion: ({ principal, params }) =>
    chatAgents.getChatAgentVersion(principal.workspaceId, params.chat_agent_id, params.version),
  restoreChatAgentVersion: ({ principal, params }) =>
    chatAgents.restoreChatAgentVersion(principal.workspaceId, params.chat_agent_id, params.version),
  convertAgentToChat: ({ principal, params, query }) =>
    chatAgents.convertAgentToChat(principal.workspaceId, params.agent_id, query.version),
});
