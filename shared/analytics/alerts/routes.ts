import { defineRoutes } from '../../platform/http/route.ts';
import {
  Alert,
  AlertBody,
  AlertEvaluation,
  AlertEventList,
  AlertEventsQuery,
  alertIdParams,
  AlertList,
  AlertMetricList,
  AlertPatchBody,
  AlertTestResult,
} from './schemas.ts';

/**
 * The analytics function's alerts routes (scope `analytics`; members read, developers and
 * admins write: evaluating moves a rule's state and a test sends a webhook, so both write).
 */
export const alertsRoutes = defineRoutes({ domain: 'analytics', access: 'analytics' }, {
  listAlertMetrics: {
    method: 'GET', path: '/alerts/metrics', status: 200,
    summary: 'The metrics an alert rule can watch, with their units and the filters each takes',
    response: AlertMetricList,
  },
  createAlert: {
    method: 'POST', path: '/alerts', status: 201,
    summary: 'Create an alert rule: a metric over a window, a comparator and a threshold (absolute, or relative to the previous window), how often it is evaluated, and where its events go',
    body: AlertBody, response: Alert,
  },
  listAlerts: {
    method: 'GET', path: '/alerts', status: 200,
    summary: "The workspace's alert rules, newest first (at most 500)",
    response: AlertList,
  },
  getAlert: {
    method: 'GET', path: '/alerts/{alert_id}', status: 200,
    summary: 'Get an alert rule, with its state and last value',
    params: alertIdParams, response: Alert,
  },
  updateAlert: {
    method: 'PATCH', path: '/alerts/{alert_id}', status: 200,
    summary: 'Change an alert rule: the fields given; `webhook_url: null` removes its URL',
    params: alertIdParams, body: AlertPatchBody, response: Alert,
  },
  deleteAlert: {
    method: 'DELETE', path: '/alerts/{alert_id}', status: 204,
    summary: 'Delete an alert rule (its events stay listed until they expire)',
    params: alertIdParams,
  },
  evaluateAlert: {
    method: 'POST', path: '/alerts/{alert_id}/evaluate', status: 200,
    summary: 'Evaluate an alert rule now: its value (and the previous window\'s), the threshold and the state it moved to, sending its event as the schedule would',
    params: alertIdParams, response: AlertEvaluation,
  },
  testAlert: {
    method: 'POST', path: '/alerts/{alert_id}/test', status: 200,
    throttle: 'outbound',
    summary: "Send a signed sample alert_triggered (with `test: true`) to the rule's webhook URL, else the workspace's, and answer what was sent",
    params: alertIdParams, response: AlertTestResult,
  },
  listAlertEvents: {
    method: 'GET', path: '/alert-events', status: 200,
    summary: "What the workspace's alert rules recorded (alert_triggered, alert_resolved), newest first",
    query: AlertEventsQuery, response: AlertEventList,
  },
});
