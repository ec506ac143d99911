/**
 * The billing function's operations (functions/billing.ts). Other domains use index.ts,
 * which stays small; this is what the billing routes call. The payment operations come from
 * their modules, not payments/index.ts, which stays free of the `stripe` package.
 */
export { addCredits, getBilling, getBillingSettings, updateBillingSettings } from './billing.ts';
export { chargePurchasedConcurrency, concurrencyBilling, platformUsage, workspaceUsage } from './charges/index.ts';
export { invoiceHtml, issueMonthlyInvoice, listInvoices } from './invoices/index.ts';
export { mockCheckoutAction, mockCheckoutPage } from './payments/mock-checkout.ts';
export { createCheckout, createInvoiceCheckout, createPortal, createSetupIntent, deletePaymentMethod, listPaymentMethods, setDefaultPaymentMethod } from './payments/payments.ts';
export { receiveStripeWebhook } from './payments/stripe-webhook.ts';
export { checkSpendFor } from './spend/check.ts';
