import { domainHandler } from '../shared/http/handler.ts';
import { agentRoutes } from '../shared/routes/agents.ts';
import { llmRoutes } from '../shared/routes/llms.ts';

export const handler = domainHandler({ ...agentRoutes, ...llmRoutes }, {});
