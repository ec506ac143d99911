import { defineRoutes } from '../http/route.ts';

/** Conversation flows and flow components (scope `agents`). */
export const flowRoutes = defineRoutes({});
