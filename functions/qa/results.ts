import type { Handlers } from '../../shared/platform/http/route.ts';
import type { resultRoutes } from '../../shared/qa/results/routes.ts';
import * as qa from '../../shared/qa/index.ts';

export const resultHandlers: Handlers<typeof resultRoutes> = {
  listQaResults: ({ principal, params, query }) => qa.listResults(principal.workspaceId, params.cohort_id, query),
  getQaResult: ({ principal, params }) => qa.getResult(principal.workspaceId, params.result_id),
};
