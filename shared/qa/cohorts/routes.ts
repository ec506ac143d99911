import { defineRoutes } from '../../platform/http/route.ts';
import { Cohort, CohortListQuery, CohortPage, cohortIdParams, CreateCohortBody, UpdateCohortBody } from './schemas.ts';

/** QA cohorts (scope `analytics`; members read, developers and admins write), served by the qa function. */
export const cohortRoutes = defineRoutes({ domain: 'qa', access: 'analytics' }, {
  createQaCohort: {
    method: 'POST', path: '/qa/cohorts', status: 201,
    summary: 'Create a QA cohort: which calls belong, the rubric they are scored against (the default rubric when left out) and whether new calls are scored as they end',
    body: CreateCohortBody, response: Cohort,
  },
  listQaCohorts: {
    method: 'GET', path: '/qa/cohorts', status: 200,
    summary: "List the workspace's QA cohorts, newest first, a page at a time",
    query: CohortListQuery, response: CohortPage,
  },
  getQaCohort: {
    method: 'GET', path: '/qa/cohorts/{cohort_id}', status: 200,
    summary: 'Get a QA cohort with its newest run',
    params: cohortIdParams, response: Cohort,
  },
  updateQaCohort: {
    method: 'PATCH', path: '/qa/cohorts/{cohort_id}', status: 200,
    summary: 'Update a QA cohort: each field given replaces its own; a changed rubric is a new rubric version',
    params: cohortIdParams, body: UpdateCohortBody, response: Cohort,
  },
  deleteQaCohort: {
    method: 'DELETE', path: '/qa/cohorts/{cohort_id}', status: 204,
    summary: 'Delete a QA cohort and its results',
    params: cohortIdParams,
  },
});
