/**
 * The billing function's operations (functions/billing.ts). Other domains use index.ts,
 * which stays small; this is what the billing routes call.
 */
export { addCredits, getBilling, getBillingSettings, updateBillingSettings } from './billing.ts';
export { checkSpendFor } from './check.ts';
export { chargePurchasedConcurrency, concurrencyBilling } from './concurrency-billing.ts';
export { invoiceHtml, issueMonthlyInvoice, listInvoices } from './invoices.ts';
export { mockCheckoutAction, mockCheckoutPage } from './mock-checkout.ts';
export { createCheckout, createInvoiceCheckout, createPortal, createSetupIntent, deletePaymentMethod, listPaymentMethods, setDefaultPaymentMethod } from './payments.ts';
export { receiveStripeWebhook } from './stripe-webhook.ts';
export { platformUsage, workspaceUsage } from './usage.ts';
