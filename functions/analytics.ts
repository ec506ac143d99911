import { domainHandler } from '../shared/platform/http/handler.ts';
import { alertsRoutes } from '../shared/analytics/alerts/routes.ts';
import { dashboardsRoutes } from '../shared/analytics/dashboards/routes.ts';
import { queryRoutes } from '../shared/analytics/query/routes.ts';
import { alertsHandlers } from './analytics/alerts.ts';
import { dashboardsHandlers } from './analytics/dashboards.ts';
import { queryHandlers } from './analytics/query.ts';

/** One Lambda for the analytics scope; its handler maps live beside it, one per route module. */
export const handler = domainHandler(
  { ...queryRoutes, ...dashboardsRoutes, ...alertsRoutes },
  { ...queryHandlers, ...dashboardsHandlers, ...alertsHandlers },
);
