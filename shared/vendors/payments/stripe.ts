import type Stripe from 'stripe';
import { badGateway, badRequest, paymentRequired } from '../../platform/errors.ts';
import { logger } from '../../platform/logger.ts';
import { chargeOffSessionOverRest } from './stripe-off-session.ts';
import type { CheckoutInput, OffSessionChargeInput, PaymentMethodInfo, PaymentsProvider } from './types.ts';
import { loadOnce } from '../../platform/lazy.ts';

/*
 * Stripe through the official `stripe` package, pointed at STRIPE_API_BASE_URL (tests: a fake
 * on 127.0.0.1) with a 10 s timeout and one network retry (the SDK sends an Idempotency-Key
 * with every retried POST; creates that must be the same object when repeated carry ours).
 * The package is about 240 KiB minified, so only the billing function loads this module
 * (shared/vendors/payments/provider.ts); the charge path in calls, chats and batches never does
 * (docs/billing.md, "Payments: Stripe and the mock"). Even there it is loaded on first use
 * (`loadStripe`, a literal `import('stripe')`: its own chunk when the bundle is split), so a
 * cold start of the billing function does not load it.
 *
 * Errors: a card declined (`StripeCardError`, HTTP 402) → 402 `Payment failed: <Stripe's
 * message>` without error_code (spec Errors); a missing object on a read → undefined; anything
 * else → 502 `Payment provider stripe failed: <status> <code>` (Stripe's message to the log only).
 */

const STRIPE_TIMEOUT_MS = 10_000;
/** How old a signed event may be (Stripe's default tolerance). */
const STRIPE_SIGNATURE_TOLERANCE_SECONDS = 300;

export interface StripeOptions {
  baseUrl: string;
  secretKey: string;
  webhookSecret: () => Promise<string | undefined>;
}

/** The package, loaded once per process on first use. */
const loadStripe = loadOnce((): Promise<typeof Stripe> => import('stripe').then((module) => module.default));

/** A Stripe client for a key and base URL (one per pair per process: the SDK keeps its agent and settings). */
const clients = new Map<string, Stripe>();
async function stripeClient(secretKey: string, url: URL): Promise<Stripe> {
  const StripeClient = await loadStripe();
  const cacheKey = `${url.href}\n${secretKey}`;
  let client = clients.get(cacheKey);
  if (!client) {
    const protocol = url.protocol === 'http:' ? 'http' : 'https';
    client = new StripeClient(secretKey, {
      host: url.hostname,
      port: url.port || (protocol === 'http' ? 80 : 443),
      protocol,
      timeout: STRIPE_TIMEOUT_MS,
      maxNetworkRetries: 1,
      telemetry: false,
      appInfo: { name: 'Parley' },
    });
    clients.set(cacheKey, client);
  }
  return client;
}

class NotFoundAtStripe extends Error {}

/** Maps the SDK's errors onto Parley's taxonomy (see the header comment). */
function mapped(error: unknown, operation: string, StripeClient: typeof Stripe): Error {
  if (error instanceof StripeClient.errors.StripeError) {
    if (error.type === 'StripeCardError' || error.statusCode === 402) return paymentRequired(`Payment failed: ${error.message || 'the card was declined'}`);
    if (error.statusCode === 404 || error.code === 'resource_missing') return new NotFoundAtStripe(operation);
    if (error.type === 'StripeConnectionError') {
      logger.warn('Stripe unreachable', { operation, message: error.message });
      return badGateway('Payment provider stripe failed: unreachable');
    }
    logger.warn('Stripe refused a request', { operation, status: error.statusCode, code: error.code, type: error.type, message: error.message });
    return badGateway(`Payment provider stripe failed: ${error.statusCode ?? 'error'}${error.code ? ` ${error.code}` : ''}`);
  }
  return error instanceof Error ? error : new Error(String(error));
}


const idOf = (value: string | { id: string } | null | undefined): string | null => (typeof value === 'string' ? value : (value?.id ?? null));

function toPaymentMethod(method: Stripe.PaymentMethod): PaymentMethodInfo {
  return {
    id: method.id,
    type: method.type ?? 'card',
    brand: method.card?.brand ?? null,
    last4: method.card?.last4 ?? null,
    exp_month: method.card?.exp_month ?? null,
    exp_year: method.card?.exp_year ?? null,
    customer: idOf(method.customer as string | { id: string } | null),
  };
}

export class StripeProvider implements PaymentsProvider {
  readonly kind = 'stripe' as const;
  /** STRIPE_API_BASE_URL, parsed here so a bad one fails where the provider is made, as before the package was loaded lazily. */
  private readonly url: URL;

  constructor(private readonly options: StripeOptions) {
    this.url = new URL(options.baseUrl);
  }

  /** Runs one request with the (lazily loaded) client, mapping its errors (see the header comment). */
  private async call<T>(operation: string, run: (stripe: Stripe) => Promise<T>): Promise<T> {
    const stripe = await stripeClient(this.options.secretKey, this.url);
    try {
      return await run(stripe);
    } catch (error) {
      throw mapped(error, operation, await loadStripe());
    }
  }

  async createCustomer(input: { workspaceId: string; idempotencyKey: string }): Promise<{ id: string }> {
    const customer = await this.call('customers.create', (stripe) =>
      stripe.customers.create({ metadata: { workspace_id: input.workspaceId } }, { idempotencyKey: input.idempotencyKey }),
    );
    return { id: customer.id };
  }

  async createCheckoutSession(input: CheckoutInput): Promise<{ id: string; url: string }> {
    const metadata = { workspace_id: input.workspaceId, purpose: input.purpose ?? 'credits', ...(input.invoiceId ? { invoice_id: input.invoiceId } : {}) };
    const session = await this.call('checkout.sessions.create', (stripe) =>
      stripe.checkout.sessions.create(
        {
          mode: 'payment',
          customer: input.customerId,
          success_url: input.successUrl,
          cancel_url: input.cancelUrl,
          client_reference_id: input.workspaceId,
          line_items: [{ quantity: 1, price_data: { currency: 'usd', unit_amount: input.amountCents, product_data: { name: input.productName ?? 'Parley credit' } } }],
          metadata,
          payment_intent_data: { setup_future_usage: 'off_session', metadata },
        },
        { idempotencyKey: input.idempotencyKey },
      ),
    );
    if (typeof session.url !== 'string') throw badGateway('Payment provider stripe failed: the checkout session has no url');
    return { id: session.id, url: session.url };
  }

  async createSetupIntent(customerId: string, workspaceId: string): Promise<{ id: string; client_secret: string }> {
    const intent = await this.call('setupIntents.create', (stripe) =>
      stripe.setupIntents.create({ customer: customerId, usage: 'off_session', allowed_payment_method_types: ['card'], metadata: { workspace_id: workspaceId } }),
    );
    return { id: intent.id, client_secret: intent.client_secret ?? '' };
  }

  async listPaymentMethods(customerId: string): Promise<PaymentMethodInfo[]> {
    const list = await this.call('customers.listPaymentMethods', (stripe) => stripe.customers.listPaymentMethods(customerId, { type: 'card', limit: 100 }));
    return list.data.map(toPaymentMethod);
  }

  async getPaymentMethod(paymentMethodId: string): Promise<PaymentMethodInfo | undefined> {
    try {
      return toPaymentMethod(await this.call('paymentMethods.retrieve', (stripe) => stripe.paymentMethods.retrieve(paymentMethodId)));
    } catch (error) {
      if (error instanceof NotFoundAtStripe) return undefined;
      throw error;
    }
  }

  async defaultPaymentMethod(customerId: string): Promise<string | null> {
    const customer = await this.call('customers.retrieve', (stripe) => stripe.customers.retrieve(customerId));
    if ('deleted' in customer && customer.deleted) return null;
    return idOf((customer as Stripe.Customer).invoice_settings?.default_payment_method as string | { id: string } | null);
  }

  async setDefaultPaymentMethod(customerId: string, paymentMethodId: string): Promise<void> {
    await this.call('customers.update', (stripe) => stripe.customers.update(customerId, { invoice_settings: { default_payment_method: paymentMethodId } }));
  }

  async detachPaymentMethod(paymentMethodId: string): Promise<void> {
    await this.call('paymentMethods.detach', (stripe) => stripe.paymentMethods.detach(paymentMethodId));
  }

  async createPortalSession(customerId: string, returnUrl: string): Promise<{ url: string }> {
    const session = await this.call('billingPortal.sessions.create', (stripe) => stripe.billingPortal.sessions.create({ customer: customerId, return_url: returnUrl }));
    return { url: session.url };
  }

  /** The one request the charge path makes, kept out of the SDK (stripe-off-session.ts), so calls, chats and batches never load it. */
  chargeOffSession(input: OffSessionChargeInput): Promise<{ id: string; status: string }> {
    return chargeOffSessionOverRest({ baseUrl: this.options.baseUrl, secretKey: this.options.secretKey }, input);
  }

  webhookSecret(): Promise<string | undefined> {
    return this.options.webhookSecret();
  }
}

type SignatureProblem = 'missing' | 'malformed' | 'mismatch' | 'too_old';

const PROBLEMS: Record<SignatureProblem, string> = {
  missing: 'Missing Stripe-Signature header',
  malformed: 'Invalid Stripe-Signature header',
  mismatch: 'Stripe-Signature does not match the body',
  too_old: 'Stripe-Signature timestamp is outside the tolerance',
};

/**
 * Checks the `Stripe-Signature` header with the package's `stripe.webhooks.constructEvent`
 * (HMAC-SHA256 of `<t>.<raw body>` with the endpoint's secret, any v1 matching, 5 minutes of
 * tolerance) and answers the parsed event; a missing, malformed, mismatched or stale signature
 * is a 400 naming which.
 */
export async function verifyStripeEvent(rawBody: string, header: string | undefined, secret: string): Promise<unknown> {
  if (!header) throw badRequest(PROBLEMS.missing);
  const StripeClient = await loadStripe();
  try {
    return StripeClient.webhooks.constructEvent(rawBody, header, secret, STRIPE_SIGNATURE_TOLERANCE_SECONDS);
  } catch (error) {
    if (!(error instanceof StripeClient.errors.StripeSignatureVerificationError)) {
      // The signature matched but the body is not JSON (constructEvent parses it).
      if (error instanceof SyntaxError) throw badRequest('Invalid Stripe event');
      throw error;
    }
    const message = error.message;
    const problem: SignatureProblem = message.startsWith('Timestamp outside')
      ? 'too_old'
      : message.startsWith('No signatures found matching')
        ? 'mismatch'
        : message.startsWith('No webhook payload')
          ? 'mismatch'
          : 'malformed';
    throw badRequest(PROBLEMS[problem]);
  }
}
