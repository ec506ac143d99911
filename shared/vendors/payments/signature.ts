import { createHmac } from 'node:crypto';

/*
 * Stripe's webhook signature header (`Stripe-Signature: t=<unix seconds>,v1=<hex>`, HMAC-SHA256
 * over `<t>.<raw body>` keyed by the endpoint's signing secret), as the built-in mock signs the
 * events it makes for itself. Checking a signature is the `stripe` package's
 * `webhooks.constructEvent` (stripe.ts); producing one is these few lines, so the mock stays
 * out of the package's weight in every bundle that charges.
 */
export function stripeSignatureHeader(payload: string, secret: string, timestampSeconds: number): string {
  const signature = createHmac('sha256', secret).update(`${timestampSeconds}.${payload}`, 'utf8').digest('hex');
  return `t=${timestampSeconds},v1=${signature}`;
}
