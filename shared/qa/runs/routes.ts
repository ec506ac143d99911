import { defineRoutes } from '../../platform/http/route.ts';
import { cohortIdParams } from '../cohorts/schemas.ts';
import { QaRun } from './schemas.ts';

/** Runs of a QA cohort (scope `analytics`; developers and admins), served by the qa function; the scoring runs on the call-steps queue. */
export const runRoutes = defineRoutes({ domain: 'qa', access: 'analytics' }, {
  runQaCohort: {
    method: 'POST', path: '/qa/cohorts/{cohort_id}/run', status: 202,
    summary: "Score the cohort's calls not yet scored under its rubric version, in the background (a run still going is answered instead)",
    params: cohortIdParams, response: QaRun,
  },
});
