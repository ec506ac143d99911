import { paymentsProvider, verifyStripeEvent } from '../../vendors/payments/provider.ts';
import type { PaymentsProvider, SelfSignedEvent } from '../../vendors/payments/index.ts';
import { badRequest } from '../../platform/errors.ts';
import { handleStripeEvent, type EventContext, type WebhookOutcome } from './stripe-events.ts';

/*
 * Stripe's webhook (`POST /billing/stripe/webhook`): the only way money reaches the ledger.
 * The `Stripe-Signature` header must sign the raw body with the endpoint's secret, within 5
 * minutes, checked by the `stripe` package's `webhooks.constructEvent` (else 400, nothing
 * changes); then stripe-events.ts handles it once per event ID. The mock's own events for
 * checkouts and setup intents come through the same check, signed with its process secret.
 * Only the billing function loads this module (the package is large).
 */

const contextOf = (provider: PaymentsProvider): EventContext => ({
  kind: provider.kind,
  setDefaultPaymentMethod: (customerId, paymentMethodId) => provider.setDefaultPaymentMethod(customerId, paymentMethodId),
});

export async function receiveStripeWebhook(rawBody: string, signature: string | undefined): Promise<WebhookOutcome> {
  return receiveWith(await paymentsProvider(), rawBody, signature);
}

/** Events the mock provider produced for itself go through the same checks as Stripe's. */
export async function deliverSelfSignedEvents(provider: PaymentsProvider, events: readonly SelfSignedEvent[] | undefined): Promise<void> {
  for (const event of events ?? []) await receiveWith(provider, event.payload, event.signature);
}

async function receiveWith(provider: PaymentsProvider, rawBody: string, signature: string | undefined): Promise<WebhookOutcome> {
  const secret = await provider.webhookSecret();
  if (!secret) throw badRequest('Stripe webhooks are not configured (STRIPE_WEBHOOK_SECRET)');
  return handleStripeEvent(contextOf(provider), await verifyStripeEvent(rawBody, signature, secret));
}
