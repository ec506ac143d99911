import { defineRoutes } from '../http/route.ts';

/** Voice agents, their versions and tags (scope `agents`). */
export const agentRoutes = defineRoutes({});
