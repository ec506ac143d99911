import { getCohortItem, pageCohortItems } from '../cohorts/store.ts';
import { recentResults, type InsightResult } from '../results/store.ts';
import { callIdBounds, criteriaOf, distributionOf, figuresOf, inRange, trendsOf, worstOf } from './figures.ts';
import type { MetricsInput, OverviewInput, QaMetrics, QaOverview } from './schemas.ts';

/*
 * A cohort's overview and the workspace's metrics (docs/qa.md, "Overview", "Metrics"),
 * computed exactly from the results they read, never from the whole history: an overview
 * reads the newest OVERVIEW_CAP results of its range, a metrics row METRICS_COHORT_CAP
 * (each answer says when it was truncated). A version's results are bounded in practice
 * (a cohort's sample, its max_per_day), so the caps are a guard, not the usual case.
 */

const OVERVIEW_CAP = 5_000;
const METRICS_COHORT_CAP = 1_000;
const WORST_CALLS = 5;
const METRICS_DEFAULT_DAYS = 30;
const DAY_MS = 24 * 60 * 60 * 1000;

async function resultsInRange(workspaceId: string, cohortId: string, version: number, start: number, end: number, cap: number) {
  const read = await recentResults(workspaceId, cohortId, version, { ...callIdBounds(start, end), cap });
  return { items: read.items.filter((result) => inRange(result, start, end)), truncated: read.truncated };
}

/** The criteria names: the rubric's for its current version, else those the results hold, in their order. */
function criterionNames(results: readonly InsightResult[]): string[] {
  const names = new Set<string>();
  for (const result of results) for (const criterion of result.machine?.criteria ?? []) names.add(criterion.name);
  return [...names];
}

export async function cohortOverview(workspaceId: string, cohortId: string, query: OverviewInput, nowMs = Date.now()): Promise<QaOverview> {
  const cohort = await getCohortItem(workspaceId, cohortId);
  const version = query.rubric_version ?? cohort.rubric.version;
  const start = query.start_timestamp ?? 0;
  const end = query.end_timestamp ?? nowMs;
  const { items, truncated } = await resultsInRange(workspaceId, cohortId, version, start, end, OVERVIEW_CAP);
  const names = version === cohort.rubric.version ? cohort.rubric.criteria.map((criterion) => criterion.name) : criterionNames(items);
  return {
    cohort_id: cohortId,
    rubric_version: version,
    time_range: { start_timestamp: start, end_timestamp: end, timezone: query.timezone },
    ...figuresOf(items),
    truncated,
    score_distribution: distributionOf(items),
    criteria: criteriaOf(items, names),
    trends: trendsOf(items, query.timezone),
    worst_calls: worstOf(items, WORST_CALLS),
  };
}

/** Every cohort of the workspace (at most MAX_COHORTS), newest first. */
async function allCohorts(workspaceId: string) {
  const cohorts = [];
  let after: string | undefined;
  for (;;) {
    const page = await pageCohortItems(workspaceId, { limit: 100, ...(after ? { after } : {}) });
    cohorts.push(...page.items);
    if (!page.hasMore || page.items.length === 0) return cohorts;
    after = page.items.at(-1)!.cohort_id;
  }
}

export async function workspaceMetrics(workspaceId: string, query: MetricsInput, nowMs = Date.now()): Promise<QaMetrics> {
  const end = query.end_timestamp ?? nowMs;
  const start = query.start_timestamp ?? end - METRICS_DEFAULT_DAYS * DAY_MS;
  const cohorts = await allCohorts(workspaceId);
  const all: InsightResult[] = [];
  let truncated = false;
  const rows = [];
  for (const cohort of cohorts) {
    const read = await resultsInRange(workspaceId, cohort.cohort_id, cohort.rubric.version, start, end, METRICS_COHORT_CAP);
    all.push(...read.items);
    truncated ||= read.truncated;
    rows.push({ cohort_id: cohort.cohort_id, name: cohort.name, rubric_version: cohort.rubric.version, ...figuresOf(read.items), truncated: read.truncated });
  }
  return { time_range: { start_timestamp: start, end_timestamp: end }, cohorts_count: cohorts.length, ...figuresOf(all), truncated, cohorts: rows };
}
