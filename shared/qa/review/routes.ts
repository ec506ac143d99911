import { defineRoutes } from '../../platform/http/route.ts';
import { cohortIdParams } from '../cohorts/schemas.ts';
import { QaResult, resultIdParams } from '../results/schemas.ts';
import { CalibrateBody, Calibration, ReviewBody, WerAnswer, WerCorrectionBody } from './schemas.ts';

/** Human review of QA results and calibration (scope `analytics`; developers and admins), served by the qa function. */
export const reviewRoutes = defineRoutes({ domain: 'qa', access: 'analytics' }, {
  reviewQaResult: {
    method: 'PATCH', path: '/qa/results/{result_id}', status: 200,
    summary: "Review a scored QA result: the reviewer's scores per criterion and notes, kept beside the machine's, with the overall score recomputed (a new review replaces the last)",
    params: resultIdParams, body: ReviewBody, response: QaResult,
  },
  correctQaTranscript: {
    method: 'PUT', path: '/qa/results/{result_id}/wer-corrections', status: 200,
    summary: "Correct a scored QA result's transcript: answers the word error rate of the call's recognised caller lines against the corrected ones",
    params: resultIdParams, body: WerCorrectionBody, response: WerAnswer,
  },
  calibrateQaCohort: {
    method: 'POST', path: '/qa/cohorts/{cohort_id}/calibrate', status: 200,
    summary: "Compare the machine's scores with reviewers' on a cohort's reviewed results: agreement per criterion and overall, and suggested rubric changes",
    params: cohortIdParams, body: CalibrateBody, response: Calibration,
  },
});
