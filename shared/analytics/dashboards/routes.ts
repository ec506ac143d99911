import { defineRoutes } from '../../platform/http/route.ts';

/** The analytics function's dashboards routes (scope `analytics`). */
export const dashboardsRoutes = defineRoutes({ domain: 'analytics', access: 'analytics' }, {});
