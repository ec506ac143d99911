import type { Handlers } from '../../shared/platform/http/route.ts';
import type { alertsRoutes } from '../../shared/analytics/alerts/routes.ts';

export const alertsHandlers: Handlers<typeof alertsRoutes> = {};
