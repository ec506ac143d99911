import { defineRoutes } from '../../platform/http/route.ts';
import { CheckSpendBody, CheckSpendView } from './schemas.ts';

/* The spend check's route (docs/billing.md, The spend check), served by the billing function. */
export const spendRoutes = defineRoutes({ domain: 'billing', access: 'admin' }, {
  checkSpend: {
    method: 'POST', path: '/billing/check', status: 200, role: 'admin',
    summary: 'What the spend check would decide for an action, without acting',
    body: CheckSpendBody, response: CheckSpendView,
  },
});
