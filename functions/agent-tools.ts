import { domainHandler } from '../shared/http/handler.ts';
import { agentToolRoutes } from '../shared/routes/agent-tools.ts';

export const handler = domainHandler(agentToolRoutes, {});
