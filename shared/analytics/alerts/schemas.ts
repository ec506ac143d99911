import * as z from 'zod';
import { destinationUrl, displayName, epochMs, idOf, lazySchema, queryInt } from '../../platform/http/schemas.ts';
import { ALERT_METRIC_NAMES, ALERT_METRICS } from './metrics.ts';

/*
 * Alert rules and their events (docs/analytics.md, "Alerts"). A rule watches one metric over
 * a window of whole minutes, compares it with a threshold (a value, or the previous window's
 * value moved by a percentage), is evaluated every `frequency_minutes`, and tells its
 * webhook URL (else the workspace's) when it triggers and when it resolves.
 */

const COMPARATORS = ['gt', 'gte', 'lt', 'lte'] as const;
export type Comparator = (typeof COMPARATORS)[number];
const ALERT_STATES = ['ok', 'triggered', 'resolved'] as const;
export type AlertState = (typeof ALERT_STATES)[number];

/** A window reads minute cells of at most a day; the previous window's reaches two days back, inside their 3 days. */
const MAX_WINDOW_MINUTES = 1440;
/** The most rules a workspace keeps: each costs a few reads every time it is evaluated. */
export const MAX_ALERTS = 500;

const threshold = () =>
  z.discriminatedUnion('type', [
    z.object({ type: z.literal('absolute'), value: z.number().finite().describe("Compared with the metric's value in its unit") }).strict(),
    z
      .object({
        type: z.literal('relative'),
        percent: z.number().finite().gt(0).max(10_000).describe("How far the value moved from the previous window's: gt/gte above it by more than this, lt/lte below it"),
      })
      .strict(),
  ]);

const filters = () => z.object({ agent_id: z.string().regex(/^(agent|chat_agent)_[0-9a-f]{24}$/, 'Must be an agent ID').optional() }).strict();

const ruleFields = () => ({
  name: displayName(),
  metric: z.enum(ALERT_METRIC_NAMES).describe('One of GET /alerts/metrics'),
  filters: filters().optional(),
  comparator: z.enum(COMPARATORS).describe('value gt (>), gte (>=), lt (<) or lte (<=) the threshold'),
  threshold: threshold(),
  window_minutes: z.number().int().min(1).max(MAX_WINDOW_MINUTES).describe('The window the value is read over: the last whole minutes before evaluation'),
  frequency_minutes: z.number().int().min(1).max(MAX_WINDOW_MINUTES).describe('Evaluated every this many minutes'),
  webhook_url: destinationUrl().nullable().optional().describe("Where alert_triggered and alert_resolved go; without one, the workspace's webhook URL"),
  enabled: z.boolean(),
});

type RuleShape = { metric: (typeof ALERT_METRIC_NAMES)[number]; filters?: { agent_id?: string } | undefined; threshold: { type: 'absolute' | 'relative' } };

/** What a metric allows of a rule: its filters, and a relative threshold only where there is a previous window. */
export function ruleProblems(rule: RuleShape): { path: string[]; message: string }[] {
  const spec = ALERT_METRICS[rule.metric];
  const problems: { path: string[]; message: string }[] = [];
  if (rule.filters?.agent_id !== undefined && !spec.filters.includes('agent_id')) {
    problems.push({ path: ['filters', 'agent_id'], message: `${rule.metric} is the workspace's alone: it takes no agent filter` });
  }
  if (rule.threshold.type === 'relative' && !spec.windowed) {
    problems.push({ path: ['threshold', 'type'], message: `${rule.metric} is read at evaluation, with no previous window: give an absolute threshold` });
  }
  return problems;
}

const checked = (rule: RuleShape, context: z.RefinementCtx) => {
  for (const problem of ruleProblems(rule)) context.addIssue({ code: 'custom', path: problem.path, message: problem.message });
};

export const AlertBody = lazySchema(() => {
  const fields = ruleFields();
  return z
    .object({
      ...fields,
      window_minutes: fields.window_minutes.default(5),
      frequency_minutes: fields.frequency_minutes.default(1),
      enabled: fields.enabled.default(true),
    })
    .strict()
    .superRefine(checked);
});
export type AlertInput = z.infer<typeof AlertBody>;

/** PATCH: any of the fields; what it leaves out stays. `webhook_url: null` removes the rule's URL, `filters: null` its filters. */
export const AlertPatchBody = lazySchema(() => {
  const fields = ruleFields();
  return z
    .object({
      name: fields.name.optional(),
      metric: fields.metric.optional(),
      filters: fields.filters.unwrap().nullable().optional(),
      comparator: fields.comparator.optional(),
      threshold: fields.threshold.optional(),
      window_minutes: fields.window_minutes.optional(),
      frequency_minutes: fields.frequency_minutes.optional(),
      webhook_url: fields.webhook_url,
      enabled: fields.enabled.optional(),
    })
    .strict();
});
export type AlertPatch = z.infer<typeof AlertPatchBody>;

export const Alert = lazySchema(() =>
  z.object({
    alert_id: z.string(),
    name: z.string(),
    metric: z.enum(ALERT_METRIC_NAMES),
    filters: z.object({ agent_id: z.string().optional() }),
    comparator: z.enum(COMPARATORS),
    threshold: threshold(),
    window_minutes: z.number().int(),
    frequency_minutes: z.number().int(),
    webhook_url: z.string().nullable(),
    enabled: z.boolean(),
    state: z.enum(ALERT_STATES).describe('ok, triggered (the threshold is crossed), resolved (it was crossed, and is no longer: ok at the next quiet evaluation)'),
    last_value: z.number().nullable().describe('The value at the last evaluation (null: nothing to read, or never evaluated)'),
    last_evaluation_timestamp: epochMs().nullable(),
    next_evaluation_timestamp: epochMs().nullable().describe('null while disabled'),
    created_timestamp: epochMs(),
    last_modification_timestamp: epochMs(),
  }),
);
export type Alert = z.infer<typeof Alert>;

export const AlertList = lazySchema(() => z.array(Alert));

export const alertIdParams = lazySchema(() => z.object({ alert_id: idOf('alert', 'an alert rule ID') }));

const EVENT_KINDS = ['alert_triggered', 'alert_resolved'] as const;

export const AlertEvent = lazySchema(() =>
  z.object({
    alert_event_id: z.string(),
    alert_id: z.string(),
    event: z.enum(EVENT_KINDS),
    state: z.enum(['triggered', 'resolved']),
    metric: z.enum(ALERT_METRIC_NAMES),
    value: z.number().nullable(),
    previous_value: z.number().nullable().optional().describe("The previous window's value (relative thresholds)"),
    threshold_value: z.number().nullable().describe('The value the rule compared with (for a relative threshold, the one the previous window gives)'),
    comparator: z.enum(COMPARATORS),
    window_start_timestamp: epochMs(),
    window_end_timestamp: epochMs(),
    created_timestamp: epochMs(),
  }),
);
export type AlertEvent = z.infer<typeof AlertEvent>;

export const AlertEventList = lazySchema(() => z.array(AlertEvent));

export const AlertEventsQuery = lazySchema(() =>
  z
    .object({
      limit: queryInt({ min: 1, max: 1000, default: 100 }),
      pagination_key: idOf('alertEvent', 'an alert event ID').optional().describe('The last alert_event_id of the previous page: the page starts after it'),
    })
    .strict(),
);

export const AlertMetricList = lazySchema(() =>
  z.array(
    z.object({
      name: z.enum(ALERT_METRIC_NAMES),
      description: z.string(),
      unit: z.enum(['calls', 'percent', 'ms', 'requests', 'cents']),
      filters: z.array(z.literal('agent_id')).describe('The filters a rule on it may give'),
      windowed: z.boolean().describe('Read over the window (else at evaluation, with no previous window: absolute thresholds only)'),
    }),
  ),
);

export const AlertEvaluation = lazySchema(() =>
  z.object({
    value: z.number().nullable(),
    previous_value: z.number().nullable().optional(),
    threshold_value: z.number().nullable(),
    state: z.enum(ALERT_STATES),
    triggered: z.boolean().describe('Whether the value crosses the threshold now'),
    window_start_timestamp: epochMs(),
    window_end_timestamp: epochMs(),
  }),
);

export const AlertTestResult = lazySchema(() =>
  z.object({
    url: z.string(),
    event: z.enum(EVENT_KINDS),
    webhook_delivery_id: z.string().describe('Its attempts are in GET /webhook-deliveries'),
    payload: z.record(z.string(), z.unknown()).describe('The body sent, signed as every webhook'),
  }),
);
