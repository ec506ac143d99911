import * as z from 'zod';
import { epochMs, lazySchema, optionalQueryInt } from '../../platform/http/schemas.ts';
import { COLUMNS, COUNTERS, DIMENSIONS } from '../rollups/index.ts';

/*
 * The analytics query language (docs/analytics.md, "Queries"): close to Vapi's analytics
 * queries, in snake_case. A query names a table, a time range with its step and timezone,
 * the dimensions it groups by, equality filters, and the operations to answer per bucket
 * and group. Dashboards keep queries in this shape and check them with the same schema.
 */

const QUERY_STEPS = ['minute', 'hour', 'day', 'week', 'month'] as const;
export type QueryStep = (typeof QUERY_STEPS)[number];

const QUERY_OPERATIONS = ['count', 'sum', 'avg', 'min', 'max', 'p50', 'p90', 'p99'] as const;
export type QueryOperation = (typeof QUERY_OPERATIONS)[number];

/**
 * What an operation reads: a figure column (`duration_ms`, `cost` in cents, `latency_ms`),
 * or a counter (`successful`, `sentiment_negative`, …), whose `avg` is its rate among the
 * conversations. `count` without a column counts conversations.
 */
const QUERY_COLUMNS = [...COLUMNS, ...COUNTERS] as const;

const ALL_DIMENSIONS = [...new Set<string>([...DIMENSIONS.calls, ...DIMENSIONS.chats])] as [string, ...string[]];

const isTimezone = (name: string): boolean => {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
    return true;
  } catch {
    return false;
  }
};

const QueryTimeRange = lazySchema(() =>
  z
    .object({
      start_timestamp: epochMs(),
      end_timestamp: epochMs(),
      step: z.enum(QUERY_STEPS).optional(),
      timezone: z.string().max(64).refine(isTimezone, { message: 'Must be an IANA time zone name, such as America/New_York' }).optional(),
    })
    .strict()
    .refine((range) => range.end_timestamp > range.start_timestamp, { message: 'end_timestamp must be after start_timestamp', path: ['end_timestamp'] }),
);

const filterValue = lazySchema(() => z.union([z.string().max(200), z.boolean(), z.number(), z.array(z.union([z.string().max(200), z.boolean(), z.number()])).min(1).max(100)]));

const QueryOperationSpec = lazySchema(() =>
  z
    .object({
      operation: z.enum(QUERY_OPERATIONS),
      column: z.enum(QUERY_COLUMNS).optional(),
      alias: z.string().regex(/^[a-z][a-z0-9_]{0,63}$/, 'Must be 1 to 64 lower-case letters, digits and underscores, starting with a letter').optional(),
    })
    .strict(),
);

export const AnalyticsQuery = lazySchema(() =>
  z
    .object({
      /** A label answered with the query's result (dashboards name their widgets' queries). */
      name: z.string().min(1).max(100).optional(),
      table: z.enum(['calls', 'chats']),
      time_range: QueryTimeRange,
      /** Dimensions of the table; the planner checks them against the table and its views. */
      group_by: z.array(z.enum(ALL_DIMENSIONS)).max(2).optional(),
      /** Dimension → a value or a list of values (any of them); `none` matches a missing value. */
      filters: z.record(z.string().max(64), filterValue).optional(),
      operations: z.array(QueryOperationSpec).min(1).max(20),
    })
    .strict(),
);
export type AnalyticsQuery = z.infer<typeof AnalyticsQuery>;

/** POST /analytics/query: up to 10 queries answered together. */
export const AnalyticsQueryBody = lazySchema(() => z.object({ queries: z.array(AnalyticsQuery).min(1).max(10) }).strict());
export type AnalyticsQueryBody = z.infer<typeof AnalyticsQueryBody>;

/**
 * One query's answer: a row per bucket and group, in bucket order, each with the bucket's
 * start (epoch ms and the local date-time in the query's timezone), the group's dimension
 * values, and one field per operation (its alias, else `<operation>_<column>`, or
 * `count` for a count of conversations), null when the bucket has no value for it.
 */
export const AnalyticsQueryResult = lazySchema(() =>
  z.object({
    name: z.string().optional(),
    table: z.enum(['calls', 'chats']),
    time_range: z.object({ start_timestamp: z.number(), end_timestamp: z.number(), step: z.enum(QUERY_STEPS).optional(), timezone: z.string() }),
    result: z.array(z.record(z.string(), z.union([z.string(), z.number(), z.null()]))),
  }),
);
export type AnalyticsQueryResult = z.infer<typeof AnalyticsQueryResult>;
export const AnalyticsQueryResponse = lazySchema(() => z.object({ results: z.array(AnalyticsQueryResult) }));

/** GET /analytics/summary: the range (default the last 7 days before now). */
export const SummaryQuery = lazySchema(() =>
  z
    .object({ start_timestamp: optionalQueryInt({ min: 0, max: 8_640_000_000_000 }), end_timestamp: optionalQueryInt({ min: 1, max: 8_640_000_000_000 }) })
    .strict(),
);

const nullableNumber = lazySchema(() => z.number().nullable());

const SummaryPeriod = lazySchema(() =>
  z.object({
    /** The range read: the one asked, widened to whole cells (docs/analytics.md, "Summary"). */
    start_timestamp: z.number(),
    end_timestamp: z.number(),
    calls: z.object({
      count: z.number(),
      /** Duration summed, in minutes (2 decimals). */
      minutes: z.number(),
      /** Calls whose analysis landed; success and sentiment are among these. */
      analyzed: z.number(),
      successful: z.number(),
      unsuccessful: z.number(),
      /** successful ÷ analyzed (4 decimals), null without analysed calls. */
      success_rate: nullableNumber,
      sentiment: z.object({ positive: z.number(), negative: z.number(), neutral: z.number(), unknown: z.number() }),
      /** disconnection_reason → calls (`none` for calls without one). */
      disconnection_reasons: z.record(z.string(), z.number()),
      /** Combined cost in cents, as call_cost.combined_cost (2 decimals). */
      combined_cost: z.number(),
      /** End-to-end latency (each call's p50), in ms: the calls' median and 90th percentile, within 1 %. */
      latency_p50_ms: nullableNumber,
      latency_p90_ms: nullableNumber,
    }),
    chats: z.object({
      count: z.number(),
      analyzed: z.number(),
      successful: z.number(),
      success_rate: nullableNumber,
      /** Combined cost in cents, as chat_cost.combined_cost. */
      combined_cost: z.number(),
    }),
  }),
);
export type SummaryPeriod = z.infer<typeof SummaryPeriod>;

/** The period asked and the one of equal length just before it. */
export const AnalyticsSummary = lazySchema(() => z.object({ current: SummaryPeriod, previous: SummaryPeriod }));
export type AnalyticsSummary = z.infer<typeof AnalyticsSummary>;
