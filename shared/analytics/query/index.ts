/** The query language, for the parts that keep or run queries (dashboards), and the routes' logic. */
export { AnalyticsQuery } from './schemas.ts';
export { runQueries, runQuery } from './run.ts';
export { analyticsSummary } from './summary.ts';
