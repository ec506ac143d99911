/**
 * Payments (docs/billing.md, "Payments: Stripe and the mock"): what the rest of billing uses
 * of them on the path of a charge, auto-recharge (autorecharge.ts, which loads the payments
 * vendor and the event handling on first use). Every function that writes a charge reaches
 * this index, so it reaches nothing that loads the `stripe` package
 * (test/billing/bundles.test.ts). The rest of this folder is reached otherwise, for that
 * package's sake: the billing function's operations (../api.ts) and overview (../billing.ts)
 * take payments.ts (checkouts, payment methods, the portal), mock-checkout.ts (the built-in
 * mock's page) and stripe-webhook.ts (the signature check) themselves; stripe-events.ts is
 * what a verified event does, loaded by the webhook and by auto-recharge. Routes: routes.ts;
 * schemas: schemas.ts.
 */
export { maybeAutoRecharge } from './autorecharge.ts';
