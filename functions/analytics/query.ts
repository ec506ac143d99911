import type { Handlers } from '../../shared/platform/http/route.ts';
import type { queryRoutes } from '../../shared/analytics/query/routes.ts';
import { analyticsSummary, runQueries } from '../../shared/analytics/query/index.ts';

export const queryHandlers: Handlers<typeof queryRoutes> = {
  getAnalyticsSummary: ({ principal, query }) => analyticsSummary(principal.workspaceId, query, Date.now()),
  queryAnalytics: ({ principal, body }) => runQueries(principal.workspaceId, body, Date.now()),
};
