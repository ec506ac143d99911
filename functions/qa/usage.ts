import type { Handlers } from '../../shared/platform/http/route.ts';
import type { usageRoutes } from '../../shared/qa/usage/routes.ts';
import * as qa from '../../shared/qa/index.ts';

export const usageHandlers: Handlers<typeof usageRoutes> = {
  getQaUsage: ({ principal, query }) => qa.qaUsage(principal.workspaceId, query),
};
