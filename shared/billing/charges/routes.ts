import { defineRoutes } from '../../platform/http/route.ts';
import { ConcurrencyBillingView, PlatformUsageView, UsageQuery, UsageView } from './schemas.ts';

/* Usage reports and concurrency billing (docs/billing.md), served by the billing function. */
export const chargeRoutes = defineRoutes({ domain: 'billing', access: 'admin' }, {
  getUsage: {
    method: 'GET', path: '/billing/usage', status: 200, role: 'admin',
    summary: 'Charges by day and product with totals for a date range (UTC days; default this month)',
    query: UsageQuery, response: UsageView,
  },
  getPlatformUsage: {
    method: 'GET', path: '/billing/platform-usage', status: 200, role: 'admin',
    summary: 'Charges across every workspace for a date range (operator keys only)',
    query: UsageQuery, response: PlatformUsageView,
  },
  getConcurrencyBilling: {
    method: 'GET', path: '/concurrency-billing', status: 200, role: 'admin',
    summary: 'Purchased concurrency slots, their monthly charges and this month\'s burst minutes',
    response: ConcurrencyBillingView,
  },
  chargeConcurrency: {
    method: 'POST', path: '/concurrency-billing/charge', status: 200, role: 'admin',
    summary: 'Charge this month\'s purchased slots not yet charged, now (idempotent per month)',
    response: ConcurrencyBillingView,
  },
});
