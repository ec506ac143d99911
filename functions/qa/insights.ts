import type { Handlers } from '../../shared/platform/http/route.ts';
import type { insightRoutes } from '../../shared/qa/insights/routes.ts';
import * as qa from '../../shared/qa/index.ts';

export const insightHandlers: Handlers<typeof insightRoutes> = {
  getQaCohortOverview: ({ principal, params, query }) => qa.cohortOverview(principal.workspaceId, params.cohort_id, query),
  getQaCohortTopQuestions: ({ principal, params, query }) => qa.topQuestions(principal.workspaceId, params.cohort_id, query),
  getQaMetrics: ({ principal, query }) => qa.workspaceMetrics(principal.workspaceId, query),
};
