import { defineRoutes } from '../../platform/http/route.ts';

/** The analytics function's alerts routes (scope `analytics`). */
export const alertsRoutes = defineRoutes({ domain: 'analytics', access: 'analytics' }, {});
