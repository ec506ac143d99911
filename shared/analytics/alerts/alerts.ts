import { badRequest, conflict } from '../../platform/errors.ts';
import { newTimeOrderedId } from '../../platform/ids.ts';
import { toAlert, toAlertEvent } from './evaluate.ts';
import { alertMetricList } from './metrics.ts';
import { MAX_ALERTS, ruleProblems, type Alert, type AlertEvent, type AlertInput, type AlertPatch } from './schemas.ts';
import { createAlertItem, deleteAlertItem, getAlertItem, listAlertEventItems, listAlertItems, replaceAlertItem, type AlertItem } from './store.ts';

/** GET /alerts/metrics. */
export const listAlertMetrics = () => alertMetricList();

/** A new rule is due at once when enabled: the next tick evaluates it. */
export async function createAlert(workspaceId: string, body: AlertInput, nowMs = Date.now()): Promise<Alert> {
  const item: AlertItem = {
    workspace_id: workspaceId,
    alert_id: newTimeOrderedId('alert', nowMs),
    name: body.name,
    metric: body.metric,
    ...(body.filters?.agent_id ? { filters: { agent_id: body.filters.agent_id } } : {}),
    comparator: body.comparator,
    threshold: body.threshold,
    window_minutes: body.window_minutes,
    frequency_minutes: body.frequency_minutes,
    frequency_ms: body.frequency_minutes * 60_000,
    webhook_url: body.webhook_url ?? null,
    enabled: body.enabled,
    state: 'ok',
    last_value: null,
    last_evaluation_timestamp: null,
    next_evaluation_timestamp: body.enabled ? nowMs : null,
    transitions: 0,
    revision: 1,
    created_timestamp: nowMs,
    last_modification_timestamp: nowMs,
  };
  await createAlertItem(item, MAX_ALERTS);
  return toAlert(item);
}

export const getAlert = async (workspaceId: string, alertId: string): Promise<Alert> => toAlert(await getAlertItem(workspaceId, alertId));

export const listAlerts = async (workspaceId: string): Promise<Alert[]> => (await listAlertItems(workspaceId)).map(toAlert);

/** The rule with the patch applied (what it leaves out stays; null removes the URL or the filters). */
function patched(item: AlertItem, patch: AlertPatch, nowMs: number): AlertItem {
  const next: AlertItem = { ...item, revision: item.revision + 1, last_modification_timestamp: nowMs };
  if (patch.name !== undefined) next.name = patch.name;
  if (patch.metric !== undefined) next.metric = patch.metric;
  if (patch.filters !== undefined) {
    if (patch.filters?.agent_id) next.filters = { agent_id: patch.filters.agent_id };
    else delete next.filters;
  }
  if (patch.comparator !== undefined) next.comparator = patch.comparator;
  if (patch.threshold !== undefined) next.threshold = patch.threshold;
  if (patch.window_minutes !== undefined) next.window_minutes = patch.window_minutes;
  if (patch.frequency_minutes !== undefined) {
    next.frequency_minutes = patch.frequency_minutes;
    next.frequency_ms = patch.frequency_minutes * 60_000;
  }
  if (patch.webhook_url !== undefined) next.webhook_url = patch.webhook_url;
  if (patch.enabled !== undefined) next.enabled = patch.enabled;
  // Disabled: out of the due index; enabled again: due at once.
  if (!next.enabled) next.next_evaluation_timestamp = null;
  else if (!item.enabled || item.next_evaluation_timestamp === null) next.next_evaluation_timestamp = nowMs;
  return next;
}

const PATCH_ATTEMPTS = 3;

/**
 * PATCH /alerts/{alert_id}: the fields given, checked together with those kept (a metric
 * and its filters, its threshold's kind), written on condition no other edit came since the
 * read; a lost race reads and applies the patch again. The state is kept: the next
 * evaluation moves it by the rule as edited.
 */
export async function updateAlert(workspaceId: string, alertId: string, patch: AlertPatch, nowMs = Date.now()): Promise<Alert> {
  for (let attempt = 1; ; attempt++) {
    const item = await getAlertItem(workspaceId, alertId);
    const next = patched(item, patch, nowMs);
    const problem = ruleProblems(next)[0];
    if (problem) throw badRequest(`${problem.path.join('.')}: ${problem.message}`);
    if (await replaceAlertItem(item, next)) return toAlert(next);
    if (attempt >= PATCH_ATTEMPTS) throw conflict(`Alert ${alertId} is being edited by another request: try again`);
  }
}

export const deleteAlert = (workspaceId: string, alertId: string): Promise<void> => deleteAlertItem(workspaceId, alertId);

/** GET /alert-events: newest first, `limit` a page, after `pagination_key` (the previous page's last alert_event_id). */
export async function listAlertEvents(workspaceId: string, query: { limit: number; pagination_key?: string }): Promise<AlertEvent[]> {
  return (await listAlertEventItems(workspaceId, query.limit, query.pagination_key)).map(toAlertEvent);
}
