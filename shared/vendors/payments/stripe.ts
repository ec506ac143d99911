import { badGateway, paymentRequired } from '../../platform/errors.ts';
import { logger } from '../../platform/logger.ts';
import { traced } from '../../platform/tracing.ts';
import type { CheckoutInput, OffSessionChargeInput, PaymentMethodInfo, PaymentsProvider } from './types.ts';

/*
 * Stripe over its REST API (https://docs.stripe.com/api): form-encoded requests with the
 * secret key as a bearer token, an Idempotency-Key on every create, JSON answers. The key
 * and base URL are read per request (vendor settings: a rotated key is picked up), so the
 * official package is not needed for the dozen calls billing makes.
 *
 * Errors: a card declined (HTTP 402 or `card_error`) → 402 `Payment failed: <Stripe's
 * message>` without error_code (spec Errors); a missing object on a read → undefined; anything
 * else → 502 `Payment provider stripe failed: <status> <code>` (Stripe's message to the log only).
 */

const STRIPE_TIMEOUT_MS = 10_000;

export interface StripeOptions {
  baseUrl: string;
  secretKey: () => Promise<string | undefined>;
  webhookSecret: () => Promise<string | undefined>;
}

type Form = Record<string, unknown>;

/** Stripe's form encoding: nested objects as `a[b]=…`, arrays as `a[0]=…`. */
export function stripeForm(params: Form, prefix = ''): string[] {
  return Object.entries(params).flatMap(([name, value]) => {
    const key = prefix ? `${prefix}[${name}]` : name;
    if (value === undefined || value === null) return [];
    if (Array.isArray(value)) return value.flatMap((item, i) => (typeof item === 'object' && item !== null ? stripeForm(item as Form, `${key}[${i}]`) : [`${encodeURIComponent(`${key}[${i}]`)}=${encodeURIComponent(String(item))}`]));
    if (typeof value === 'object') return stripeForm(value as Form, key);
    return [`${encodeURIComponent(key)}=${encodeURIComponent(String(value))}`];
  });
}

interface StripeObject {
  id: string;
  [field: string]: unknown;
}

class NotFoundAtStripe extends Error {}

export class StripeProvider implements PaymentsProvider {
  readonly kind = 'stripe' as const;

  constructor(private readonly options: StripeOptions) {}

  async createCustomer(input: { workspaceId: string; idempotencyKey: string }): Promise<{ id: string }> {
    const customer = await this.request('POST', '/v1/customers', { metadata: { workspace_id: input.workspaceId } }, input.idempotencyKey);
    return { id: customer.id };
  }

  async createCheckoutSession(input: CheckoutInput): Promise<{ id: string; url: string }> {
    const session = await this.request(
      'POST',
      '/v1/checkout/sessions',
      {
        mode: 'payment',
        customer: input.customerId,
        success_url: input.successUrl,
        cancel_url: input.cancelUrl,
        client_reference_id: input.workspaceId,
        line_items: [{ quantity: 1, price_data: { currency: 'usd', unit_amount: input.amountCents, product_data: { name: 'Parley credit' } } }],
        metadata: { workspace_id: input.workspaceId, purpose: 'credits' },
        payment_intent_data: { setup_future_usage: 'off_session', metadata: { workspace_id: input.workspaceId, purpose: 'credits' } },
      },
      input.idempotencyKey,
    );
    if (typeof session.url !== 'string') throw badGateway('Payment provider stripe failed: the checkout session has no url');
    return { id: session.id, url: session.url };
  }

  async createSetupIntent(customerId: string, workspaceId: string): Promise<{ id: string; client_secret: string }> {
    const intent = await this.request('POST', '/v1/setup_intents', {
      customer: customerId,
      usage: 'off_session',
      'payment_method_types[0]': 'card',
      metadata: { workspace_id: workspaceId },
    });
    return { id: intent.id, client_secret: String(intent.client_secret ?? '') };
  }

  async listPaymentMethods(customerId: string): Promise<PaymentMethodInfo[]> {
    const list = await this.request('GET', `/v1/customers/${encodeURIComponent(customerId)}/payment_methods?type=card&limit=100`);
    return ((list.data as StripeObject[] | undefined) ?? []).map(toPaymentMethod);
  }

  async getPaymentMethod(paymentMethodId: string): Promise<PaymentMethodInfo | undefined> {
    try {
      return toPaymentMethod(await this.request('GET', `/v1/payment_methods/${encodeURIComponent(paymentMethodId)}`));
    } catch (error) {
      if (error instanceof NotFoundAtStripe) return undefined;
      throw error;
    }
  }

  async defaultPaymentMethod(customerId: string): Promise<string | null> {
    const customer = await this.request('GET', `/v1/customers/${encodeURIComponent(customerId)}`);
    const settings = customer.invoice_settings as { default_payment_method?: string | { id: string } | null } | undefined;
    const value = settings?.default_payment_method;
    return typeof value === 'string' ? value : (value?.id ?? null);
  }

  async setDefaultPaymentMethod(customerId: string, paymentMethodId: string): Promise<void> {
    await this.request('POST', `/v1/customers/${encodeURIComponent(customerId)}`, { invoice_settings: { default_payment_method: paymentMethodId } });
  }

  async detachPaymentMethod(paymentMethodId: string): Promise<void> {
    await this.request('POST', `/v1/payment_methods/${encodeURIComponent(paymentMethodId)}/detach`, {});
  }

  async createPortalSession(customerId: string, returnUrl: string): Promise<{ url: string }> {
    const session = await this.request('POST', '/v1/billing_portal/sessions', { customer: customerId, return_url: returnUrl });
    return { url: String(session.url) };
  }

  async chargeOffSession(input: OffSessionChargeInput): Promise<{ id: string; status: string }> {
    const intent = await this.request(
      'POST',
      '/v1/payment_intents',
      {
        amount: input.amountCents,
        currency: 'usd',
        customer: input.customerId,
        payment_method: input.paymentMethodId,
        off_session: true,
        confirm: true,
        metadata: { workspace_id: input.workspaceId, purpose: input.purpose },
      },
      input.idempotencyKey,
    );
    return { id: intent.id, status: String(intent.status) };
  }

  webhookSecret(): Promise<string | undefined> {
    return this.options.webhookSecret();
  }

  private async request(method: 'GET' | 'POST', path: string, params?: Form, idempotencyKey?: string): Promise<StripeObject> {
    const key = await this.options.secretKey();
    if (!key) throw badGateway('Payment provider stripe is not configured (STRIPE_SECRET_KEY)');
    const body = method === 'POST' ? stripeForm(params ?? {}).join('&') : undefined;
    let response: Response;
    try {
      response = await traced('stripe', () => fetch(`${this.options.baseUrl.replace(/\/$/, '')}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${key}`,
          ...(body !== undefined ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
          ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}),
        },
        body,
        redirect: 'error',
        signal: AbortSignal.timeout(STRIPE_TIMEOUT_MS),
      }));
    } catch (error) {
      logger.warn('Stripe unreachable', { error, path });
      throw badGateway('Payment provider stripe failed: unreachable');
    }
    let json: { error?: { type?: string; code?: string; message?: string } } & Partial<StripeObject>;
    try {
      json = (await response.json()) as typeof json;
    } catch {
      throw badGateway(`Payment provider stripe failed: ${response.status} unreadable answer`);
    }
    if (response.ok && typeof json.id === 'string') return json as StripeObject;
    if (response.ok && method === 'GET' && Array.isArray((json as { data?: unknown }).data)) return { id: '', ...json } as StripeObject;
    const error = json.error ?? {};
    if (response.status === 402 || error.type === 'card_error') {
      throw paymentRequired(`Payment failed: ${error.message ?? 'the card was declined'}`);
    }
    if (response.status === 404 || error.code === 'resource_missing') throw new NotFoundAtStripe(path);
    logger.warn('Stripe refused a request', { path, status: response.status, code: error.code, message: error.message });
    throw badGateway(`Payment provider stripe failed: ${response.status}${error.code ? ` ${error.code}` : ''}`);
  }
}

function toPaymentMethod(object: StripeObject): PaymentMethodInfo {
  const card = (object.card ?? {}) as { brand?: string; last4?: string; exp_month?: number; exp_year?: number };
  const customer = object.customer as string | { id: string } | null | undefined;
  return {
    id: object.id,
    type: String(object.type ?? 'card'),
    brand: card.brand ?? null,
    last4: card.last4 ?? null,
    exp_month: card.exp_month ?? null,
    exp_year: card.exp_year ?? null,
    customer: typeof customer === 'string' ? customer : (customer?.id ?? null),
  };
}
