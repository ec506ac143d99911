import { defineRoutes } from '../../platform/http/route.ts';
import { ConductorCredits, ConductorLedger, ConductorLedgerQuery } from './schemas.ts';

/**
 * The assistant's credits, served by the conductor function. The spec's scope table names
 * no scope for the assistant's routes, so a key needs `admin` (its catch-all rule); these are
 * reads, so every dashboard role may call them. The settings they show are changed with
 * PATCH /billing/settings (role admin).
 */
export const creditRoutes = defineRoutes({ domain: 'conductor', access: 'admin' }, {
  getConductorCredits: {
    method: 'GET', path: '/conductor/credits', status: 200,
    summary: "The assistant's credits today: the free allowance, used, left, pay-as-you-go and the monthly limit",
    response: ConductorCredits,
  },
  listConductorLedger: {
    method: 'GET', path: '/conductor/ledger', status: 200,
    summary: "The assistant's credit ledger (one entry per message charged), newest first",
    query: ConductorLedgerQuery, response: ConductorLedger,
  },
});
