import type { Handlers } from '../../shared/platform/http/route.ts';
import type { dashboardsRoutes } from '../../shared/analytics/dashboards/routes.ts';

export const dashboardsHandlers: Handlers<typeof dashboardsRoutes> = {};
