import { domainHandler } from '../shared/http/handler.ts';
import { chatAgentRoutes } from '../shared/routes/chat-agents.ts';

export const handler = domainHandler(chatAgentRoutes, {});
