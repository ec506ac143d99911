import { defineRoutes } from '../../platform/http/route.ts';
import { Dashboard, DashboardBody, dashboardIdParams, DashboardList, DashboardPage, ReplaceDashboardBody } from './schemas.ts';

/**
 * The analytics function's dashboards routes (scope `analytics`; members read, developers
 * and admins write). `GET /dashboards/{dashboard_id}` and the page are ours beside the spec's
 * four: the page reads the dashboard it draws.
 */
export const dashboardsRoutes = defineRoutes({ domain: 'analytics', access: 'analytics' }, {
  listDashboards: {
    method: 'GET', path: '/dashboards', status: 200,
    summary: "List the workspace's dashboards, newest first (at most 100)",
    response: DashboardList,
  },
  createDashboard: {
    method: 'POST', path: '/dashboards', status: 201,
    summary: 'Create a dashboard: a name and up to 24 widgets, each a title, a chart type and an analytics query checked on save',
    body: DashboardBody, response: Dashboard,
  },
  getDashboard: {
    method: 'GET', path: '/dashboards/{dashboard_id}', status: 200,
    summary: 'Get a dashboard',
    params: dashboardIdParams, response: Dashboard,
  },
  replaceDashboard: {
    method: 'PUT', path: '/dashboards/{dashboard_id}', status: 200,
    summary: 'Replace a dashboard (name, description, widgets); with `revision`, only if no other write came since',
    params: dashboardIdParams, body: ReplaceDashboardBody, response: Dashboard,
  },
  deleteDashboard: {
    method: 'DELETE', path: '/dashboards/{dashboard_id}', status: 204,
    summary: 'Delete a dashboard',
    params: dashboardIdParams,
  },
  getDashboardPage: {
    method: 'GET', path: '/dashboards/{dashboard_id}/page', status: 200,
    summary: "The dashboard as a page for a signed-in member's browser (session cookie): its widgets drawn as charts (docs/browser.md)",
    params: dashboardIdParams, produces: 'text/html; charset=utf-8', response: DashboardPage, cors: 'same-origin',
  },
});
