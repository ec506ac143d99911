/*
 * The payments vendor (Stripe, or the built-in mock without STRIPE_SECRET_KEY): what billing
 * asks of it. Money is confirmed only by signed webhook events
 * (shared/billing/payments/stripe-events.ts); nothing answered here adds credit by itself.
 */

export type PaymentsProviderKind = 'stripe' | 'mock';

export interface PaymentMethodInfo {
  id: string;
  type: string;
  brand: string | null;
  last4: string | null;
  exp_month: number | null;
  exp_year: number | null;
  /** The customer it is attached to (null: detached). */
  customer: string | null;
}

/** A signed event the mock provider produced for itself: fed to the webhook handler as Stripe would post it. */
export interface SelfSignedEvent {
  payload: string;
  signature: string;
}

export interface CheckoutInput {
  customerId: string;
  workspaceId: string;
  amountCents: number;
  successUrl: string;
  cancelUrl: string;
  idempotencyKey: string;
  /** What the payment is for (metadata `purpose`): credit (default) or an open invoice. */
  purpose?: 'credits' | 'invoice';
  /** The invoice paid (metadata `invoice_id`), for purpose `invoice`. */
  invoiceId?: string;
  /** The line's name on the payment page (default `Parley credit`). */
  productName?: string;
  /**
   * The built-in mock's payment page for this session (Parley serves it: billing's
   * `/billing/mock-checkout/{token}`); Stripe hosts its own page and ignores this.
   */
  mockPageUrl?: string;
}

/** What the mock's completion event says of a checkout session (billing keeps it until Pay). */
export interface MockCheckoutSession {
  id: string;
  customerId: string;
  workspaceId: string;
  amountCents: number;
  purpose: 'credits' | 'invoice';
  invoiceId?: string;
}

export interface OffSessionChargeInput {
  customerId: string;
  paymentMethodId: string;
  amountCents: number;
  workspaceId: string;
  purpose: 'auto_recharge';
  idempotencyKey: string;
}

export interface PaymentsProvider {
  readonly kind: PaymentsProviderKind;
  createCustomer(input: { workspaceId: string; idempotencyKey: string }): Promise<{ id: string }>;
  createCheckoutSession(input: CheckoutInput): Promise<{ id: string; url: string; events?: SelfSignedEvent[] }>;
  createSetupIntent(customerId: string, workspaceId: string): Promise<{ id: string; client_secret: string; events?: SelfSignedEvent[] }>;
  listPaymentMethods(customerId: string): Promise<PaymentMethodInfo[]>;
  /** Undefined when the payment method does not exist. */
  getPaymentMethod(paymentMethodId: string): Promise<PaymentMethodInfo | undefined>;
  /** The customer's default payment method for invoices and off-session charges (null: none). */
  defaultPaymentMethod(customerId: string): Promise<string | null>;
  setDefaultPaymentMethod(customerId: string, paymentMethodId: string): Promise<void>;
  detachPaymentMethod(paymentMethodId: string): Promise<void>;
  createPortalSession(customerId: string, returnUrl: string): Promise<{ url: string }>;
  /** Charges a saved card without the customer present (auto-recharge); a decline throws PaymentRequired. */
  chargeOffSession(input: OffSessionChargeInput): Promise<{ id: string; status: string; events?: SelfSignedEvent[] }>;
  /** The secret that signs this provider's webhook events (undefined: not configured). */
  webhookSecret(): Promise<string | undefined>;
}
