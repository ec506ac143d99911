import * as z from 'zod';
import { httpUrl, lazySchema } from '../../platform/http/schemas.ts';
import { usdAmount } from '../schemas.ts';

/*
 * The payments' API contract (docs/billing.md, "Payments: Stripe and the mock"): checkouts
 * that buy credit or pay an invoice, the mock's checkout page, saved payment methods, the
 * customer portal and Stripe's webhook.
 */

export const CheckoutBody = lazySchema(() =>
  z.object({
    amount_usd: usdAmount(5, 10_000),
    success_url: httpUrl().optional(),
    cancel_url: httpUrl().optional(),
  }),
);
export type CheckoutInput = z.infer<typeof CheckoutBody>;
export const CheckoutView = lazySchema(() =>
  z.object({ checkout_session_id: z.string(), url: z.string(), amount_usd: z.number(), provider: z.enum(['stripe', 'mock']) }),
);
export const PayInvoiceBody = lazySchema(() => z.object({ success_url: httpUrl().optional(), cancel_url: httpUrl().optional() }));
export type PayInvoiceInput = z.infer<typeof PayInvoiceBody>;
export const CheckoutSessionBody = lazySchema(() => z.object({ amount_usd: usdAmount(5, 10_000) }));
export const UrlView = lazySchema(() => z.object({ url: z.string() }));
export const mockCheckoutParams = lazySchema(() => z.object({ token: z.string().regex(/^[\w-]{43}$/, 'Must be a checkout token') }));
export const MockCheckoutActionBody = lazySchema(() => z.object({ action: z.enum(['pay', 'cancel']) }));
export const PortalBody = lazySchema(() => z.object({ return_url: httpUrl().optional() }));

const PaymentMethodView = lazySchema(() =>
  z.object({
    id: z.string(),
    type: z.string(),
    brand: z.string().nullable(),
    last4: z.string().nullable(),
    exp_month: z.number().nullable(),
    exp_year: z.number().nullable(),
    is_default: z.boolean(),
  }),
);
export const PaymentMethodList = lazySchema(() => z.array(PaymentMethodView));
export const SetupIntentView = lazySchema(() => z.object({ setup_intent_id: z.string(), client_secret: z.string(), provider: z.enum(['stripe', 'mock']) }));
export const DefaultPaymentMethodBody = lazySchema(() => z.object({ payment_method_id: z.string().min(1).max(255) }));
export const paymentMethodIdParams = lazySchema(() => z.object({ id: z.string().min(1).max(255) }));

export const StripeWebhookView = lazySchema(() => z.object({ received: z.literal(true), duplicate: z.boolean(), applied: z.string() }));
