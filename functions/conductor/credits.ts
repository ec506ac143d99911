import type { creditRoutes } from '../../shared/conductor/credits/routes.ts';
import { conductorCredits, conductorLedger } from '../../shared/conductor/credits/api.ts';
import type { Handlers } from '../../shared/platform/http/route.ts';

export const creditHandlers: Handlers<typeof creditRoutes> = {
  getConductorCredits: ({ principal }) => conductorCredits(principal.workspaceId),
  listConductorLedger: ({ principal, query }) => conductorLedger(principal.workspaceId, query),
};
