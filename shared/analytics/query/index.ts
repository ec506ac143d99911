/** The query language, for the parts that keep or run queries (dashboards, alerts), and the routes' logic. */
export { AnalyticsQuery, type QueryStep } from './schemas.ts';
export { planQuery } from './planner.ts';
export { runQueries, runQuery } from './run.ts';
export { analyticsSummary } from './summary.ts';
