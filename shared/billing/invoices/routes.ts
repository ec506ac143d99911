import { defineRoutes } from '../../platform/http/route.ts';
import { invoiceIdParams } from '../schemas.ts';
import { InvoiceList, IssueInvoiceBody, IssuedInvoiceView } from './schemas.ts';

/* Monthly invoices (docs/billing.md, Invoices), served by the billing function; paying one is a checkout (../payments/routes.ts). */
export const invoiceRoutes = defineRoutes({ domain: 'billing', access: 'admin' }, {
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
});
