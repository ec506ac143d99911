/**
 * The spend check (docs/billing.md, The spend check): whether a workspace may start a spending
 * action (spend.ts: verification, an overdue invoice, the balance, the monthly budget), and
 * `POST /billing/check`'s answer with the workspace's verification as the dialling routes
 * give it (check.ts). Route: routes.ts; schemas: schemas.ts.
 */
export { assertCanSpend, checkSpend } from './spend.ts';
export { checkSpendFor } from './check.ts';
