/**
 * Chat agents: versioned like voice agents and running the same engines (served by the
 * chat-agents function). Routes: chat-agent-routes.ts; schemas: chat-agent-schemas.ts;
 * logic: chat-agents.ts; the version operations both kinds use: ../versions/.
 */
;
export {
  allChatAgentVersions,
  convertAgentToChat,
  createChatAgent,
  deleteChatAgent,
  getChatAgent,
  getChatAgentVersion,
  listChatAgents,
  publishChatAgent,
  restoreChatAgentVersion,
  updateChatAgent,
} from './chat-agents.ts';
