import * as z from 'zod';
import { epochMs, lazySchema, optionalQueryInt } from '../../platform/http/schemas.ts';

/*
 * QA insights (docs/qa.md, "Overview", "Top questions", "Metrics"): figures read from a
 * cohort's results of one rubric version (the machine's scores), over a time range of the
 * calls' start.
 */

const MAX_MS = 8_640_000_000_000_000;

function isTimeZone(name: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

const range = () => ({
  start_timestamp: optionalQueryInt({ min: 0, max: MAX_MS }).describe('Calls that started at or after (epoch ms)'),
  end_timestamp: optionalQueryInt({ min: 0, max: MAX_MS }).describe('Calls that started at or before (epoch ms)'),
});

const rangeInOrder = (value: { start_timestamp?: number; end_timestamp?: number }, context: z.RefinementCtx) => {
  if (value.start_timestamp !== undefined && value.end_timestamp !== undefined && value.end_timestamp < value.start_timestamp) {
    context.addIssue({ code: 'custom', path: ['end_timestamp'], message: 'Must not be before start_timestamp' });
  }
};

const rubricVersion = () => optionalQueryInt({ min: 1, max: 1_000_000_000 }).describe("Default: the cohort's current version");

export const OverviewQuery = lazySchema(() =>
  z
    .object({
      ...range(),
      rubric_version: rubricVersion(),
      timezone: z.string().min(1).max(64).refine(isTimeZone, 'Must be an IANA time zone name, e.g. Europe/Paris').default('UTC').describe('The days of the trends (default UTC)'),
    })
    .superRefine(rangeInOrder),
);
export type OverviewInput = z.infer<typeof OverviewQuery>;

export const TopQuestionsQuery = lazySchema(() =>
  z
    .object({
      ...range(),
      rubric_version: rubricVersion(),
      limit: optionalQueryInt({ min: 1, max: 50 }).describe('Clusters answered (default 10)'),
    })
    .superRefine(rangeInOrder),
);
export type TopQuestionsInput = z.infer<typeof TopQuestionsQuery>;

export const MetricsQuery = lazySchema(() => z.object(range()).superRefine(rangeInOrder));
export type MetricsInput = z.infer<typeof MetricsQuery>;

const timeRange = () => z.object({ start_timestamp: epochMs(), end_timestamp: epochMs() });

/** The figures of a set of results (a cohort's overview, a metrics row). */
const figures = () => ({
  results_count: z.number().int().describe('Results read: scored and failed'),
  scored_count: z.number().int(),
  failed_count: z.number().int(),
  pass_rate: z.number().nullable().describe('Passed ÷ scored results with an overall score (0 to 1, four decimals); null when none'),
  average_score: z.number().nullable().describe('The mean overall score (two decimals); null when none'),
});

export const QaOverview = lazySchema(() =>
  z.object({
    cohort_id: z.string(),
    rubric_version: z.number().int(),
    time_range: timeRange().extend({ timezone: z.string() }),
    ...figures(),
    truncated: z.boolean().describe('True when the range held more results than an overview reads (the newest calls\' are counted)'),
    score_distribution: z
      .array(z.object({ min_score: z.number(), max_score: z.number(), count: z.number().int() }))
      .describe('Ten buckets of 10 points: [0, 10), [10, 20), … [90, 100] (the last includes 100)'),
    criteria: z.array(z.object({ name: z.string(), average_score: z.number().nullable(), assessed_count: z.number().int() })),
    trends: z.array(
      z.object({ date: z.string().describe('YYYY-MM-DD in the timezone'), count: z.number().int(), average_score: z.number().nullable(), pass_rate: z.number().nullable() }),
    ),
    worst_calls: z.array(z.object({ result_id: z.string(), call_id: z.string(), overall_score: z.number(), passed: z.boolean().nullable() })),
  }),
);
export type QaOverview = z.infer<typeof QaOverview>;

export const QaTopQuestions = lazySchema(() =>
  z.object({
    cohort_id: z.string(),
    rubric_version: z.number().int(),
    time_range: timeRange(),
    calls_read: z.number().int().describe('Scored calls whose transcript was read'),
    calls_without_transcript: z.number().int().describe('Scored calls that kept no transcript (data storage setting): not read'),
    questions_count: z.number().int(),
    truncated: z.boolean(),
    embedder: z.string(),
    clusters: z.array(
      z.object({
        label: z.string().describe('The question nearest the cluster\'s centre'),
        count: z.number().int(),
        examples: z.array(z.object({ quote: z.string(), call_id: z.string() })).max(3),
      }),
    ),
  }),
);
export type QaTopQuestions = z.infer<typeof QaTopQuestions>;

export const QaMetrics = lazySchema(() =>
  z.object({
    time_range: timeRange(),
    cohorts_count: z.number().int(),
    ...figures(),
    truncated: z.boolean(),
    cohorts: z.array(z.object({ cohort_id: z.string(), name: z.string(), rubric_version: z.number().int(), ...figures(), truncated: z.boolean() })),
  }),
);
export type QaMetrics = z.infer<typeof QaMetrics>;
