import { getConcurrency } from '../../calls/records/index.ts';
import { runQuery, type AnalyticsQuery } from '../query/index.ts';
import { COUNTER_PARTITIONS, readCounters } from '../rollups/index.ts';

/*
 * What an alert rule can watch (docs/analytics.md, "Alerts"), and how each metric's value
 * over a window is read. Conversation figures come from the calls' rollups through the
 * query language (one stepless query over the window: minute cells, the workspace's or
 * one agent's); custom-function requests and API errors from their counter cells; the
 * concurrency in use from the workspace's concurrency counter, read at evaluation.
 */

export const ALERT_METRIC_NAMES = [
  'call_count',
  'concurrency_used',
  'success_rate',
  'negative_sentiment_rate',
  'custom_function_latency',
  'custom_function_failures',
  'transfer_failures',
  'total_cost',
  'api_errors',
  'api_client_errors',
  'latency_p50',
  'latency_p90',
] as const;
export type AlertMetricName = (typeof ALERT_METRIC_NAMES)[number];

type Filter = 'agent_id';

interface MetricSpec {
  description: string;
  unit: 'calls' | 'percent' | 'ms' | 'requests' | 'cents';
  filters: readonly Filter[];
  /** Whether the value is of a window (else it is the figure at evaluation: no previous window). */
  windowed: boolean;
}

export const ALERT_METRICS: Record<AlertMetricName, MetricSpec> = {
  call_count: { description: 'Calls started in the window', unit: 'calls', filters: ['agent_id'], windowed: true },
  concurrency_used: { description: 'Calls in progress at evaluation (the current_concurrency of GET /get-concurrency)', unit: 'calls', filters: [], windowed: false },
  success_rate: { description: 'Successful calls among the analysed calls started in the window (call_analysis.call_successful)', unit: 'percent', filters: ['agent_id'], windowed: true },
  negative_sentiment_rate: { description: 'Calls of Negative user sentiment among the analysed calls started in the window', unit: 'percent', filters: ['agent_id'], windowed: true },
  custom_function_latency: { description: "Custom functions' average answer time, over the requests answered in the window", unit: 'ms', filters: ['agent_id'], windowed: true },
  custom_function_failures: { description: 'Custom function requests in the window that failed (no 2xx answer, a timeout, a refused address)', unit: 'requests', filters: ['agent_id'], windowed: true },
  transfer_failures: { description: 'Transfers cancelled without bridging, of the calls started in the window', unit: 'calls', filters: ['agent_id'], windowed: true },
  total_cost: { description: 'Combined cost of the calls started in the window that have ended', unit: 'cents', filters: ['agent_id'], windowed: true },
  api_errors: { description: "The API's 5xx answers to the workspace's requests in the window (503s, an AWS service not answering, are not counted)", unit: 'requests', filters: [], windowed: true },
  api_client_errors: { description: "The API's 4xx answers to the workspace's requests in the window (refused input, unknown IDs, spend limits; 429 rate limits are not counted)", unit: 'requests', filters: [], windowed: true },
  latency_p50: { description: "The median of the calls' end-to-end latency (each call's p50), calls started in the window", unit: 'ms', filters: ['agent_id'], windowed: true },
  latency_p90: { description: "The 90th percentile of the calls' end-to-end latency (each call's p50), calls started in the window", unit: 'ms', filters: ['agent_id'], windowed: true },
};

/** GET /alerts/metrics. */
export const alertMetricList = () =>
  ALERT_METRIC_NAMES.map((name) => ({ name, description: ALERT_METRICS[name].description, unit: ALERT_METRICS[name].unit, filters: [...ALERT_METRICS[name].filters], windowed: ALERT_METRICS[name].windowed }));

export interface MetricFilters {
  agent_id?: string;
}

/** A window: [start, end), epoch ms on whole minutes. */
export interface Window {
  start: number;
  end: number;
}

/** Reads that a pass shares: rules of one workspace watching the same thing over the same window read it once. */
export type ReadCache = Map<string, Promise<number | null>>;

const round = (value: number) => Math.round(value * 10_000) / 10_000;
const percent = (part: number, whole: number) => (whole === 0 ? null : round((part / whole) * 100));

/** The operation each calls metric runs over the window, and how its row becomes the value. */
const CALL_METRICS: Partial<Record<AlertMetricName, { operations: AnalyticsQuery['operations']; value: (row: Record<string, string | number | null>) => number | null }>> = {
  call_count: { operations: [{ operation: 'count' }], value: (row) => Number(row.count ?? 0) },
  success_rate: {
    operations: [{ operation: 'sum', column: 'successful' }, { operation: 'sum', column: 'analyzed' }],
    value: (row) => percent(Number(row.sum_successful ?? 0), Number(row.sum_analyzed ?? 0)),
  },
  negative_sentiment_rate: {
    operations: [{ operation: 'sum', column: 'sentiment_negative' }, { operation: 'sum', column: 'analyzed' }],
    value: (row) => percent(Number(row.sum_sentiment_negative ?? 0), Number(row.sum_analyzed ?? 0)),
  },
  transfer_failures: { operations: [{ operation: 'sum', column: 'transfer_failed' }], value: (row) => Number(row.sum_transfer_failed ?? 0) },
  total_cost: { operations: [{ operation: 'sum', column: 'cost' }], value: (row) => round(Number(row.sum_cost ?? 0)) },
  latency_p50: { operations: [{ operation: 'p50', column: 'latency_ms' }], value: (row) => (row.p50_latency_ms === null || row.p50_latency_ms === undefined ? null : round(Number(row.p50_latency_ms))) },
  latency_p90: { operations: [{ operation: 'p90', column: 'latency_ms' }], value: (row) => (row.p90_latency_ms === null || row.p90_latency_ms === undefined ? null : round(Number(row.p90_latency_ms))) },
};

async function readMetric(workspaceId: string, metric: AlertMetricName, filters: MetricFilters, window: Window, now: number): Promise<number | null> {
  const calls = CALL_METRICS[metric];
  if (calls) {
    const query: AnalyticsQuery = {
      table: 'calls',
      time_range: { start_timestamp: window.start, end_timestamp: window.end },
      ...(filters.agent_id ? { filters: { agent_id: filters.agent_id } } : {}),
      operations: calls.operations,
    };
    const answered = await runQuery(workspaceId, query, now);
    return calls.value(answered.result[0] ?? {});
  }
  switch (metric) {
    case 'concurrency_used':
      return (await getConcurrency(workspaceId)).current_concurrency;
    case 'custom_function_latency':
    case 'custom_function_failures': {
      const counters = await readCounters({
        workspaceId,
        partition: filters.agent_id ? COUNTER_PARTITIONS.functionsByAgent : COUNTER_PARTITIONS.functions,
        start: window.start,
        end: window.end,
        ...(filters.agent_id ? { value: [filters.agent_id] } : {}),
      });
      if (metric === 'custom_function_failures') return counters.x_failed ?? 0;
      return counters.c_latency_ms ? round(counters.s_latency_ms! / counters.c_latency_ms) : null;
    }
    case 'api_errors':
    case 'api_client_errors': {
      const counters = await readCounters({ workspaceId, partition: COUNTER_PARTITIONS.api, start: window.start, end: window.end });
      return (metric === 'api_errors' ? counters.x_5xx : counters.x_4xx) ?? 0;
    }
    default:
      throw new Error(`No reader for alert metric ${metric}`);
  }
}

/**
 * A metric's value over a window (null when there is nothing to answer from: a rate without
 * analysed calls, a latency without requests). With `cache`, one pass reads each distinct
 * workspace, metric, filter and window once.
 */
export function metricValue(workspaceId: string, metric: AlertMetricName, filters: MetricFilters, window: Window, now: number, cache?: ReadCache): Promise<number | null> {
  if (!cache) return readMetric(workspaceId, metric, filters, window, now);
  const key = `${workspaceId}|${metric}|${filters.agent_id ?? ''}|${ALERT_METRICS[metric].windowed ? `${window.start}|${window.end}` : ''}`;
  let value = cache.get(key);
  if (!value) {
    value = readMetric(workspaceId, metric, filters, window, now);
    cache.set(key, value);
  }
  return value;
}
