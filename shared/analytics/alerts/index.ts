/**
 * Alerts: routes.ts (served by the analytics function), schemas.ts, the metrics in
 * metrics.ts, the rules' logic in alerts.ts, evaluation and the tick in evaluate.ts, the
 * items in store.ts.
 */
export { createAlert, deleteAlert, getAlert, listAlertEvents, listAlertMetrics, listAlerts, updateAlert } from './alerts.ts';
export { evaluateAlert, runAlertTick, testAlert, type AlertTickResult } from './evaluate.ts';
