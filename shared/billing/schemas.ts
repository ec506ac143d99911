import * as z from 'zod';
import { epochMs, lazySchema, queryInt } from '../platform/http/schemas.ts';

/*
 * The billing API contract (spec: Billing endpoint group; the spec shows no shapes beyond
 * names, and retell-sdk has no billing resource, so these are ours: docs/billing.md).
 * Amounts are USD numbers (exact to the micro-dollar); the ledger keeps integer µUSD. This
 * file holds the shapes of the overview, the settings and granted credit, and what the
 * parts' own schemas.ts build on (an amount in USD, the spend decision, an invoice's ID);
 * each part keeps the rest beside its routes.
 */

const ENTRY_KINDS = ['free_credit', 'credit_grant', 'credit_purchase', 'auto_recharge', 'call_charge', 'batch_dial', 'purchased_concurrency', 'chat_charge', 'sms_charge', 'simulation_charge', 'qa_charge', 'conductor_charge', 'refund', 'dispute_hold', 'dispute_release', 'invoice_payment'] as const;

/** USD in whole cents. */
export const usdAmount = (min: number, max: number) =>
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

/** An invoice's ID in a path: the invoices' routes and paying one (payments/routes.ts). */
export const invoiceIdParams = lazySchema(() => z.object({ id: z.string().regex(/^invoice_[0-9a-f]{24}$/, 'Must be an invoice ID') }));

export const SpendDecisionView = lazySchema(() =>
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

const CONDUCTOR_PAY_AS_YOU_GO = 'The assistant may use credits beyond its free daily credits, each charged at the assistant credit price (docs/assistant.md, "Credits"); off: 402 conductor_credits_exhausted once they are used';
const CONDUCTOR_MONTHLY_LIMIT = 'The assistant credits a month (UTC) may use, free ones included; reached: 402 conductor_limit_reached whatever pay-as-you-go says. null: no limit';

export const BillingSettingsView = lazySchema(() =>
  z.object({
    monthly_budget_usd: z.number().nullable(),
    auto_recharge: AutoRecharge.nullable(),
    conductor_pay_as_you_go: z.boolean().describe(CONDUCTOR_PAY_AS_YOU_GO),
    conductor_monthly_limit: z.number().int().nullable().describe(CONDUCTOR_MONTHLY_LIMIT),
  }),
);
export type BillingSettingsView = z.infer<typeof BillingSettingsView>;

export const UpdateBillingSettingsBody = lazySchema(() =>
  z.object({
    monthly_budget_usd: usdAmount(0.01, 10_000_000).nullable().optional(),
    auto_recharge: AutoRecharge.nullable().optional(),
    conductor_pay_as_you_go: z.boolean().optional().describe(CONDUCTOR_PAY_AS_YOU_GO),
    conductor_monthly_limit: z.number().int().min(0).max(100_000_000).nullable().optional().describe(CONDUCTOR_MONTHLY_LIMIT),
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
