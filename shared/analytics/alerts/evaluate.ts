import { getWorkspaceItem } from '../../account/index.ts';
import { badRequest } from '../../platform/errors.ts';
import { newTimeOrderedId } from '../../platform/ids.ts';
import { logger } from '../../platform/logger.ts';
import { enqueueWebhook } from '../../webhooks/index.ts';
import { metricValue, type ReadCache, type Window } from './metrics.ts';
import type { Alert, AlertEvent, AlertState, Comparator } from './schemas.ts';
import {
  claimDueAlert,
  DUE_PARTITION_COUNT,
  dueEntries,
  eventExpiry,
  getAlertItem,
  writeObservation,
  writeTransition,
  type AlertEventItem,
  type AlertItem,
  type DueEntry,
} from './store.ts';

/*
 * Evaluating rules (docs/analytics.md, "Alerts"): a rule's value over its last whole
 * minutes, compared with its threshold, moves its state
 *
 *   ok ──crossed──▶ triggered ──not crossed──▶ resolved ──not crossed──▶ ok
 *                       ▲                          │
 *                       └────────crossed───────────┘
 *
 * Entering `triggered` records an `alert_triggered` event and sends it; leaving it records
 * and sends `alert_resolved`; staying triggered sends nothing, and `resolved` becomes `ok`
 * quietly. Every change is written on condition the rule's change count is the one read
 * (store.ts), so overlapping evaluations record and send it once.
 */

const MINUTE = 60_000;

/** The rule's window ending at the last whole minute before `now`, and the window before it. */
function windowsAt(rule: Pick<AlertItem, 'window_minutes'>, now: number): { current: Window; previous: Window } {
  const end = Math.floor(now / MINUTE) * MINUTE;
  const length = rule.window_minutes * MINUTE;
  return { current: { start: end - length, end }, previous: { start: end - 2 * length, end: end - length } };
}

/** What the value is compared with: the absolute value, or the previous window's moved by the percentage (null without one). */
function thresholdValue(rule: Pick<AlertItem, 'threshold' | 'comparator'>, previous: number | null | undefined): number | null {
  if (rule.threshold.type === 'absolute') return rule.threshold.value;
  if (previous === null || previous === undefined) return null;
  const factor = rule.comparator === 'gt' || rule.comparator === 'gte' ? 1 + rule.threshold.percent / 100 : 1 - rule.threshold.percent / 100;
  return Math.round(previous * factor * 10_000) / 10_000;
}

/** Whether the value crosses the threshold; nothing to compare (null on either side) is not crossing. */
function crosses(value: number | null, comparator: Comparator, bound: number | null): boolean {
  if (value === null || bound === null) return false;
  switch (comparator) {
    case 'gt':
      return value > bound;
    case 'gte':
      return value >= bound;
    case 'lt':
      return value < bound;
    case 'lte':
      return value <= bound;
  }
}

function nextState(state: AlertState, crossed: boolean): AlertState {
  if (crossed) return 'triggered';
  return state === 'triggered' ? 'resolved' : 'ok';
}

export interface Evaluation {
  value: number | null;
  previous_value?: number | null;
  threshold_value: number | null;
  state: AlertState;
  triggered: boolean;
  window_start_timestamp: number;
  window_end_timestamp: number;
}

/** A rule as the API answers it (the item without its workspace, keys and counters). */
export function toAlert(item: AlertItem): Alert {
  return {
    alert_id: item.alert_id,
    name: item.name,
    metric: item.metric,
    filters: item.filters ?? {},
    comparator: item.comparator,
    threshold: item.threshold,
    window_minutes: item.window_minutes,
    frequency_minutes: item.frequency_minutes,
    webhook_url: item.webhook_url ?? null,
    enabled: item.enabled,
    state: item.state,
    last_value: item.last_value ?? null,
    last_evaluation_timestamp: item.last_evaluation_timestamp ?? null,
    next_evaluation_timestamp: item.next_evaluation_timestamp ?? null,
    created_timestamp: item.created_timestamp,
    last_modification_timestamp: item.last_modification_timestamp,
  };
}

export function toAlertEvent(item: AlertEventItem): AlertEvent {
  const { workspace_id: _workspace, expires_at: _expires, ...event } = item as AlertEventItem & { pk?: string; sk?: string };
  delete (event as { pk?: string }).pk;
  delete (event as { sk?: string }).sk;
  return event;
}

/** Where a rule's events go: its own URL, else the workspace's (none: the event is only listed). */
async function destinationOf(rule: AlertItem): Promise<string | undefined> {
  if (rule.webhook_url) return rule.webhook_url;
  return (await getWorkspaceItem(rule.workspace_id)).webhook_url ?? undefined;
}

/** The webhook body of an alert event: the event, and the rule as it now is. */
const webhookPayload = (rule: AlertItem, event: AlertEvent, test = false) => ({
  ...(test ? { test: true } : {}),
  alert: toAlert(rule),
  alert_event: event,
});

/**
 * Evaluates a rule at `now` and moves its state: reads its value (and the previous
 * window's for a relative threshold), writes the change or the observation, and queues the
 * event's webhook once the change is written.
 */
async function evaluateRule(rule: AlertItem, now: number, cache?: ReadCache): Promise<Evaluation> {
  const { current, previous } = windowsAt(rule, now);
  const filters = rule.filters ?? {};
  const [value, previousValue] = await Promise.all([
    metricValue(rule.workspace_id, rule.metric, filters, current, now, cache),
    rule.threshold.type === 'relative' ? metricValue(rule.workspace_id, rule.metric, filters, previous, now, cache) : undefined,
  ]);
  const bound = thresholdValue(rule, previousValue);
  const triggered = crosses(value, rule.comparator, bound);
  const state = nextState(rule.state, triggered);
  const observation = { value, at: now };
  const answer = (finalState: AlertState): Evaluation => ({
    value,
    ...(previousValue === undefined ? {} : { previous_value: previousValue }),
    threshold_value: bound,
    state: finalState,
    triggered,
    window_start_timestamp: current.start,
    window_end_timestamp: current.end,
  });
  if (state === rule.state) {
    await writeObservation(rule, observation);
    return answer(state);
  }
  const kind = state === 'triggered' ? 'alert_triggered' : rule.state === 'triggered' ? 'alert_resolved' : undefined;
  const event: AlertEventItem | undefined = kind && {
    alert_event_id: newTimeOrderedId('alertEvent', now),
    alert_id: rule.alert_id,
    event: kind,
    state: kind === 'alert_triggered' ? 'triggered' : 'resolved',
    metric: rule.metric,
    value,
    ...(previousValue === undefined ? {} : { previous_value: previousValue }),
    threshold_value: bound,
    comparator: rule.comparator,
    window_start_timestamp: current.start,
    window_end_timestamp: current.end,
    created_timestamp: now,
    workspace_id: rule.workspace_id,
    expires_at: eventExpiry(now),
  };
  if (!(await writeTransition(rule, state, observation, event))) {
    // Another evaluation changed the rule first and sent its event: answer the state it wrote.
    return answer((await getAlertItem(rule.workspace_id, rule.alert_id)).state);
  }
  if (event) await sendEvent({ ...rule, state, last_value: value, last_evaluation_timestamp: now }, event);
  return answer(state);
}

/**
 * Queues an event's webhook (signed and logged by the delivery queue like every webhook).
 * A failure to queue is logged: the change is recorded and listed, and a webhook is not
 * worth failing the evaluation of every other rule in the pass.
 */
async function sendEvent(rule: AlertItem, event: AlertEventItem): Promise<void> {
  try {
    const url = await destinationOf(rule);
    if (!url) return;
    await enqueueWebhook({ workspaceId: rule.workspace_id, url, event: event.event, payload: webhookPayload(rule, toAlertEvent(event)) });
  } catch (error) {
    logger.error('queueing an alert webhook failed', { workspace_id: rule.workspace_id, alert_id: rule.alert_id, alert_event_id: event.alert_event_id, error: error instanceof Error ? error.message : String(error) });
  }
}

/** POST /alerts/{alert_id}/evaluate: evaluates the rule now, moving its state as the tick would. */
export async function evaluateAlert(workspaceId: string, alertId: string, now = Date.now()): Promise<Evaluation> {
  return evaluateRule(await getAlertItem(workspaceId, alertId), now);
}

/** POST /alerts/{alert_id}/test: a signed sample `alert_triggered` (marked `test: true`) to where the rule's events go. */
export async function testAlert(workspaceId: string, alertId: string, now = Date.now()) {
  const rule = await getAlertItem(workspaceId, alertId);
  const url = await destinationOf(rule);
  if (!url) throw badRequest('webhook_url: The rule has no webhook_url and the workspace no webhook URL: nowhere to send the test event');
  const { current } = windowsAt(rule, now);
  const event: AlertEvent = {
    alert_event_id: newTimeOrderedId('alertEvent', now),
    alert_id: rule.alert_id,
    event: 'alert_triggered',
    state: 'triggered',
    metric: rule.metric,
    value: rule.last_value ?? null,
    threshold_value: rule.threshold.type === 'absolute' ? rule.threshold.value : null,
    comparator: rule.comparator,
    window_start_timestamp: current.start,
    window_end_timestamp: current.end,
    created_timestamp: now,
  };
  const payload = webhookPayload(rule, event, true);
  const deliveryId = await enqueueWebhook({ workspaceId, url, event: 'alert_triggered', payload });
  return { url, event: 'alert_triggered' as const, webhook_delivery_id: deliveryId, payload: { event: 'alert_triggered', ...payload } };
}

export interface AlertTickResult {
  due: number;
  evaluated: number;
  triggered: number;
  resolved: number;
  failed: number;
}

/** Evaluations run side by side in a pass: each is a few small reads and a write. */
const PASS_CONCURRENCY = 32;
/** A pass stops taking rules this long after it began: what is left stays due for the next minute's. */
const PASS_BUDGET_MS = 50_000;

/**
 * The alert tick (every minute): every due entry of every due partition, each rule taken
 * (claimDueAlert: one taker among overlapping ticks, its next evaluation moved on by its
 * frequency from this minute) and evaluated. Reads are shared within the pass: rules of a
 * workspace watching the same metric, filter and window read it once.
 */
export async function runAlertTick(options: { now?: number; clock?: () => number; concurrency?: number; budgetMs?: number } = {}): Promise<AlertTickResult> {
  const clock = options.clock ?? Date.now;
  const now = options.now ?? clock();
  const started = clock();
  const minute = Math.floor(now / MINUTE) * MINUTE;
  const entries: DueEntry[] = (await Promise.all(Array.from({ length: DUE_PARTITION_COUNT }, (_, partition) => dueEntries(partition, now)))).flat();
  entries.sort((a, b) => a.due_at - b.due_at);
  const result: AlertTickResult = { due: entries.length, evaluated: 0, triggered: 0, resolved: 0, failed: 0 };
  const cache: ReadCache = new Map();
  let next = 0;
  const worker = async () => {
    while (next < entries.length && clock() - started < (options.budgetMs ?? PASS_BUDGET_MS)) {
      const entry = entries[next++]!;
      try {
        const rule = await claimDueAlert(entry, minute);
        if (!rule) continue;
        const before = rule.state;
        const evaluation = await evaluateRule(rule, now, cache);
        result.evaluated++;
        if (evaluation.state !== before && evaluation.state === 'triggered') result.triggered++;
        if (evaluation.state !== before && evaluation.state === 'resolved') result.resolved++;
      } catch (error) {
        result.failed++;
        logger.error('evaluating an alert rule failed', { workspace_id: entry.workspace_id, alert_id: entry.alert_id, error: error instanceof Error ? error.message : String(error) });
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(options.concurrency ?? PASS_CONCURRENCY, Math.max(1, entries.length)) }, worker));
  return result;
}
