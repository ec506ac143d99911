import * as z from 'zod';
import { epochMs, httpUrl, lazySchema, queryInt } from '../platform/http/schemas.ts';

/*
 * The billing API contract (spec: Billing endpoint group; the spec shows no shapes beyond
 * names, and retell-sdk has no billing resource, so these are ours: docs/billing.md).
 * Amounts are USD numbers (exact to the micro-dollar); the ledger keeps integer µUSD.
 */

const SPEND_ACTION_NAMES = ['phone_call', 'web_call', 'register_call', 'batch_call', 'chat', 'sms'] as const;
const ENTRY_KINDS = ['free_credit', 'credit_grant', 'credit_purchase', 'auto_recharge', 'call_charge', 'batch_dial', 'purchased_concurrency', 'chat_charge', 'sms_charge', 'refund', 'dispute_hold', 'dispute_release', 'invoice_payment'] as const;

/** USD in whole cents. */
const usdAmount = (min: number, max: number) =>
  z
    .number()
    .min(min)
    .max(max)
    .refine((value) => Math.abs(value * 100 - Math.round(value * 100)) < 1e-6, 'Must have at most 2 decimal places');

export const LedgerEntryView = lazySchema(() =>
  z.object({
    entry_id: z.string(),
    kind: z.enum(ENTRY_KINDS),
    amount_usd: z.number().describe('Signed: credits positive, charges negative'),
    lines: z.record(z.string(), z.number()).describe('Charges by product line, USD'),
    description: z.string(),
    reference: z.string().nullable(),
    created_timestamp: epochMs(),
  }),
);
export type LedgerEntryView = z.infer<typeof LedgerEntryView>;

const SpendDecisionView = lazySchema(() =>
  z.object({
    allowed: z.boolean(),
    error_code: z.string().nullable(),
    message: z.string().nullable(),
  }),
);

const AutoRecharge = lazySchema(() =>
  z.object({
    threshold_usd: usdAmount(0, 100_000),
    amount_usd: usdAmount(5, 10_000),
  }),
);

export const BillingSettingsView = lazySchema(() =>
  z.object({
    monthly_budget_usd: z.number().nullable(),
    auto_recharge: AutoRecharge.nullable(),
  }),
);
export type BillingSettingsView = z.infer<typeof BillingSettingsView>;

export const UpdateBillingSettingsBody = lazySchema(() =>
  z.object({
    monthly_budget_usd: usdAmount(0.01, 10_000_000).nullable().optional(),
    auto_recharge: AutoRecharge.nullable().optional(),
  }),
);
export type UpdateBillingSettingsInput = z.infer<typeof UpdateBillingSettingsBody>;

export const BillingView = lazySchema(() =>
  z.object({
    workspace_id: z.string(),
    currency: z.literal('usd'),
    balance_usd: z.number(),
    month: z.string(),
    month_charges_usd: z.number(),
    settings: BillingSettingsView,
    budget_remaining_usd: z.number().nullable(),
    spend: SpendDecisionView,
    open_invoice_ids: z.array(z.string()),
    payment_provider: z.enum(['stripe', 'mock']),
    default_payment_method: z.string().nullable(),
    entries: z.array(LedgerEntryView).describe('The newest ledger entries, newest first'),
  }),
);
export type BillingView = z.infer<typeof BillingView>;

export const BillingQuery = lazySchema(() => z.object({ limit: queryInt({ min: 1, max: 100, default: 20 }) }));

export const AddCreditsBody = lazySchema(() =>
  z.object({
    amount_usd: usdAmount(0.01, 100_000),
    description: z.string().trim().min(1).max(200).optional(),
    idempotency_key: z.string().min(1).max(200).optional(),
  }),
);
export type AddCreditsInput = z.infer<typeof AddCreditsBody>;

export const AddCreditsView = lazySchema(() => z.object({ entry: LedgerEntryView, duplicate: z.boolean(), balance_usd: z.number() }));

export const CheckSpendBody = lazySchema(() => z.object({ action: z.enum(SPEND_ACTION_NAMES).default('phone_call') }));
export const CheckSpendView = lazySchema(() => SpendDecisionView.extend({ action: z.enum(SPEND_ACTION_NAMES) }));

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
export const invoiceIdParams = lazySchema(() => z.object({ id: z.string().regex(/^invoice_[0-9a-f]{24}$/, 'Must be an invoice ID') }));

const day = () => z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'Must be a date as YYYY-MM-DD').refine((value) => !Number.isNaN(Date.parse(`${value}T00:00:00Z`)) && new Date(`${value}T00:00:00Z`).toISOString().startsWith(value), 'Must be a real date');
export const UsageQuery = lazySchema(() => z.object({ start_date: day().optional(), end_date: day().optional() }));
export type UsageQueryInput = z.infer<typeof UsageQuery>;

export const UsageView = lazySchema(() =>
  z.object({
    start_date: z.string(),
    end_date: z.string(),
    days: z.array(z.object({ date: z.string(), products: z.record(z.string(), z.number()), total_usd: z.number() })),
    totals: z.record(z.string(), z.number()),
    total_usd: z.number(),
  }),
);
export type UsageView = z.infer<typeof UsageView>;

export const PlatformUsageView = lazySchema(() =>
  z.object({
    start_date: z.string(),
    end_date: z.string(),
    workspaces: z.array(z.object({ workspace_id: z.string(), products: z.record(z.string(), z.number()), total_usd: z.number() })),
    totals: z.record(z.string(), z.number()),
    total_usd: z.number(),
  }),
);

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

export const ConcurrencyChargeView = lazySchema(() =>
  z.object({
    entry_id: z.string(),
    month: z.string(),
    slots: z.number().int(),
    amount_usd: z.number(),
    description: z.string(),
    created_timestamp: epochMs(),
  }),
);
export type ConcurrencyChargeView = z.infer<typeof ConcurrencyChargeView>;

export const ConcurrencyBillingView = lazySchema(() =>
  z.object({
    concurrency_limit: z.number().int(),
    included_concurrency: z.number().int(),
    purchased_concurrency: z.number().int(),
    slot_price_usd: z.number(),
    burst_price_per_minute_usd: z.number(),
    month: z.string(),
    billed_slots_this_month: z.number().int(),
    unbilled_slots: z.number().int(),
    charges: z.array(ConcurrencyChargeView).describe('Purchased-slot charges, newest first'),
    burst: z.object({ month: z.string(), minutes: z.number(), amount_usd: z.number() }),
    charged: ConcurrencyChargeView.nullable().optional().describe('POST …/charge: what this run charged (null: nothing was due)'),
  }),
);
export type ConcurrencyBillingView = z.infer<typeof ConcurrencyBillingView>;
