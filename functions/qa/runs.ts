import type { Handlers } from '../../shared/platform/http/route.ts';
import type { runRoutes } from '../../shared/qa/runs/routes.ts';
import * as qa from '../../shared/qa/index.ts';

export const runHandlers: Handlers<typeof runRoutes> = {
  runQaCohort: ({ principal, params }) => qa.startRun(principal.workspaceId, params.cohort_id),
};
