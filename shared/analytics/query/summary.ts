import { badRequest } from '../../platform/errors.ts';
import { emptyTotals, mergeTotals, quantile, readCells, type Dimension, type RollupTable, type RollupTotals } from '../rollups/index.ts';
import { MAX_SINGLE_RANGE_MS, planQuery } from './planner.ts';
import type { AnalyticsSummary, SummaryPeriod } from './schemas.ts';

/*
 * GET /analytics/summary: the workspace's totals over a range and over the period of equal
 * length just before it, read from the rollups' totals and disconnection-reason views
 * (docs/analytics.md, "Summary"). Each period is read as a query without a step would be:
 * widened to whole cells of the level its edges fall on.
 */

const DEFAULT_RANGE_MS = 7 * 86_400_000;
const round = (value: number, digits: number) => Math.round(value * 10 ** digits) / 10 ** digits;
const rate = (part: number, whole: number) => (whole === 0 ? null : round(part / whole, 4));

/** The level and cells one period reads, the same for every view (the disconnection reasons' view has no minute cells). */
function periodPlan(start: number, end: number, now: number) {
  return planQuery(
    { table: 'calls', time_range: { start_timestamp: start, end_timestamp: end }, group_by: ['disconnection_reason'], operations: [{ operation: 'count' }] },
    now,
    'summary',
  );
}

const merged = (cells: { totals: RollupTotals }[]) => cells.reduce((totals, cell) => mergeTotals(totals, cell.totals), emptyTotals());

async function period(workspaceId: string, start: number, end: number, now: number): Promise<SummaryPeriod> {
  const plan = periodPlan(start, end, now);
  const read = (table: RollupTable, view: Dimension[], sketches: boolean) =>
    readCells({ workspaceId, table, level: plan.level, view, start: plan.readStart, end: plan.readEnd, sketches });
  const [calls, reasons, chats] = await Promise.all([read('calls', [], true), read('calls', ['disconnection_reason'], false), read('chats', [], false)]);
  const call = merged(calls);
  const chat = merged(chats);
  const disconnection: Record<string, number> = {};
  for (const cell of reasons) disconnection[cell.values[0]!] = (disconnection[cell.values[0]!] ?? 0) + cell.totals.count;
  const latency = (q: number) => {
    const value = quantile(call, 'latency_ms', q);
    return value === undefined ? null : round(value, 1);
  };
  return {
    start_timestamp: plan.start,
    end_timestamp: plan.end,
    calls: {
      count: call.count,
      minutes: round(call.columns.duration_ms.sum / 60_000, 2),
      analyzed: call.counters.analyzed,
      successful: call.counters.successful,
      unsuccessful: call.counters.unsuccessful,
      success_rate: rate(call.counters.successful, call.counters.analyzed),
      sentiment: {
        positive: call.counters.sentiment_positive,
        negative: call.counters.sentiment_negative,
        neutral: call.counters.sentiment_neutral,
        unknown: call.counters.sentiment_unknown,
      },
      disconnection_reasons: Object.fromEntries(Object.entries(disconnection).filter(([, count]) => count > 0).sort(([, a], [, b]) => b - a)),
      combined_cost: round(call.columns.cost.sum, 2),
      latency_p50_ms: latency(0.5),
      latency_p90_ms: latency(0.9),
    },
    chats: {
      count: chat.count,
      analyzed: chat.counters.analyzed,
      successful: chat.counters.successful,
      success_rate: rate(chat.counters.successful, chat.counters.analyzed),
      combined_cost: round(chat.columns.cost.sum, 2),
    },
  };
}

/** The summary of [start, end) (default: the 7 days before `now`) and of the period before it. */
export async function analyticsSummary(workspaceId: string, range: { start_timestamp?: number; end_timestamp?: number }, now: number): Promise<AnalyticsSummary> {
  const end = range.end_timestamp ?? now;
  const start = range.start_timestamp ?? end - DEFAULT_RANGE_MS;
  if (end <= start) throw badRequest('end_timestamp: must be after start_timestamp');
  if (end - start > MAX_SINGLE_RANGE_MS) throw badRequest(`start_timestamp: a summary spans at most ${MAX_SINGLE_RANGE_MS / 86_400_000} days`);
  const current = await period(workspaceId, start, end, now);
  const length = current.end_timestamp - current.start_timestamp;
  const previous = await period(workspaceId, current.start_timestamp - length, current.start_timestamp, now);
  return { current, previous };
}
