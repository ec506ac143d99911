import { defineRoutes } from '../http/route.ts';

/** Chat agents and their versions (scope `agents`). */
export const chatAgentRoutes = defineRoutes({});
