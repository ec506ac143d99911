import type { Handlers } from '../../shared/platform/http/route.ts';
import type { reviewRoutes } from '../../shared/qa/review/routes.ts';
import * as qa from '../../shared/qa/index.ts';

export const reviewHandlers: Handlers<typeof reviewRoutes> = {
  reviewQaResult: ({ principal, params, body }) => qa.reviewResult(principal, params.result_id, body),
  correctQaTranscript: ({ principal, params, body }) => qa.correctTranscript(principal, params.result_id, body),
  calibrateQaCohort: ({ principal, params, body }) => qa.calibrateCohort(principal.workspaceId, params.cohort_id, body),
};
