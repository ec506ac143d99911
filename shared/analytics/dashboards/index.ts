/**
 * Dashboards: routes.ts (served by the analytics function), schemas.ts, the logic in
 * dashboards.ts, the page in page.ts, the items in store.ts.
 */
export { createDashboard, deleteDashboard, getDashboard, listDashboards, replaceDashboard } from './dashboards.ts';
export { dashboardPage } from './page.ts';
