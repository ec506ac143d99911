import { lazySchema } from '../platform/http/schemas.ts';
import { defineRoutes } from '../platform/http/route.ts';
import {
  AddCreditsBody,
  AddCreditsView,
  BillingQuery,
  BillingSettingsView,
  BillingView,
  CheckoutBody,
  CheckoutSessionBody,
  CheckoutView,
  CheckSpendBody,
  CheckSpendView,
  ConcurrencyBillingView,
  DefaultPaymentMethodBody,
  invoiceIdParams,
  MockCheckoutActionBody,
  mockCheckoutParams,
  InvoiceList,
  IssueInvoiceBody,
  IssuedInvoiceView,
  PayInvoiceBody,
  paymentMethodIdParams,
  PaymentMethodList,
  PlatformUsageView,
  PortalBody,
  SetupIntentView,
  StripeWebhookView,
  UpdateBillingSettingsBody,
  UrlView,
  UsageQuery,
  UsageView,
} from './schemas.ts';


/*
 * Billing (spec: Billing endpoint group; Concurrency: concurrency billing). Admin scope for
 * keys (spec Authentication 4: billing matches no other scope) and the admin role for
 * sessions (Authentication 11: a developer does everything but billing, members, …);
 * Stripe's webhook is public and authenticated by its signature. docs/billing.md.
 */
export const billingRoutes = defineRoutes({ domain: 'billing', access: 'admin' }, {
  getBilling: {
    method: 'GET', path: '/billing', status: 200, role: 'admin',
    summary: 'Balance, this month\'s charges, budget, spend status and the newest ledger entries',
    query: BillingQuery, response: BillingView,
  },
  addCredits: {
    method: 'POST', path: '/billing/add-credits', status: 200, role: 'admin',
    summary: 'Grant credit (admin; refused in production, where credit comes only from a payment)',
    body: AddCreditsBody, response: AddCreditsView,
  },
  getBillingSettings: {
    method: 'GET', path: '/billing/settings', status: 200, role: 'admin',
    summary: 'Monthly budget and auto-recharge',
    response: lazySchema(() => BillingSettingsView),
  },
  updateBillingSettings: {
    method: 'PATCH', path: '/billing/settings', status: 200, role: 'admin',
    summary: 'Set the monthly budget and auto-recharge (null removes either)',
    body: UpdateBillingSettingsBody, response: lazySchema(() => BillingSettingsView),
  },
  checkSpend: {
    method: 'POST', path: '/billing/check', status: 200, role: 'admin',
    summary: 'What the spend check would decide for an action, without acting',
    body: CheckSpendBody, response: CheckSpendView,
  },
  checkout: {
    method: 'POST', path: '/billing/checkout', status: 200, role: 'admin',
    summary: 'Start a checkout that buys credit (credited when the payment provider confirms it)',
    body: CheckoutBody, response: CheckoutView, throttle: 'vendor',
  },
  listInvoices: {
    method: 'GET', path: '/billing/invoices', status: 200, role: 'admin',
    summary: 'Monthly invoices, newest first',
    response: InvoiceList,
  },
  issueUsageInvoice: {
    method: 'POST', path: '/billing/invoices/usage', status: 200, role: 'admin',
    summary: 'Issue the usage invoice of an ended month now (the same invoice the hourly job issues)',
    body: IssueInvoiceBody, response: IssuedInvoiceView,
  },
  invoiceHtml: {
    method: 'GET', path: '/billing/invoices/{id}/html', status: 200, role: 'admin',
    summary: 'An invoice as a printable HTML page',
    params: invoiceIdParams, produces: 'text/html; charset=utf-8',
  },
  payInvoice: {
    method: 'POST', path: '/billing/invoices/{id}/pay', status: 200, role: 'admin',
    summary: 'Start a checkout that pays an open invoice (paid when the payment provider confirms it)',
    params: invoiceIdParams, body: PayInvoiceBody, response: CheckoutView, throttle: 'vendor',
  },
  getUsage: {
    method: 'GET', path: '/billing/usage', status: 200, role: 'admin',
    summary: 'Charges by day and product with totals for a date range (UTC days; default this month)',
    query: UsageQuery, response: UsageView,
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
  getPlatformUsage: {
    method: 'GET', path: '/billing/platform-usage', status: 200, role: 'admin',
    summary: 'Charges across every workspace for a date range (operator keys only)',
    query: UsageQuery, response: PlatformUsageView,
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
  getConcurrencyBilling: {
    method: 'GET', path: '/concurrency-billing', status: 200, role: 'admin',
    summary: 'Purchased concurrency slots, their monthly charges and this month\'s burst minutes',
    response: ConcurrencyBillingView,
  },
  chargeConcurrency: {
    method: 'POST', path: '/concurrency-billing/charge', status: 200, role: 'admin',
    summary: 'Charge this month\'s purchased slots not yet charged, now (idempotent per month)',
    response: ConcurrencyBillingView,
  },
});
