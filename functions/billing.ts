import { domainHandler } from '../shared/platform/http/handler.ts';
import { billingRoutes } from '../shared/billing/routes.ts';
import { chargeRoutes } from '../shared/billing/charges/routes.ts';
import { invoiceRoutes } from '../shared/billing/invoices/routes.ts';
import { paymentRoutes } from '../shared/billing/payments/routes.ts';
import { spendRoutes } from '../shared/billing/spend/routes.ts';
import * as billing from '../shared/billing/api.ts';

export const handler = domainHandler({ ...billingRoutes, ...spendRoutes, ...chargeRoutes, ...invoiceRoutes, ...paymentRoutes }, {
  getBilling: ({ principal, query }) => billing.getBilling(principal.workspaceId, query.limit),
  addCredits: ({ principal, body }) => billing.addCredits(principal.workspaceId, body),
  getBillingSettings: ({ principal }) => billing.getBillingSettings(principal.workspaceId),
  updateBillingSettings: ({ principal, body }) => billing.updateBillingSettings(principal.workspaceId, body),
  checkSpend: ({ principal, body }) => billing.checkSpendFor(principal.workspaceId, body.action),
  checkout: ({ principal, body }) => billing.createCheckout(principal.workspaceId, body),
  listInvoices: ({ principal }) => billing.listInvoices(principal.workspaceId),
  issueUsageInvoice: ({ principal, body }) => billing.issueMonthlyInvoice(principal.workspaceId, body.month),
  invoiceHtml: ({ principal, params }) => billing.invoiceHtml(principal.workspaceId, params.id),
  payInvoice: ({ principal, params, body }) => billing.createInvoiceCheckout(principal.workspaceId, params.id, body),
  getUsage: ({ principal, query }) => billing.workspaceUsage(principal.workspaceId, query),
  listPaymentMethods: ({ principal }) => billing.listPaymentMethods(principal.workspaceId),
  createSetupIntent: ({ principal }) => billing.createSetupIntent(principal.workspaceId),
  setDefaultPaymentMethod: ({ principal, body }) => billing.setDefaultPaymentMethod(principal.workspaceId, body.payment_method_id),
  deletePaymentMethod: ({ principal, params }) => billing.deletePaymentMethod(principal.workspaceId, params.id),
  createCheckoutSession: async ({ principal, body }) => ({ url: (await billing.createCheckout(principal.workspaceId, body)).url }),
  createPortalSession: ({ principal, body }) => billing.createPortal(principal.workspaceId, body.return_url),
  getPlatformUsage: ({ principal, query }) => billing.platformUsage(principal, query),
  stripeWebhook: ({ request }) => billing.receiveStripeWebhook(request.rawBody, request.headers['stripe-signature']),
  mockCheckoutPage: ({ params }) => billing.mockCheckoutPage(params.token),
  mockCheckoutAction: ({ params, body }) => billing.mockCheckoutAction(params.token, body.action),
  getConcurrencyBilling: ({ principal }) => billing.concurrencyBilling(principal.workspaceId),
  chargeConcurrency: async ({ principal }) => {
    const charged = await billing.chargePurchasedConcurrency(principal.workspaceId);
    return billing.concurrencyBilling(principal.workspaceId, charged);
  },
});
