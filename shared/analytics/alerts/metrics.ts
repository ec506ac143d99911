import { getConcurrency } from '../../calls/records/index.ts';
import { answerPlan, planNeedsSketches, planQuery, type AnalyticsQuery } from '../query/index.ts';
import { COUNTER_PARTITIONS, readCells, readCounterCells, sumCounters, type CounterCells, type RollupCell } from '../rollups/index.ts';

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

/**
 * How one metric's value over one window is read: from which source (`key`: a workspace's
 * cells of one view and level, with or without their sketch items; a counter partition; the
 * concurrency counter), over which range, and how the value comes from what was read.
 * `answer` is given what `fetch` read over this range or any wider one.
 */
interface MetricRead<T = unknown> {
  key: string;
  start: number;
  end: number;
  fetch: (start: number, end: number) => Promise<T>;
  answer: (read: T) => number | null;
}

function metricRead(workspaceId: string, metric: AlertMetricName, filters: MetricFilters, window: Window, now: number): MetricRead {
  const calls = CALL_METRICS[metric];
  if (calls) {
    const query: AnalyticsQuery = {
      table: 'calls',
      time_range: { start_timestamp: window.start, end_timestamp: window.end },
      ...(filters.agent_id ? { filters: { agent_id: filters.agent_id } } : {}),
      operations: calls.operations,
    };
    const plan = planQuery(query, now, 'query');
    const sketches = planNeedsSketches(plan);
    const read: MetricRead<RollupCell[]> = {
      key: `cells|${workspaceId}|${plan.table}|${plan.level}|${plan.view.join(',')}|${sketches}`,
      start: plan.readStart,
      end: plan.readEnd,
      fetch: (start, end) => readCells({ workspaceId, table: plan.table, level: plan.level, view: plan.view, start, end, sketches }),
      answer: (cells) => calls.value(answerPlan(plan, cells.filter((cell) => cell.bucketStart >= plan.readStart && cell.bucketStart < plan.readEnd), 'query')[0] ?? {}),
    };
    return read as MetricRead;
  }
  const counters = (partition: string, value: (sums: Record<string, number>) => number | null, agent?: string): MetricRead => {
    const read: MetricRead<CounterCells> = {
      key: `counters|${workspaceId}|${partition}`,
      start: window.start,
      end: window.end,
      fetch: (start, end) => readCounterCells({ workspaceId, partition, start, end }),
      answer: (cells) => value(sumCounters(cells, { start: window.start, end: window.end, ...(agent ? { value: [agent] } : {}) })),
    };
    return read as MetricRead;
  };
  switch (metric) {
    case 'concurrency_used': {
      const read: MetricRead<number> = {
        key: `concurrency|${workspaceId}`,
        start: window.start,
        end: window.end,
        fetch: async () => (await getConcurrency(workspaceId)).current_concurrency,
        answer: (current) => current,
      };
      return read as MetricRead;
    }
    case 'custom_function_latency':
    case 'custom_function_failures':
      return counters(
        filters.agent_id ? COUNTER_PARTITIONS.functionsByAgent : COUNTER_PARTITIONS.functions,
        metric === 'custom_function_failures' ? (sums) => sums.x_failed ?? 0 : (sums) => (sums.c_latency_ms ? round(sums.s_latency_ms! / sums.c_latency_ms) : null),
        filters.agent_id,
      );
    case 'api_errors':
    case 'api_client_errors':
      return counters(COUNTER_PARTITIONS.api, (sums) => (metric === 'api_errors' ? sums.x_5xx : sums.x_4xx) ?? 0);
    default:
      throw new Error(`No reader for alert metric ${metric}`);
  }
}

/**
 * A metric's value over a window (null when there is nothing to answer from: a rate without
 * analysed calls, a latency without requests).
 */
export async function metricValue(workspaceId: string, metric: AlertMetricName, filters: MetricFilters, window: Window, now: number): Promise<number | null> {
  const read = metricRead(workspaceId, metric, filters, window, now);
  return read.answer(await read.fetch(read.start, read.end));
}

export interface MetricRequest {
  workspaceId: string;
  metric: AlertMetricName;
  filters: MetricFilters;
  window: Window;
}

/**
 * Many metric values at once, as a pass of the alert tick needs them: each source (a
 * workspace's cells of one view and level, a counter partition, the concurrency counter) is
 * read once, over the span of every window that needs it, at most `concurrency` reads at a
 * time, and each value is answered from that read. The windows of a pass all end at the same
 * minute (or where the current one starts, for a previous window), so the span is the longest
 * window: never more items than the rules' own reads, and usually one read where there were
 * dozens. A failed read fails the values that needed it (each promise on its own).
 */
export function metricValues(requests: readonly MetricRequest[], now: number, concurrency: number): Promise<number | null>[] {
  const reads = requests.map((request): MetricRead | Error => {
    try {
      return metricRead(request.workspaceId, request.metric, request.filters, request.window, now);
    } catch (error) {
      return error instanceof Error ? error : new Error(String(error));
    }
  });
  const spans = new Map<string, { fetch: MetricRead['fetch']; start: number; end: number }>();
  for (const read of reads) {
    if (read instanceof Error) continue;
    const span = spans.get(read.key);
    if (!span) spans.set(read.key, { fetch: read.fetch, start: read.start, end: read.end });
    else {
      span.start = Math.min(span.start, read.start);
      span.end = Math.max(span.end, read.end);
    }
  }
  const fetched = new Map<string, Promise<unknown>>();
  const waiting: (() => void)[] = [];
  let running = 0;
  for (const [key, span] of spans) {
    fetched.set(key, (async () => {
      // At most `concurrency` reads at once; the rest wait their turn, in order.
      if (running >= concurrency) await new Promise<void>((resolve) => waiting.push(resolve));
      running++;
      try {
        return await span.fetch(span.start, span.end);
      } finally {
        running--;
        waiting.shift()?.();
      }
    })());
  }
  const values = reads.map(async (read) => {
    if (read instanceof Error) throw read;
    return read.answer(await fetched.get(read.key)!);
  });
  // Each value is awaited by its rule's evaluation, perhaps later: a failure is not unhandled meanwhile.
  for (const value of values) value.catch(() => undefined);
  return values;
}
