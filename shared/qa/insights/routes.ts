import { defineRoutes } from '../../platform/http/route.ts';
import { cohortIdParams } from '../cohorts/schemas.ts';
import { MetricsQuery, OverviewQuery, QaMetrics, QaOverview, QaTopQuestions, TopQuestionsQuery } from './schemas.ts';

/** QA insights (scope `analytics`; members read), served by the qa function. */
export const insightRoutes = defineRoutes({ domain: 'qa', access: 'analytics' }, {
  getQaCohortOverview: {
    method: 'GET', path: '/qa/cohorts/{cohort_id}/overview', status: 200,
    summary: "A QA cohort's figures under one rubric version: score distribution, pass rate, per-criterion averages, trends by day and the worst calls",
    params: cohortIdParams, query: OverviewQuery, response: QaOverview,
  },
  getQaCohortTopQuestions: {
    method: 'GET', path: '/qa/cohorts/{cohort_id}/top-questions', status: 200,
    summary: "What the callers of a QA cohort's scored calls ask most: their questions clustered by meaning, with counts and example quotes",
    params: cohortIdParams, query: TopQuestionsQuery, response: QaTopQuestions,
  },
  getQaMetrics: {
    method: 'GET', path: '/qa/metrics', status: 200,
    summary: "The workspace's QA figures over a time range (default the last 30 days): results scored, pass rate, average score, and a row per cohort",
    query: MetricsQuery, response: QaMetrics,
  },
});
