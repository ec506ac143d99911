import { lazySchema } from '../platform/http/schemas.ts';
import { defineRoutes } from '../platform/http/route.ts';
import {
  AddCreditsBody,
  AddCreditsView,
  BillingQuery,
  BillingSettingsView,
  BillingView,
  UpdateBillingSettingsBody,
} from './schemas.ts';

/*
 * Billing (spec: Billing endpoint group; Concurrency: concurrency billing). Admin scope for
 * keys (spec Authentication 4: billing matches no other scope) and the admin role for
 * sessions (Authentication 11: a developer does everything but billing, members, …);
 * Stripe's webhook is public and authenticated by its signature. docs/billing.md.
 * This module holds the overview, settings and granted credit; each part has its own route
 * module (charges/, spend/, invoices/, payments/), and the billing function serves them all.
 */
export const billingRoutes = defineRoutes({ domain: 'billing', access: 'admin' }, {
  getBilling: {
    method: 'GET', path: '/billing', status: 200, role: 'admin',
    summary: 'Balance, this month\'s charges, budget, spend status and the newest ledger entries',
    query: BillingQuery, response: BillingView,
  },
  addCredits: {
    method: 'POST', path: '/billing/add-credits', status: 200, role: 'admin',
    summary: 'Grant credit (admin; refused in production, where credit comes only from a payment)',
    body: AddCreditsBody, response: AddCreditsView,
  },
  getBillingSettings: {
    method: 'GET', path: '/billing/settings', status: 200, role: 'admin',
    summary: 'Monthly budget and auto-recharge',
    response: lazySchema(() => BillingSettingsView),
  },
  updateBillingSettings: {
    method: 'PATCH', path: '/billing/settings', status: 200, role: 'admin',
    summary: 'Set the monthly budget and auto-recharge (null removes either)',
    body: UpdateBillingSettingsBody, response: lazySchema(() => BillingSettingsView),
  },
});
