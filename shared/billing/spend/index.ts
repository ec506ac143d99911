/**
 * The spend check (docs/billing.md, The spend check): whether a workspace may start a spending
 * action (spend.ts: verification, an overdue invoice, the balance, the monthly budget). Narrow
 * on purpose: a function that only checks spend (the agents function's batch tests) bundles
 * the billing account's read and nothing else. `POST /billing/check`'s answer, with the
 * workspace's verification from the numbers domain, is check.ts (billing's api.ts uses it).
 * Route: routes.ts; schemas: schemas.ts.
 */
export { assertCanSpend, checkSpend, conductorSpendSettings, type ConductorSpendSettings } from './spend.ts';
