import { badRequest } from '../../platform/errors.ts';
import { emptyTotals, extreme, mergeTotals, quantile, readCells, type RollupCell, type RollupTotals } from '../rollups/index.ts';
import { localIso } from './calendar.ts';
import { MAX_ROWS, planQuery, type PlannedOperation, type QueryPlan } from './planner.ts';
import type { AnalyticsQuery, AnalyticsQueryBody, AnalyticsQueryResult } from './schemas.ts';

/*
 * Running a planned query: one read of the view's cells over the range (shards merged by
 * readCells), each cell added to its bucket and group, then each operation answered per
 * bucket and group. Rows are dense: every bucket with every group seen in the range.
 */

const QUANTILES = { p50: 0.5, p90: 0.9, p99: 0.99 } as const;
const round = (value: number) => Math.round(value * 1e6) / 1e6;

/** One operation's value over merged totals; null where there is nothing to answer from. */
function answer(totals: RollupTotals, planned: PlannedOperation): number | null {
  const { operation, column } = planned;
  if (!column) return totals.count;
  if (column.kind === 'counter') {
    const counted = totals.counters[column.name];
    if (operation === 'avg') return totals.count === 0 ? null : round(counted / totals.count);
    return counted;
  }
  const figures = totals.columns[column.name];
  switch (operation) {
    case 'count':
      return figures.count;
    case 'sum':
      return round(figures.sum);
    case 'avg':
      return figures.count === 0 ? null : round(figures.sum / figures.count);
    case 'min':
    case 'max':
      return extreme(totals, column.name, operation) ?? null;
    default:
      return quantile(totals, column.name, QUANTILES[operation]) ?? null;
  }
}

/** The bucket a cell starting at `at` falls in (the last bound at or before it). */
function bucketIndex(bounds: readonly number[], at: number): number {
  let low = 0;
  let high = bounds.length - 1;
  while (low < high) {
    const middle = (low + high + 1) >> 1;
    if (bounds[middle]! <= at) low = middle;
    else high = middle - 1;
  }
  return low;
}

/** Whether a plan reads the sketch items: only percentiles, min and max do (the figure columns' DDSketch bins). */
export const planNeedsSketches = (plan: QueryPlan): boolean =>
  plan.operations.some(({ operation, column }) => column?.kind === 'figure' && operation !== 'count' && operation !== 'sum' && operation !== 'avg');

async function runPlan(workspaceId: string, plan: QueryPlan, at: string): Promise<AnalyticsQueryResult['result']> {
  const cells = await readCells({ workspaceId, table: plan.table, level: plan.level, view: plan.view, start: plan.readStart, end: plan.readEnd, sketches: planNeedsSketches(plan) });
  return answerPlan(plan, cells, at);
}

/**
 * A plan's rows from its cells: those readCells answers for the plan's view, level and
 * [readStart, readEnd), in its order (a read of a wider range, filtered to this one, answers
 * the same; the alert tick shares one read among rules this way). The cells are not changed.
 */
export function answerPlan(plan: QueryPlan, cells: readonly RollupCell[], at: string): AnalyticsQueryResult['result'] {
  const groupPositions = plan.groupBy.map((dimension) => plan.view.indexOf(dimension));
  const filterPositions = [...plan.filters].map(([dimension, values]) => ({ position: plan.view.indexOf(dimension), values }));
  const groups = new Map<string, string[]>();
  const merged = new Map<string, RollupTotals>();
  for (const cell of cells) {
    if (!filterPositions.every(({ position, values }) => values.has(cell.values[position]!))) continue;
    const group = groupPositions.map((position) => cell.values[position]!);
    const groupKey = JSON.stringify(group);
    groups.set(groupKey, group);
    const key = `${bucketIndex(plan.bounds, cell.bucketStart)}#${groupKey}`;
    const totals = merged.get(key);
    if (totals) mergeTotals(totals, cell.totals);
    else merged.set(key, mergeTotals(emptyTotals(), cell.totals));
  }
  const groupList = plan.groupBy.length === 0 ? [[] as string[]] : [...groups.values()].sort((a, b) => a.join('\u0000').localeCompare(b.join('\u0000')));
  if (plan.buckets.length * groupList.length > MAX_ROWS) {
    throw badRequest(
      `${at}.group_by: the answer would hold ${plan.buckets.length * groupList.length} rows (${plan.buckets.length} buckets × ${groupList.length} groups), more than ${MAX_ROWS}: filter, shorten the range or use a larger step`,
    );
  }
  const empty = emptyTotals();
  return plan.buckets.flatMap((bucket, index) =>
    groupList.map((group) => {
      const totals = merged.get(`${index}#${JSON.stringify(group)}`) ?? empty;
      const row: Record<string, string | number | null> = { date: localIso(bucket, plan.timezone), bucket_start_timestamp: bucket };
      plan.groupBy.forEach((dimension, position) => (row[dimension] = group[position]!));
      for (const operation of plan.operations) row[operation.alias] = answer(totals, operation);
      return row;
    }),
  );
}

/** Answers one query. */
async function runQuery(workspaceId: string, query: AnalyticsQuery, now: number, at = 'query'): Promise<AnalyticsQueryResult> {
  const plan = planQuery(query, now, at);
  const result = await runPlan(workspaceId, plan, at);
  return {
    ...(query.name === undefined ? {} : { name: query.name }),
    table: query.table,
    time_range: { start_timestamp: plan.start, end_timestamp: plan.end, ...(plan.step ? { step: plan.step } : {}), timezone: plan.timezone },
    result,
  };
}

/** POST /analytics/query: every query planned first (a 400 answers none), then run together. */
export async function runQueries(workspaceId: string, body: AnalyticsQueryBody, now: number): Promise<{ results: AnalyticsQueryResult[] }> {
  body.queries.forEach((query, index) => planQuery(query, now, `queries.${index}`));
  return { results: await Promise.all(body.queries.map((query, index) => runQuery(workspaceId, query, now, `queries.${index}`))) };
}
