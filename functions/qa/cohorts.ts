import type { Handlers } from '../../shared/platform/http/route.ts';
import type { cohortRoutes } from '../../shared/qa/cohorts/routes.ts';
import * as qa from '../../shared/qa/index.ts';

export const cohortHandlers: Handlers<typeof cohortRoutes> = {
  createQaCohort: ({ principal, body }) => qa.createCohort(principal.workspaceId, body),
  listQaCohorts: ({ principal, query }) => qa.listCohorts(principal.workspaceId, query),
  getQaCohort: ({ principal, params }) => qa.getCohort(principal.workspaceId, params.cohort_id),
  updateQaCohort: ({ principal, params, body }) => qa.updateCohort(principal.workspaceId, params.cohort_id, body),
  deleteQaCohort: ({ principal, params }) => qa.deleteCohort(principal.workspaceId, params.cohort_id),
};
