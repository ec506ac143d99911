import { randomBytes } from 'node:crypto';
import { stripeSignatureHeader } from './signature.ts';
import type { CheckoutInput, MockCheckoutSession, OffSessionChargeInput, PaymentMethodInfo, PaymentsProvider, SelfSignedEvent } from './types.ts';

/*
 * The built-in payments mock (no STRIPE_SECRET_KEY): no money moves. A checkout's URL is
 * Parley's own payment page (`mockPageUrl`, served by billing:
 * shared/billing/payments/mock-checkout.ts), whose Pay button completes it (`checkoutCompleted`), a setup intent saves a test card
 * (Visa 4242), an off-session charge succeeds; each produces the Stripe event a real payment would, signed with this process's own random
 * secret, which billing feeds to the same webhook handler as Stripe's. So the whole flow
 * (signature check, replay guard, ledger) runs offline, and nobody outside the process can
 * forge a mock event (the secret never leaves it). State lives in this process only.
 */

const hex = (bytes: number) => randomBytes(bytes).toString('hex');

export class MockPaymentsProvider implements PaymentsProvider {
  readonly kind = 'mock' as const;
  private readonly secret = `whsec_mock_${hex(24)}`;
  private readonly methods = new Map<string, PaymentMethodInfo>();
  private readonly defaults = new Map<string, string>();

  async createCustomer(): Promise<{ id: string }> {
    return { id: `cus_mock_${hex(12)}` };
  }

  /** Opens a session (nothing is paid yet): its page is `mockPageUrl`, where Pay completes it. */
  async createCheckoutSession(input: CheckoutInput): Promise<{ id: string; url: string }> {
    if (!input.mockPageUrl) throw new Error('The mock provider needs the URL of its checkout page (mockPageUrl)');
    return { id: `cs_mock_${hex(12)}`, url: input.mockPageUrl };
  }

  /**
   * The signed `checkout.session.completed` of a session paid on the mock's page. Its event ID
   * is derived from the session's, so a second Pay of the same session is a replay of the same
   * event (and the credit's source key, the session, is written once anyway).
   */
  checkoutCompleted(session: MockCheckoutSession): SelfSignedEvent {
    const object = {
      id: session.id,
      object: 'checkout.session',
      mode: 'payment',
      status: 'complete',
      payment_status: 'paid',
      customer: session.customerId,
      client_reference_id: session.workspaceId,
      amount_total: session.amountCents,
      currency: 'usd',
      payment_intent: session.id.replace(/^cs_mock_/, 'pi_mock_'),
      metadata: { workspace_id: session.workspaceId, purpose: session.purpose, ...(session.invoiceId ? { invoice_id: session.invoiceId } : {}) },
    };
    return this.event('checkout.session.completed', object, `evt_mock_${session.id.replace(/^cs_mock_/, 'cs_')}`);
  }

  async createSetupIntent(customerId: string, workspaceId: string): Promise<{ id: string; client_secret: string; events: SelfSignedEvent[] }> {
    const id = `seti_mock_${hex(12)}`;
    const method: PaymentMethodInfo = { id: `pm_mock_${hex(12)}`, type: 'card', brand: 'visa', last4: '4242', exp_month: 12, exp_year: new Date().getUTCFullYear() + 3, customer: customerId };
    this.methods.set(method.id, method);
    const intent = { id, object: 'setup_intent', status: 'succeeded', customer: customerId, payment_method: method.id, metadata: { workspace_id: workspaceId } };
    return { id, client_secret: `${id}_secret_${hex(8)}`, events: [this.event('setup_intent.succeeded', intent)] };
  }

  async listPaymentMethods(customerId: string): Promise<PaymentMethodInfo[]> {
    return [...this.methods.values()].filter((method) => method.customer === customerId);
  }

  async getPaymentMethod(paymentMethodId: string): Promise<PaymentMethodInfo | undefined> {
    return this.methods.get(paymentMethodId);
  }

  async defaultPaymentMethod(customerId: string): Promise<string | null> {
    return this.defaults.get(customerId) ?? null;
  }

  async setDefaultPaymentMethod(customerId: string, paymentMethodId: string): Promise<void> {
    this.defaults.set(customerId, paymentMethodId);
  }

  async detachPaymentMethod(paymentMethodId: string): Promise<void> {
    const method = this.methods.get(paymentMethodId);
    if (!method) return;
    if (method.customer && this.defaults.get(method.customer) === paymentMethodId) this.defaults.delete(method.customer);
    this.methods.set(paymentMethodId, { ...method, customer: null });
  }

  async createPortalSession(_customerId: string, returnUrl: string): Promise<{ url: string }> {
    return { url: `${returnUrl}${returnUrl.includes('?') ? '&' : '?'}portal=mock` };
  }

  async chargeOffSession(input: OffSessionChargeInput): Promise<{ id: string; status: string; events: SelfSignedEvent[] }> {
    const id = `pi_mock_${hex(12)}`;
    const intent = {
      id,
      object: 'payment_intent',
      status: 'succeeded',
      amount: input.amountCents,
      amount_received: input.amountCents,
      currency: 'usd',
      customer: input.customerId,
      payment_method: input.paymentMethodId,
      metadata: { workspace_id: input.workspaceId, purpose: input.purpose },
    };
    return { id, status: 'succeeded', events: [this.event('payment_intent.succeeded', intent)] };
  }

  async webhookSecret(): Promise<string> {
    return this.secret;
  }

  private event(type: string, object: Record<string, unknown>, id = `evt_mock_${hex(12)}`): SelfSignedEvent {
    const payload = JSON.stringify({ id, object: 'event', type, created: Math.floor(Date.now() / 1000), livemode: false, data: { object } });
    return { payload, signature: stripeSignatureHeader(payload, this.secret, Math.floor(Date.now() / 1000)) };
  }
}
