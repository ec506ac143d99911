import { defineRoutes } from '../../platform/http/route.ts';
import { cohortIdParams } from '../cohorts/schemas.ts';
import { QaResult, QaResultPage, resultIdParams, ResultListQuery } from './schemas.ts';

/** QA results (scope `analytics`; members read), served by the qa function. */
export const resultRoutes = defineRoutes({ domain: 'qa', access: 'analytics' }, {
  listQaResults: {
    method: 'GET', path: '/qa/cohorts/{cohort_id}/results', status: 200,
    summary: "A QA cohort's results under one rubric version, oldest call or lowest score first, filtered by status, pass or fail, and score range (overall or one criterion's)",
    params: cohortIdParams, query: ResultListQuery, response: QaResultPage,
  },
  getQaResult: {
    method: 'GET', path: '/qa/results/{result_id}', status: 200,
    summary: "A QA result: each criterion's score and reason, the overall score, pass or fail, and the call's latency and sentiment",
    params: resultIdParams, response: QaResult,
  },
});
