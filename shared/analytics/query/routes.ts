import { defineRoutes } from '../../platform/http/route.ts';

/** The analytics function's query routes (scope `analytics`). */
export const queryRoutes = defineRoutes({ domain: 'analytics', access: 'analytics' }, {});
