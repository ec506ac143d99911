/** The query language and its planner, for the parts that keep or run queries (dashboards check theirs on save), and the routes' logic. */
export { AnalyticsQuery } from './schemas.ts';
export { planQuery } from './planner.ts';
export { answerPlan, planNeedsSketches, runQueries } from './run.ts';
export { analyticsSummary } from './summary.ts';
