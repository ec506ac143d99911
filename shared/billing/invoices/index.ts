/**
 * Monthly usage invoices (docs/billing.md, Invoices): issued once per workspace and month
 * from the ledger's charges, listed and printed (invoices.ts); and the open ones paid when a
 * credit brings the balance back to zero (settle.ts), which the ledger's effects and the
 * payment events run. Routes: routes.ts (paying an invoice is a checkout, in
 * ../payments/routes.ts); schemas: schemas.ts.
 */
export { invoiceHtml, invoiceIdFor, issueMonthlyInvoice, listInvoices } from './invoices.ts';
export { settleInvoices } from './settle.ts';
