import { defineRoutes } from '../http/route.ts';

/** Response engines: Retell LLMs (scope `agents`). */
export const llmRoutes = defineRoutes({});
