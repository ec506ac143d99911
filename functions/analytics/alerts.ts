import type { Handlers } from '../../shared/platform/http/route.ts';
import type { alertsRoutes } from '../../shared/analytics/alerts/routes.ts';
import * as alerts from '../../shared/analytics/alerts/index.ts';

export const alertsHandlers: Handlers<typeof alertsRoutes> = {
  listAlertMetrics: () => alerts.listAlertMetrics(),
  createAlert: ({ principal, body }) => alerts.createAlert(principal.workspaceId, body),
  listAlerts: ({ principal }) => alerts.listAlerts(principal.workspaceId),
  getAlert: ({ principal, params }) => alerts.getAlert(principal.workspaceId, params.alert_id),
  updateAlert: ({ principal, params, body }) => alerts.updateAlert(principal.workspaceId, params.alert_id, body),
  deleteAlert: ({ principal, params }) => alerts.deleteAlert(principal.workspaceId, params.alert_id),
  evaluateAlert: ({ principal, params }) => alerts.evaluateAlert(principal.workspaceId, params.alert_id),
  testAlert: ({ principal, params }) => alerts.testAlert(principal.workspaceId, params.alert_id),
  listAlertEvents: ({ principal, query }) => alerts.listAlertEvents(principal.workspaceId, query),
};
