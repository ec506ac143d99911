import type { Handlers } from '../../shared/platform/http/route.ts';
import type { dashboardsRoutes } from '../../shared/analytics/dashboards/routes.ts';
import * as dashboards from '../../shared/analytics/dashboards/index.ts';

export const dashboardsHandlers: Handlers<typeof dashboardsRoutes> = {
  listDashboards: ({ principal }) => dashboards.listDashboards(principal.workspaceId),
  createDashboard: ({ principal, body }) => dashboards.createDashboard(principal.workspaceId, body),
  getDashboard: ({ principal, params }) => dashboards.getDashboard(principal.workspaceId, params.dashboard_id),
  replaceDashboard: ({ principal, params, body }) => dashboards.replaceDashboard(principal.workspaceId, params.dashboard_id, body),
  deleteDashboard: ({ principal, params }) => dashboards.deleteDashboard(principal.workspaceId, params.dashboard_id),
  getDashboardPage: async ({ principal, params, request }) => (await dashboards.dashboardPage(principal, params.dashboard_id, request)) as never,
};
