import { defineRoutes } from '../../platform/http/route.ts';
import { invoiceIdParams } from '../schemas.ts';
import {
  CheckoutBody,
  CheckoutSessionBody,
  CheckoutView,
  DefaultPaymentMethodBody,
  MockCheckoutActionBody,
  mockCheckoutParams,
  PayInvoiceBody,
  paymentMethodIdParams,
  PaymentMethodList,
  PortalBody,
  SetupIntentView,
  StripeWebhookView,
  UrlView,
} from './schemas.ts';

/*
 * Payments (docs/billing.md, "Payments: Stripe and the mock"), served by the billing function:
 * checkouts, paying an invoice, payment methods, the portal; Stripe's webhook is public and
 * authenticated by its signature, the mock's checkout page by the token in its URL.
 */
export const paymentRoutes = defineRoutes({ domain: 'billing', access: 'admin' }, {
  checkout: {
    method: 'POST', path: '/billing/checkout', status: 200, role: 'admin',
    summary: 'Start a checkout that buys credit (credited when the payment provider confirms it)',
    body: CheckoutBody, response: CheckoutView, throttle: 'vendor',
  },
  payInvoice: {
    method: 'POST', path: '/billing/invoices/{id}/pay', status: 200, role: 'admin',
    summary: 'Start a checkout that pays an open invoice (paid when the payment provider confirms it)',
    params: invoiceIdParams, body: PayInvoiceBody, response: CheckoutView, throttle: 'vendor',
  },
  listPaymentMethods: {
    method: 'GET', path: '/billing/payment-methods', status: 200, role: 'admin',
    summary: 'Saved payment methods',
    response: PaymentMethodList, throttle: 'vendor',
  },
  createSetupIntent: {
    method: 'POST', path: '/billing/payment-methods/setup-intent', status: 200, role: 'admin',
    summary: 'Start saving a card (a setup intent\'s client secret for the payment page)',
    response: SetupIntentView, throttle: 'vendor',
  },
  setDefaultPaymentMethod: {
    method: 'POST', path: '/billing/payment-methods/default', status: 200, role: 'admin',
    summary: 'Make a saved payment method the default (auto-recharge charges it)',
    body: DefaultPaymentMethodBody, response: PaymentMethodList, throttle: 'vendor',
  },
  deletePaymentMethod: {
    method: 'DELETE', path: '/billing/payment-methods/{id}', status: 204, role: 'admin',
    summary: 'Remove a saved payment method',
    params: paymentMethodIdParams, throttle: 'vendor',
  },
  createCheckoutSession: {
    method: 'POST', path: '/billing/checkout-session', status: 200, role: 'admin',
    summary: 'A checkout page URL that buys amount_usd of credit',
    body: CheckoutSessionBody, response: UrlView, throttle: 'vendor',
  },
  createPortalSession: {
    method: 'POST', path: '/billing/portal', status: 200, role: 'admin',
    summary: 'A customer portal URL (payment methods, receipts)',
    body: PortalBody, response: UrlView, throttle: 'vendor',
  },
  stripeWebhook: {
    method: 'POST', path: '/billing/stripe/webhook', status: 200, access: 'public',
    summary: 'Stripe\'s webhook events (verified by the Stripe-Signature header; a replayed event changes nothing)',
    response: StripeWebhookView,
  },
  mockCheckoutPage: {
    method: 'GET', path: '/billing/mock-checkout/{token}', status: 200, access: 'public',
    summary: 'The built-in payments mock\'s checkout page (amount, Pay, Cancel); the token in its URL is its credential',
    params: mockCheckoutParams, produces: 'text/html; charset=utf-8', cors: 'same-origin',
  },
  mockCheckoutAction: {
    method: 'POST', path: '/billing/mock-checkout/{token}', status: 200, access: 'public', bodyType: 'json-or-form',
    summary: 'The mock checkout page\'s form: pay (adds the credit once) or cancel, then 303 to the success or cancel URL',
    params: mockCheckoutParams, body: MockCheckoutActionBody, produces: 'text/html; charset=utf-8', cors: 'same-origin',
  },
});
