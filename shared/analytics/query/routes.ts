import { defineRoutes } from '../../platform/http/route.ts';
import { AnalyticsQueryBody, AnalyticsQueryResponse, AnalyticsSummary, SummaryQuery } from './schemas.ts';

/** The analytics function's query routes (scope `analytics`): reads, so a member may call both. */
export const queryRoutes = defineRoutes({ domain: 'analytics', access: 'analytics' }, {
  getAnalyticsSummary: {
    method: 'GET', path: '/analytics/summary', status: 200,
    summary: "The workspace's call and chat totals over a range (default the last 7 days), beside the period of equal length before it",
    query: SummaryQuery, response: AnalyticsSummary,
  },
  queryAnalytics: {
    method: 'POST', path: '/analytics/query', status: 200, role: 'member',
    summary: 'Answer up to 10 analytics queries from the rollups: rows per time bucket and group, one field per operation',
    body: AnalyticsQueryBody, response: AnalyticsQueryResponse,
  },
});
