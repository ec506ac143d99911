/** The query language, for the parts that keep or run queries (dashboards). */
export { AnalyticsQuery, type QueryStep } from './schemas.ts';
