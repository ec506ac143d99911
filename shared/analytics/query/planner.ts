import { badRequest } from '../../platform/errors.ts';
import {
  COLUMNS,
  DIMENSIONS,
  LEVEL_MS,
  LEVEL_RETENTION_MS,
  viewsOf,
  type Column,
  type Counter,
  type Dimension,
  type RollupLevel,
  type RollupTable,
  type RollupView,
} from '../rollups/index.ts';
import { bucketFloor, nextBucket, utcThroughout } from './calendar.ts';
import type { AnalyticsQuery, QueryOperation, QueryStep } from './schemas.ts';

/*
 * The query planner: from a query to what to read and how to answer it. It picks the cell
 * level from the step and the time zone, the one view holding the query's dimensions, the
 * buckets (aligned to the step in the zone, the range widened to whole buckets), and checks
 * every operation against its column; every refusal is a 400 naming the field
 * (docs/analytics.md, "Queries").
 */

/** Buckets a step may answer (its longest range): a day of minutes, 31 days of hours, 400 days, 3 years of weeks, 5 years of months. */
const MAX_BUCKETS: Record<QueryStep, number> = { minute: 1440, hour: 744, day: 400, week: 157, month: 60 };
/** The longest range without a step (one bucket). */
export const MAX_SINGLE_RANGE_MS = 400 * 86_400_000;
/** Rows one query may answer: buckets × groups. */
export const MAX_ROWS = 10_000;

const FIGURE_COLUMNS: ReadonlySet<string> = new Set(COLUMNS);
const SKETCH_OPERATIONS: ReadonlySet<QueryOperation> = new Set(['min', 'max', 'p50', 'p90', 'p99']);
const RESERVED_FIELDS = new Set(['date', 'bucket_start_timestamp']);

/** One operation as it will be answered. */
export interface PlannedOperation {
  operation: QueryOperation;
  /** A figure column, a counter, or none (count of conversations). */
  column?: { kind: 'figure'; name: Column } | { kind: 'counter'; name: Counter };
  alias: string;
}

export interface QueryPlan {
  table: RollupTable;
  timezone: string;
  step?: QueryStep;
  level: RollupLevel;
  view: RollupView;
  /** The range answered: the asked one widened to whole buckets of the step (and cells of the level). */
  start: number;
  end: number;
  /** Bucket starts, ascending; each bucket ends where the next starts (the last at `end`). */
  buckets: number[];
  /** The cells read, [readStart, readEnd), and each bucket's first cell: its start floored to the level's cells. */
  readStart: number;
  readEnd: number;
  bounds: number[];
  groupBy: Dimension[];
  /** Per dimension of the view it filters, the values kept. */
  filters: Map<Dimension, Set<string>>;
  operations: PlannedOperation[];
}

const days = (ms: number) => Math.round(ms / 86_400_000);
const floorTo = (at: number, size: number) => Math.floor(at / size) * size;
const ceilTo = (at: number, size: number) => Math.ceil(at / size) * size;

function checkRetention(level: RollupLevel, start: number, now: number, at: string, why: string): void {
  const retention = LEVEL_RETENTION_MS[level];
  if (retention === undefined) return;
  const earliest = floorTo(now - retention, LEVEL_MS[level]) + LEVEL_MS[level];
  if (start < earliest) {
    throw badRequest(
      `${at}.time_range.start_timestamp: ${why} ${level} cells, kept ${days(retention)} days: start at ${new Date(earliest).toISOString()} or later`,
    );
  }
}

/** The dimensions the query groups and filters by, checked against the table and its views. */
function planView(query: AnalyticsQuery, level: RollupLevel, at: string): { view: RollupView; groupBy: Dimension[]; filters: Map<Dimension, Set<string>> } {
  const own: readonly string[] = DIMENSIONS[query.table];
  const notOfTable = (dimension: string) => `${dimension} is not a dimension of ${query.table}; its dimensions: ${own.join(', ')}`;
  const groupBy = (query.group_by ?? []) as Dimension[];
  groupBy.forEach((dimension, index) => {
    if (!own.includes(dimension)) throw badRequest(`${at}.group_by.${index}: ${notOfTable(dimension)}`);
    if (groupBy.indexOf(dimension) !== index) throw badRequest(`${at}.group_by.${index}: ${dimension} is grouped by twice`);
  });
  const filters = new Map<Dimension, Set<string>>();
  for (const [dimension, value] of Object.entries(query.filters ?? {})) {
    if (!own.includes(dimension)) throw badRequest(`${at}.filters.${dimension}: ${notOfTable(dimension)}`);
    filters.set(dimension as Dimension, new Set((Array.isArray(value) ? value : [value]).map(String)));
  }
  const wanted = [...new Set<Dimension>([...groupBy, ...filters.keys()])];
  const view = viewsOf(query.table, level).find((candidate) => candidate.length === wanted.length && wanted.every((dimension) => candidate.includes(dimension)));
  if (view) return { view, groupBy, filters };
  const field = groupBy.length ? `${at}.group_by` : `${at}.filters`;
  if (level === 'minute') {
    throw badRequest(`${field}: minute cells hold only the totals and agent_id: group or filter by agent_id alone, or use step hour`);
  }
  const pairs = viewsOf(query.table, level).filter((candidate) => candidate.length === 2).map((candidate) => candidate[1]);
  throw badRequest(
    `${field}: no view holds ${wanted.join(' with ')}: group and filter by at most one dimension, or by agent_id with one of ${pairs.join(', ')}`,
  );
}

function planOperations(query: AnalyticsQuery, groupBy: readonly Dimension[], at: string): PlannedOperation[] {
  const seen = new Set<string>([...RESERVED_FIELDS, ...groupBy]);
  return query.operations.map((spec, index) => {
    const field = `${at}.operations.${index}`;
    const column = spec.column === undefined ? undefined : FIGURE_COLUMNS.has(spec.column)
      ? { kind: 'figure' as const, name: spec.column as Column }
      : { kind: 'counter' as const, name: spec.column as Counter };
    if (!column && spec.operation !== 'count') {
      throw badRequest(`${field}.column: ${spec.operation} needs a column (${COLUMNS.join(', ')}${spec.operation === 'sum' || spec.operation === 'avg' ? ', or a counter' : ''})`);
    }
    if (column?.kind === 'counter' && SKETCH_OPERATIONS.has(spec.operation)) {
      throw badRequest(`${field}.column: ${spec.operation} takes a figure column (${COLUMNS.join(', ')}); ${column.name} is a counter (count, sum or avg it)`);
    }
    const alias = spec.alias ?? (column ? `${spec.operation}_${column.name}` : 'count');
    if (seen.has(alias)) {
      throw badRequest(`${field}.${spec.alias ? 'alias' : 'operation'}: the result field ${alias} is already taken${spec.alias ? '' : ': give this operation an alias'}`);
    }
    seen.add(alias);
    return { operation: spec.operation, column, alias };
  });
}

/** The level a stepless query reads: the coarsest whose cells the range's edges fall on, else the finest kept that the view allows. */
function singleBucketLevel(query: AnalyticsQuery, now: number, minuteViewOk: boolean): RollupLevel {
  const { start_timestamp: start, end_timestamp: end } = query.time_range;
  const aligned = (level: RollupLevel) => start % LEVEL_MS[level] === 0 && end % LEVEL_MS[level] === 0;
  const kept = (level: RollupLevel) => {
    const retention = LEVEL_RETENTION_MS[level];
    return retention === undefined || floorTo(start, LEVEL_MS[level]) > now - retention;
  };
  if (aligned('day')) return 'day';
  if (aligned('hour') && kept('hour')) return 'hour';
  if (minuteViewOk && kept('minute') && end - start <= 86_400_000) return 'minute';
  return kept('hour') ? 'hour' : 'day';
}

/**
 * Plans one query. `at` names it in errors (`queries.0`); `now` is the clock retention is
 * checked against.
 */
export function planQuery(query: AnalyticsQuery, now: number, at: string): QueryPlan {
  const timezone = query.time_range.timezone ?? 'UTC';
  const step = query.time_range.step;
  const { start_timestamp: askedStart, end_timestamp: askedEnd } = query.time_range;
  const wantsMinuteView = (query.group_by ?? []).concat(Object.keys(query.filters ?? {})).every((dimension) => dimension === 'agent_id');

  if (!step) {
    if (askedEnd - askedStart > MAX_SINGLE_RANGE_MS) {
      throw badRequest(`${at}.time_range: a range without a step spans at most ${days(MAX_SINGLE_RANGE_MS)} days: shorten it or give a step`);
    }
    const level = singleBucketLevel(query, now, wantsMinuteView);
    const start = floorTo(askedStart, LEVEL_MS[level]);
    const end = ceilTo(askedEnd, LEVEL_MS[level]);
    checkRetention(level, start, now, at, 'this range is read from');
    const { view, groupBy, filters } = planView(query, level, at);
    return {
      table: query.table, timezone, level, view, start, end, buckets: [start], readStart: start, readEnd: end, bounds: [start],
      groupBy, filters, operations: planOperations(query, groupBy, at),
    };
  }

  const start = bucketFloor(askedStart, step, timezone);
  const buckets: number[] = [];
  let cursor = start;
  while (cursor < askedEnd) {
    if (buckets.length === MAX_BUCKETS[step]) {
      throw badRequest(`${at}.time_range: a step of ${step} answers at most ${MAX_BUCKETS[step]} buckets: shorten the range or use a larger step`);
    }
    buckets.push(cursor);
    cursor = nextBucket(cursor, step, timezone);
  }
  const end = cursor;
  let level: RollupLevel;
  if (step === 'minute' || step === 'hour') level = step;
  else level = utcThroughout(start, end, timezone) ? 'day' : 'hour';
  const why = level === step ? `a step of ${step} reads` : `${step} buckets in ${timezone} are composed of`;
  // In a zone whose offset is not a whole hour, a local day starts inside an hour cell: the cell counts where it starts.
  const bounds = buckets.map((bucket) => floorTo(bucket, LEVEL_MS[level]));
  checkRetention(level, bounds[0]!, now, at, why);
  const { view, groupBy, filters } = planView(query, level, at);
  return {
    table: query.table, timezone, step, level, view, start, end, buckets,
    readStart: bounds[0]!, readEnd: floorTo(end, LEVEL_MS[level]), bounds,
    groupBy, filters, operations: planOperations(query, groupBy, at),
  };
}
