import { DDSketch } from '@datadog/sketches-js';
import { API_ERROR_PARTITION } from '../../platform/http/error-counts.ts';

/*
 * The rollup model: what a conversation adds to the rollups, and where. Every figure a
 * summary, query or alert answers comes from these cells, so their cost follows the number
 * of buckets and values, never the number of calls (docs/analytics.md, "Rollups").
 */

const ROLLUP_TABLES = ['calls', 'chats'] as const;
export type RollupTable = (typeof ROLLUP_TABLES)[number];

export const ROLLUP_LEVELS = ['minute', 'hour', 'day'] as const;
export type RollupLevel = (typeof ROLLUP_LEVELS)[number];

/** The dimensions a query may group or filter by, per table. */
export const DIMENSIONS = {
  calls: ['agent_id', 'agent_version', 'call_type', 'direction', 'call_status', 'disconnection_reason', 'user_sentiment', 'call_successful', 'batch_call_id', 'from_number'],
  chats: ['agent_id', 'agent_version', 'chat_type', 'chat_status', 'user_sentiment', 'chat_successful'],
} as const satisfies Record<RollupTable, readonly string[]>;
type CallDimension = (typeof DIMENSIONS.calls)[number];
type ChatDimension = (typeof DIMENSIONS.chats)[number];
export type Dimension = CallDimension | ChatDimension;

/**
 * The dimensions known only once the analysis lands: their views are written by the
 * `analyzed` phase with the conversation's whole figures, so grouping by them counts
 * analysed conversations only.
 */
export const ANALYSIS_DIMENSIONS: ReadonlySet<Dimension> = new Set(['user_sentiment', 'call_successful', 'chat_successful']);

/** The dimensions paired with `agent_id` in a view of their own (low cardinality ones). */
const AGENT_PAIRS = {
  calls: ['call_type', 'direction', 'call_status', 'disconnection_reason', 'user_sentiment', 'call_successful'],
  chats: ['chat_type', 'chat_status', 'user_sentiment', 'chat_successful'],
} as const satisfies { calls: readonly CallDimension[]; chats: readonly ChatDimension[] };

/**
 * A view: the dimensions its cells are keyed by. `[]` is the workspace's totals; one
 * dimension; or `agent_id` with one of AGENT_PAIRS. A query is answered from the one view
 * that holds its group-by and filter dimensions (shared/analytics/query).
 */
export type RollupView = readonly Dimension[];

/** The views of a table at a level. Minutes keep only what alerts watch. */
export function viewsOf(table: RollupTable, level: RollupLevel): RollupView[] {
  if (level === 'minute') return [[], ['agent_id']];
  const singles: RollupView[] = DIMENSIONS[table].map((dimension) => [dimension]);
  const pairs: RollupView[] = (AGENT_PAIRS[table] as readonly Dimension[]).map((dimension) => ['agent_id', dimension]);
  return [[], ...singles, ...pairs];
}

const viewName = (view: RollupView): string => (view.length === 0 ? 'all' : view.join('+'));

/** The cells' partition name of a view: `<table>#<level>#<view>`. */
export const cellPartition = (table: RollupTable, level: RollupLevel, view: RollupView): string => `${table}#${level}#${viewName(view)}`;

/**
 * The partition of a view's sketch items: a cell's DDSketch bins live apart from its counts,
 * sums and counters, so a read that answers no percentile, min or max never reads them (the
 * bins grow with the spread of the values, to the sketch's bound, and would make every
 * read's cost grow with the volume of calls: docs/analytics.md, "Sketch items").
 */
export const sketchPartition = (partition: string): string => `${partition}#sketch`;

/**
 * Minute cells of what alerts watch that no conversation carries: custom-function requests
 * (all, and by agent) and the API's error answers (written by the HTTP layer,
 * shared/platform/http/error-counts.ts). Counters only, each write one ADD.
 */
export const COUNTER_PARTITIONS = {
  functions: 'functions#minute#all',
  functionsByAgent: 'functions#minute#agent_id',
  api: API_ERROR_PARTITION,
} as const;

/** Every cell partition there is, the sketch items' included: what the workspace purge walks. */
export function allCellPartitions(): string[] {
  return [
    ...ROLLUP_TABLES.flatMap((table) =>
      ROLLUP_LEVELS.flatMap((level) => viewsOf(table, level).flatMap((view) => [cellPartition(table, level, view), sketchPartition(cellPartition(table, level, view))])),
    ),
    ...Object.values(COUNTER_PARTITIONS),
  ];
}

/** How long a level's cells are kept (TTL): minutes for alert windows, hours for hourly charts, days for good. */
export const LEVEL_RETENTION_MS: Record<RollupLevel, number | undefined> = {
  minute: 3 * 86_400_000,
  hour: 100 * 86_400_000,
  day: undefined,
};

export const LEVEL_MS: Record<RollupLevel, number> = { minute: 60_000, hour: 3_600_000, day: 86_400_000 };

/** A bucket's key: its UTC start, truncated to the level (`2026-12-02T19:05`, `2026-12-02T19`, `2026-12-02`), sorting by time. */
export function bucketKey(level: RollupLevel, timestampMs: number): string {
  const iso = new Date(timestampMs).toISOString();
  return level === 'minute' ? iso.slice(0, 16) : level === 'hour' ? iso.slice(0, 13) : iso.slice(0, 10);
}

/** A bucket key's UTC start in epoch ms. */
export function bucketStart(key: string): number {
  const iso = key.length === 10 ? `${key}T00:00` : key.length === 13 ? `${key}:00` : key;
  return Date.parse(`${iso}:00.000Z`);
}

/**
 * Hot cells are split over shards (the conversation's ID picks one), so concurrent
 * conversations ending in one workspace rarely write the same item in the same instant
 * (a transaction that meets another on an item is cancelled and retried). Readers query a
 * view's bucket range and merge whatever shards they find, so the count can change freely.
 */
const ROLLUP_SHARDS = 4;

export function shardOf(id: string): number {
  let hash = 0;
  for (let index = 0; index < id.length; index++) hash = (hash * 31 + id.charCodeAt(index)) >>> 0;
  return hash % ROLLUP_SHARDS;
}

/** The columns with sums, counts and sketches: what count/sum/avg/min/max/percentiles read. */
export const COLUMNS = ['duration_ms', 'cost', 'latency_ms'] as const;
export type Column = (typeof COLUMNS)[number];

/** Counted facts: a conversation adds 1 to each that holds for it. */
export const COUNTERS = [
  'successful',
  'unsuccessful',
  'analyzed',
  'sentiment_positive',
  'sentiment_negative',
  'sentiment_neutral',
  'sentiment_unknown',
  'transfer_failed',
  'voicemail',
  'error',
] as const;
export type Counter = (typeof COUNTERS)[number];

/**
 * The sketches' relative accuracy: a percentile is within 1 % of a value actually seen.
 * DDSketch (Datadog's, `@datadog/sketches-js`) maps a value to a bin index with a
 * logarithmic mapping; a cell keeps one counter per bin it has seen, which DynamoDB adds
 * to atomically, so cells merge by adding bins (docs/analytics.md, "Percentiles").
 */
const SKETCH_RELATIVE_ACCURACY = 0.01;
const sketchMapping = new DDSketch({ relativeAccuracy: SKETCH_RELATIVE_ACCURACY }).mapping;

/** A bin's attribute suffix: its index (`m` for a negative one), `z` for zero. */
export function binName(value: number): string {
  if (value <= 0) return 'z';
  const key = sketchMapping.key(value);
  return key < 0 ? `m${-key}` : String(key);
}

/** A conversation as the rollups see it: its dimensions and figures (no text). */
export interface ConversationFacts {
  table: RollupTable;
  workspace_id: string;
  /** The call or chat ID. */
  id: string;
  /** Buckets are by start (the conversation's start, as lists filter). */
  start_timestamp: number;
  /** Dimension values known at the end (missing ones are `none`). */
  dimensions: Partial<Record<Dimension, string | number | boolean | null | undefined>>;
  /** Figures: duration in ms, combined cost in cents, end-to-end latency p50 in ms. */
  figures: Partial<Record<Column, number | null | undefined>>;
  /** Facts counted at the end (transfer_failed, voicemail, error). */
  counters?: Partial<Record<Counter, number>>;
}

/** A cell's figures once read and merged over shards. */
export interface RollupTotals {
  count: number;
  /** Per column: how many conversations had it, its sum, and its sketch's bins. */
  columns: Record<Column, { count: number; sum: number; bins: Record<string, number> }>;
  counters: Record<Counter, number>;
}

export function emptyTotals(): RollupTotals {
  return {
    count: 0,
    columns: Object.fromEntries(COLUMNS.map((column) => [column, { count: 0, sum: 0, bins: {} }])) as RollupTotals['columns'],
    counters: Object.fromEntries(COUNTERS.map((counter) => [counter, 0])) as RollupTotals['counters'],
  };
}

/** Adds `from` into `into` (counts, sums and bins add: cells merge exactly). */
export function mergeTotals(into: RollupTotals, from: RollupTotals): RollupTotals {
  into.count += from.count;
  for (const column of COLUMNS) {
    const target = into.columns[column];
    const source = from.columns[column];
    target.count += source.count;
    target.sum += source.sum;
    for (const [bin, count] of Object.entries(source.bins)) target.bins[bin] = (target.bins[bin] ?? 0) + count;
  }
  for (const counter of COUNTERS) into.counters[counter] += from.counters[counter];
  return into;
}

/** A bin's index in the sketch's mapping (undefined for the zero bin). */
function binKey(bin: string): number | undefined {
  if (bin === 'z') return undefined;
  return bin.startsWith('m') ? -Number(bin.slice(1)) : Number(bin);
}

/** A column's bins as a DDSketch, whose percentiles are within the relative accuracy of a value seen. */
function sketchOf(totals: RollupTotals, column: Column): DDSketch {
  const sketch = new DDSketch({ relativeAccuracy: SKETCH_RELATIVE_ACCURACY });
  for (const [bin, count] of Object.entries(totals.columns[column].bins)) {
    if (count <= 0) continue;
    const key = binKey(bin);
    if (key === undefined) sketch.zeroCount += count;
    else sketch.store.add(key, count);
    sketch.count += count;
  }
  return sketch;
}

/** A column's value at quantile `q` (0 to 1); undefined when the column has no values. */
export function quantile(totals: RollupTotals, column: Column, q: number): number | undefined {
  const sketch = sketchOf(totals, column);
  return sketch.count === 0 ? undefined : sketch.getValueAtQuantile(q);
}

/**
 * A column's smallest or largest value: its lowest or highest bin's, within the sketch's
 * relative accuracy of the exact one (cells keep no exact extremes: an extreme cannot be
 * kept by DynamoDB's atomic ADD, and a read-modify-write would make every hot cell a
 * point of contention).
 */
export function extreme(totals: RollupTotals, column: Column, which: 'min' | 'max'): number | undefined {
  return quantile(totals, column, which === 'min' ? 0 : 1);
}
