import { defineRoutes } from '../http/route.ts';

/** Agent extras: repair, estimates, generation, workflows, share links, copilot, MCP tools (scope `agents`). */
export const agentToolRoutes = defineRoutes({});
