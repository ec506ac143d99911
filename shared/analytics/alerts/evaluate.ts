import { randomUUID } from 'node:crypto';
import { getWorkspaceItem } from '../../account/index.ts';
import { badRequest } from '../../platform/errors.ts';
import { newTimeOrderedId } from '../../platform/ids.ts';
import { logger } from '../../platform/logger.ts';
import { enqueueWebhook } from '../../webhooks/index.ts';
import { eachLimited } from '../../platform/parallel.ts';
import { metricValue, metricValues, type MetricRequest, type Window } from './metrics.ts';
import type { Alert, AlertEvent, AlertState, Comparator } from './schemas.ts';
import {
  claimDueAlert,
  DUE_PARTITION_COUNT,
  DueMoves,
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

/** What a rule reads at `now`: its window's value, and the previous window's for a relative threshold. */
function ruleRequests(rule: AlertItem, now: number): { current: MetricRequest; previous?: MetricRequest } {
  const windows = windowsAt(rule, now);
  const request = (window: Window): MetricRequest => ({ workspaceId: rule.workspace_id, metric: rule.metric, filters: rule.filters ?? {}, window });
  return { current: request(windows.current), ...(rule.threshold.type === 'relative' ? { previous: request(windows.previous) } : {}) };
}

/** A rule's values, read or being read: the window's, and the previous window's for a relative threshold. */
interface Readings {
  value: Promise<number | null>;
  previous?: Promise<number | null>;
}

/** Reads a rule's values on its own (POST /alerts/{id}/evaluate). */
function readAlone(rule: AlertItem, now: number): Readings {
  const { current, previous } = ruleRequests(rule, now);
  const read = (request: MetricRequest) => metricValue(request.workspaceId, request.metric, request.filters, request.window, now);
  return { value: read(current), ...(previous ? { previous: read(previous) } : {}) };
}

/**
 * Evaluates a rule at `now` from its readings and moves its state: writes the change (with
 * its event) or the observation, and queues the event's webhook once the change is written.
 * `claimed`: the tick took the rule, which recorded `now` as its last evaluation, so an
 * observation of the value it already holds writes nothing.
 */
async function evaluateRule(rule: AlertItem, now: number, readings: Readings, claimed = false): Promise<Evaluation> {
  const { current } = windowsAt(rule, now);
  const [value, previousValue] = await Promise.all([readings.value, readings.previous]);
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
    if (!(claimed && value === (rule.last_value ?? null))) await writeObservation(rule, observation);
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
  const rule = await getAlertItem(workspaceId, alertId);
  return evaluateRule(rule, now, readAlone(rule, now));
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

/** Claims, reads and evaluations run side by side in a pass: each is a small read or write. */
const PASS_CONCURRENCY = 32;
/** A pass stops taking rules this long after it began: what is left stays due for the next minute's. */
const PASS_BUDGET_MS = 50_000;
/**
 * Due entries a pass takes together: claimed, their due entries moved in batch writes, their
 * metrics read (once per workspace and source among them), then evaluated. Larger shares more
 * reads; smaller keeps the last group's work after the budget short.
 */
const PASS_GROUP = 500;

/**
 * The alert tick (every minute): every due entry of every due partition, oldest first (a
 * workspace's together), in groups of PASS_GROUP: each rule taken (claimDueAlert: one
 * taker among overlapping ticks, its next evaluation moved on by its frequency from this
 * minute), the group's due entries moved in batch writes, the metrics the group's rules watch
 * read once per source (metricValues), and each rule evaluated.
 */
export async function runAlertTick(options: { now?: number; clock?: () => number; concurrency?: number; budgetMs?: number } = {}): Promise<AlertTickResult> {
  const clock = options.clock ?? Date.now;
  const now = options.now ?? clock();
  const started = clock();
  const inBudget = () => clock() - started < (options.budgetMs ?? PASS_BUDGET_MS);
  const concurrency = options.concurrency ?? PASS_CONCURRENCY;
  const minute = Math.floor(now / MINUTE) * MINUTE;
  const entries: DueEntry[] = (await Promise.all(Array.from({ length: DUE_PARTITION_COUNT }, (_, partition) => dueEntries(partition, now)))).flat();
  // Oldest due first; a workspace's rules side by side, so a group shares their reads.
  entries.sort((a, b) => a.due_at - b.due_at || (a.workspace_id < b.workspace_id ? -1 : a.workspace_id > b.workspace_id ? 1 : 0));
  const result: AlertTickResult = { due: entries.length, evaluated: 0, triggered: 0, resolved: 0, failed: 0 };
  const failed = (entry: Pick<DueEntry, 'workspace_id' | 'alert_id'>, error: unknown) => {
    result.failed++;
    logger.error('evaluating an alert rule failed', { workspace_id: entry.workspace_id, alert_id: entry.alert_id, error: error instanceof Error ? error.message : String(error) });
  };
  const moves = new DueMoves();
  const pass = randomUUID();
  for (let offset = 0; offset < entries.length && inBudget(); offset += PASS_GROUP) {
    const rules: AlertItem[] = [];
    await eachLimited(entries.slice(offset, offset + PASS_GROUP), concurrency, async (entry) => {
      if (!inBudget()) return;
      try {
        const rule = await claimDueAlert(entry, minute, now, moves, pass);
        if (rule) rules.push(rule);
      } catch (error) {
        failed(entry, error);
      }
    });
    const moved = moves.send().catch((error: unknown) => {
      // The old entries stay (stale, set right by the next pass); the claimed rules are still evaluated.
      logger.error('moving alert due entries failed', { error: error instanceof Error ? error.message : String(error) });
    });
    const requests = rules.map((rule) => ruleRequests(rule, now));
    const values = metricValues(requests.flatMap(({ current, previous }) => (previous ? [current, previous] : [current])), now, concurrency);
    let next = 0;
    const readings = requests.map(({ previous }): Readings => ({ value: values[next++]!, ...(previous ? { previous: values[next++]! } : {}) }));
    // The entries are moved before the rules are evaluated, as one rule at a time would.
    await moved;
    await eachLimited(rules, concurrency, async (rule, index) => {
      try {
        const evaluation = await evaluateRule(rule, now, readings[index]!, true);
        result.evaluated++;
        if (evaluation.state !== rule.state && evaluation.state === 'triggered') result.triggered++;
        if (evaluation.state !== rule.state && evaluation.state === 'resolved') result.resolved++;
      } catch (error) {
        failed(rule, error);
      }
    });
  }
  return result;
}
