import { config, isProduction } from '../../platform/config.ts';
import { conflict, notFound, unavailable } from '../../platform/errors.ts';
import type { CheckoutInput as ProviderCheckoutInput, PaymentsProvider, SelfSignedEvent } from '../../vendors/payments/index.ts';
import { paymentsProvider } from '../../vendors/payments/provider.ts';
import { ensureAccount } from '../entries.ts';
import type { CheckoutInput, PayInvoiceInput } from './schemas.ts';
import { newMockCheckoutToken, storeMockCheckout } from './mock-checkout.ts';
import { deliverSelfSignedEvents } from './stripe-webhook.ts';
import { billingStore } from '../store.ts';

/*
 * Payments through the provider (Stripe, or the mock): checkout sessions that buy credit,
 * setup intents that save a card, the default payment method, the customer portal. None of
 * these changes the ledger: Stripe's signed webhook does (stripe-events.ts). The mock's
 * events are delivered to that same handler at once. A declined card is 402 without
 * error_code (spec Errors: failed payments on billing actions).
 */

const baseUrl = () => {
  const base = config.PUBLIC_BASE_URL ?? `http://127.0.0.1:${config.PORT}`;
  return base.endsWith('/') ? base.slice(0, -1) : base;
};

/**
 * The provider a payment action goes through. The mock pays without money, so a production
 * deployment without Stripe refuses every action that could move money or save a card
 * (checkouts, setup intents, the default method, the portal) instead of handing out free credit.
 */
async function payingProvider(): Promise<PaymentsProvider> {
  const provider = await paymentsProvider();
  if (isProduction && provider.kind === 'mock') {
    throw unavailable('Payments are not configured on this deployment: set STRIPE_SECRET_KEY (and STRIPE_WEBHOOK_SECRET) in the vendor settings', 3600);
  }
  return provider;
}

/** The workspace's customer at the provider, created once (the provider's idempotency key makes a retry the same customer). */
async function customerFor(provider: PaymentsProvider, workspaceId: string): Promise<string> {
  const account = await ensureAccount(workspaceId);
  const existing = account[`customer_${provider.kind}`];
  if (existing) return existing;
  const created = await provider.createCustomer({ workspaceId, idempotencyKey: `customer:${workspaceId}` });
  return billingStore.setCustomer(workspaceId, provider.kind, created.id);
}

/**
 * A checkout session at the provider. The mock's is kept here until its page's Pay or Cancel
 * (mock-checkout.ts): its URL is that page, under a fresh random token.
 */
async function openCheckout(provider: PaymentsProvider, input: Omit<ProviderCheckoutInput, 'mockPageUrl'>): Promise<{ id: string; url: string; events?: SelfSignedEvent[] }> {
  if (provider.kind !== 'mock') return provider.createCheckoutSession(input);
  const token = newMockCheckoutToken();
  const session = await provider.createCheckoutSession({ ...input, mockPageUrl: `${baseUrl()}/billing/mock-checkout/${token}` });
  await storeMockCheckout(token, input, session);
  return session;
}

export async function createCheckout(workspaceId: string, input: CheckoutInput) {
  const provider = await payingProvider();
  const customerId = await customerFor(provider, workspaceId);
  const session = await openCheckout(provider, {
    customerId,
    workspaceId,
    amountCents: Math.round(input.amount_usd * 100),
    successUrl: input.success_url ?? `${baseUrl()}/billing?checkout=success`,
    cancelUrl: input.cancel_url ?? `${baseUrl()}/billing?checkout=cancelled`,
    idempotencyKey: `checkout:${workspaceId}:${crypto.randomUUID()}`,
  });
  await deliverSelfSignedEvents(provider, session.events);
  return { checkout_session_id: session.id, url: session.url, amount_usd: input.amount_usd, provider: provider.kind };
}

/**
 * A checkout that pays an open invoice its amount due: the signed `checkout.session.completed`
 * (purpose `invoice`) credits that amount and marks the invoice paid, whatever the balance is
 * by then (stripe-events.ts). A paid invoice is a 409; another workspace's is a 404.
 */
export async function createInvoiceCheckout(workspaceId: string, invoiceId: string, input: PayInvoiceInput) {
  const provider = await payingProvider();
  const invoice = await billingStore.invoice(workspaceId, invoiceId);
  if (!invoice) throw notFound(`Invoice ${invoiceId} not found`);
  if (invoice.status !== 'open') throw conflict(`Invoice ${invoiceId} is already paid`);
  const customerId = await customerFor(provider, workspaceId);
  const amountCents = Math.ceil(invoice.amount_due / 10_000);
  const session = await openCheckout(provider, {
    customerId,
    workspaceId,
    amountCents,
    successUrl: input.success_url ?? `${baseUrl()}/billing?invoice=${invoiceId}&checkout=success`,
    cancelUrl: input.cancel_url ?? `${baseUrl()}/billing?invoice=${invoiceId}&checkout=cancelled`,
    idempotencyKey: `invoice-checkout:${invoiceId}:${crypto.randomUUID()}`,
    purpose: 'invoice',
    invoiceId,
    productName: `Parley invoice ${invoice.period}`,
  });
  await deliverSelfSignedEvents(provider, session.events);
  return { checkout_session_id: session.id, url: session.url, amount_usd: amountCents / 100, provider: provider.kind };
}

export async function createSetupIntent(workspaceId: string) {
  const provider = await payingProvider();
  const customerId = await customerFor(provider, workspaceId);
  const intent = await provider.createSetupIntent(customerId, workspaceId);
  await deliverSelfSignedEvents(provider, intent.events);
  return { setup_intent_id: intent.id, client_secret: intent.client_secret, provider: provider.kind };
}

export async function listPaymentMethods(workspaceId: string) {
  const provider = await paymentsProvider();
  const account = await ensureAccount(workspaceId);
  const customerId = account[`customer_${provider.kind}`];
  if (!customerId) return [];
  const methods = await provider.listPaymentMethods(customerId);
  return methods.map(({ customer: _customer, ...method }) => ({ ...method, is_default: method.id === account.default_payment_method }));
}

/** The payment method, when it belongs to this workspace's customer (another's is as absent: 404). */
async function ownMethod(provider: PaymentsProvider, workspaceId: string, paymentMethodId: string): Promise<{ customerId: string }> {
  const account = await ensureAccount(workspaceId);
  const customerId = account[`customer_${provider.kind}`];
  const method = customerId ? await provider.getPaymentMethod(paymentMethodId) : undefined;
  if (!customerId || !method || method.customer !== customerId) throw notFound(`Payment method ${paymentMethodId} not found`);
  return { customerId };
}

export async function setDefaultPaymentMethod(workspaceId: string, paymentMethodId: string) {
  const provider = await payingProvider();
  const { customerId } = await ownMethod(provider, workspaceId, paymentMethodId);
  await provider.setDefaultPaymentMethod(customerId, paymentMethodId);
  await billingStore.setDefaultPaymentMethod(workspaceId, paymentMethodId);
  return listPaymentMethods(workspaceId);
}

export async function deletePaymentMethod(workspaceId: string, paymentMethodId: string): Promise<void> {
  const provider = await paymentsProvider();
  await ownMethod(provider, workspaceId, paymentMethodId);
  await provider.detachPaymentMethod(paymentMethodId);
  const account = await billingStore.account(workspaceId);
  if (account?.default_payment_method === paymentMethodId) await billingStore.setDefaultPaymentMethod(workspaceId, null);
}

export async function createPortal(workspaceId: string, returnUrl?: string) {
  const provider = await payingProvider();
  const customerId = await customerFor(provider, workspaceId);
  return provider.createPortalSession(customerId, returnUrl ?? `${baseUrl()}/billing`);
}

export { paymentsProviderKind as paymentProviderKind } from '../../vendors/payments/index.ts';
