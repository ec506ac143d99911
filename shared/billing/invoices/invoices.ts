import { createHash } from 'node:crypto';
import { badRequest, notFound } from '../../platform/errors.ts';
import { escapeHtml } from '../../platform/text/text.ts';
import { billingNow, dayOf, monthBounds, monthOf, previousMonth } from '../clock.ts';
import { ensureAccount } from '../entries.ts';
import { INVOICE_OVERDUE_DAYS, toUsd } from '../prices.ts';
import type { InvoiceView } from './schemas.ts';
import { billingStore, CHARGE_KINDS, creditsAttribute, CREDIT_KINDS, type BillingAccountItem, type InvoiceItem, type InvoiceLine } from '../store.ts';

/*
 * Monthly usage invoices: one per workspace and month (its ID derived from both, so the
 * hourly job and `POST /billing/invoices/usage` never make two). Its lines are the month's
 * charges in the ledger by product, so they sum to the ledger exactly. Billing is prepaid:
 * what credit covered is paid already, so an invoice is `paid` unless the balance was below
 * zero when it was issued; then it is `open` for that amount (at most its total) until a
 * credit brings the balance back to zero (settle.ts), and `overdue` after 14 days, which
 * blocks spending (402 invoice_overdue).
 */

const PRODUCT_NAMES: Record<string, string> = {
  voice_engine: 'Voice engine',
  llm: 'Language model',
  telephony: 'Telephony',
  concurrency_burst: 'Burst concurrency',
  batch_dial: 'Batch dials',
  purchased_concurrency: 'Purchased concurrency slots',
  chat: 'Chat messages',
  sms: 'SMS sent',
  simulation: 'Test simulations',
  qa_scoring: 'QA scoring minutes',
  conductor: 'Assistant credits',
};

const DAY_MS = 24 * 60 * 60 * 1000;
const MONTH = /^\d{4}-(0[1-9]|1[0-2])$/;

export const invoiceIdFor = (workspaceId: string, period: string) =>
  `invoice_${createHash('sha256').update(`${workspaceId}:${period}`).digest('hex').slice(0, 24)}`;

function invoiceView(item: InvoiceItem, nowMs = billingNow()): InvoiceView {
  const dueTimestamp = item.created_timestamp + INVOICE_OVERDUE_DAYS * DAY_MS;
  return {
    invoice_id: item.invoice_id,
    period: item.period,
    period_start: item.period_start,
    period_end: item.period_end,
    status: item.status === 'open' && nowMs >= dueTimestamp ? 'overdue' : item.status,
    currency: 'usd',
    lines: item.lines.map((line) => ({ product: line.product, description: line.description, amount_usd: toUsd(line.amount) })),
    total_usd: toUsd(item.total),
    credits_usd: toUsd(item.credits),
    amount_due_usd: item.status === 'paid' ? 0 : toUsd(item.amount_due),
    created_timestamp: item.created_timestamp,
    due_timestamp: dueTimestamp,
    paid_timestamp: item.paid_timestamp ?? null,
    html_url: `/billing/invoices/${item.invoice_id}/html`,
  };
}

type MonthSums = { byProduct: Map<string, number>; credits: number };

/**
 * A month's charges by product and its credits from its usage days (at most 31 items) and
 * the account's `credits_<YYYYMM>`: each written in the transaction of every entry, so they
 * sum what the ledger holds, at a cost that does not grow with the month's calls.
 */
async function monthFromUsageDays(workspaceId: string, month: string, account: BillingAccountItem): Promise<MonthSums> {
  const { start, end } = monthBounds(month);
  const byProduct = new Map<string, number>();
  for (const day of await billingStore.usageDays(workspaceId, dayOf(start), dayOf(end - 1))) {
    for (const [name, amount] of Object.entries(day)) if (name.startsWith('p_')) byProduct.set(name.slice(2), (byProduct.get(name.slice(2)) ?? 0) + (amount as number));
  }
  return { byProduct, credits: account[creditsAttribute(month)] ?? 0 };
}

/** The same from the ledger's entries, for months before the account's usage days were complete. */
async function monthFromLedger(workspaceId: string, start: number, end: number): Promise<MonthSums> {
  const byProduct = new Map<string, number>();
  let credits = 0;
  for (const entry of await billingStore.entries(workspaceId, { fromMs: start, toMs: end })) {
    if (CREDIT_KINDS.has(entry.kind)) credits += entry.amount;
    if (!CHARGE_KINDS.has(entry.kind) || entry.amount >= 0) continue;
    const lines = entry.lines ?? { [entry.kind]: -entry.amount };
    for (const [product, amount] of Object.entries(lines)) byProduct.set(product, (byProduct.get(product) ?? 0) + amount);
  }
  return { byProduct, credits };
}

/** The month's invoice, issued now if it was not yet (the month must have ended). */
export async function issueMonthlyInvoice(workspaceId: string, period?: string): Promise<{ invoice: InvoiceView; created: boolean }> {
  const nowMs = billingNow();
  const month = period ?? previousMonth(monthOf(nowMs));
  if (!MONTH.test(month)) throw badRequest('month: Must be a month as YYYY-MM');
  const { start, end } = monthBounds(month);
  if (end > nowMs) throw badRequest(`month: ${month} has not ended; its invoice is issued once it has`);
  const invoiceId = invoiceIdFor(workspaceId, month);
  const existing = await billingStore.invoice(workspaceId, invoiceId);
  if (existing) return { invoice: invoiceView(existing, nowMs), created: false };

  const account = await ensureAccount(workspaceId);
  const { byProduct, credits } =
    account.usage_days_since !== undefined && account.usage_days_since <= month
      ? await monthFromUsageDays(workspaceId, month, account)
      : await monthFromLedger(workspaceId, start, end);
  const lines: InvoiceLine[] = [...byProduct.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([product, amount]) => ({ product, description: PRODUCT_NAMES[product] ?? product, amount }));
  const total = lines.reduce((sum, line) => sum + line.amount, 0);
  const amountDue = account.balance < 0 ? Math.min(total, -account.balance) : 0;
  const item: Omit<InvoiceItem, 'pk' | 'sk'> = {
    workspace_id: workspaceId,
    invoice_id: invoiceId,
    period: month,
    period_start: start,
    period_end: end,
    lines,
    total,
    credits,
    amount_due: amountDue,
    status: amountDue > 0 ? 'open' : 'paid',
    created_timestamp: nowMs,
    ...(amountDue > 0 ? {} : { paid_timestamp: nowMs }),
  };
  const created = await billingStore.createInvoice(item);
  const stored = created ? item : await billingStore.invoice(workspaceId, invoiceId);
  return { invoice: invoiceView(stored as InvoiceItem, nowMs), created };
}

export async function listInvoices(workspaceId: string): Promise<InvoiceView[]> {
  const nowMs = billingNow();
  return (await billingStore.invoices(workspaceId)).sort((a, b) => b.period.localeCompare(a.period)).map((item) => invoiceView(item, nowMs));
}

const usd = (value: number) => `$${value.toFixed(2)}`;
const date = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/** A printable invoice (every value escaped). */
export async function invoiceHtml(workspaceId: string, invoiceId: string): Promise<string> {
  const item = await billingStore.invoice(workspaceId, invoiceId);
  if (!item) throw notFound(`Invoice ${invoiceId} not found`);
  const invoice = invoiceView(item);
  const rows = invoice.lines
    .map((line) => `<tr><td>${escapeHtml(line.description)}</td><td class="n">${usd(line.amount_usd)}</td></tr>`)
    .join('\n');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Invoice ${escapeHtml(invoice.invoice_id)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:40rem;margin:2rem auto;color:#111}table{width:100%;border-collapse:collapse}td,th{padding:.4rem;border-bottom:1px solid #ddd;text-align:left}.n{text-align:right}@media print{body{margin:0}}</style>
</head><body>
<h1>Invoice</h1>
<p>Invoice <strong>${escapeHtml(invoice.invoice_id)}</strong><br>Workspace ${escapeHtml(workspaceId)}<br>
Period ${escapeHtml(invoice.period)} (${date(invoice.period_start)} to ${date(invoice.period_end - 1)})<br>
Issued ${date(invoice.created_timestamp)}, due ${date(invoice.due_timestamp)}<br>Status: <strong>${escapeHtml(invoice.status)}</strong></p>
<table><thead><tr><th>Usage</th><th class="n">Amount (USD)</th></tr></thead><tbody>
${rows || '<tr><td>No usage</td><td class="n">$0.00</td></tr>'}
</tbody><tfoot>
<tr><th>Total</th><th class="n">${usd(invoice.total_usd)}</th></tr>
<tr><td>Credits added in the period</td><td class="n">${usd(invoice.credits_usd)}</td></tr>
<tr><th>Amount due</th><th class="n">${usd(invoice.amount_due_usd)}</th></tr>
</tfoot></table>
</body></html>
`;
}
