import { defineRoutes } from '../http/route.ts';

/** SIP connection tests (SIP OPTIONS to a termination URI) (scope `numbers`). */
export const connectionTestRoutes = defineRoutes({});
