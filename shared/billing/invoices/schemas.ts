import * as z from 'zod';
import { epochMs, lazySchema } from '../../platform/http/schemas.ts';

/** The invoices' API contract (docs/billing.md, Invoices): monthly usage invoices, listed, issued and printed. */

export const InvoiceView = lazySchema(() =>
  z.object({
    invoice_id: z.string(),
    period: z.string().describe('YYYY-MM (UTC)'),
    period_start: epochMs(),
    period_end: epochMs(),
    status: z.enum(['open', 'paid', 'overdue']),
    currency: z.literal('usd'),
    lines: z.array(z.object({ product: z.string(), description: z.string(), amount_usd: z.number() })),
    total_usd: z.number(),
    credits_usd: z.number(),
    amount_due_usd: z.number(),
    created_timestamp: epochMs(),
    due_timestamp: epochMs(),
    paid_timestamp: epochMs().nullable(),
    html_url: z.string(),
  }),
);
export type InvoiceView = z.infer<typeof InvoiceView>;
export const InvoiceList = lazySchema(() => z.array(InvoiceView));
export const IssueInvoiceBody = lazySchema(() => z.object({ month: z.string().optional().describe('YYYY-MM; default the previous month') }));
export const IssuedInvoiceView = lazySchema(() => z.object({ invoice: InvoiceView, created: z.boolean() }));
