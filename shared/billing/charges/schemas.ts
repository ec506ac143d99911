import * as z from 'zod';
import { epochMs, lazySchema } from '../../platform/http/schemas.ts';

/*
 * The charges' API contract (docs/billing.md): usage reports by day and product (a
 * workspace's, and the operator's across workspaces) and concurrency billing.
 */

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
