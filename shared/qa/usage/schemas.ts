import * as z from 'zod';
import { lazySchema } from '../../platform/http/schemas.ts';

/* QA usage (docs/qa.md, "Usage and billing"): a month's scored minutes, the free allowance and the charges beyond it. */

export const UsageQuery = lazySchema(() =>
  z.object({ month: z.string().regex(/^\d{4}-(0[1-9]|1[0-2])$/, 'Must be a month, YYYY-MM').optional().describe('Default: this month (UTC)') }),
);
export type UsageInput = z.infer<typeof UsageQuery>;

export const QaUsage = lazySchema(() =>
  z.object({
    month: z.string(),
    minutes_scored: z.number().int().describe("The scored calls' durations, each rounded up to the minute"),
    results_scored: z.number().int(),
    free_minutes: z.number().int().describe('The free allowance of a month'),
    free_minutes_left: z.number().int(),
    billable_minutes: z.number().int().describe('Minutes beyond the free allowance'),
    price_per_minute_usd: z.number(),
    charges_usd: z.number().describe('billable_minutes × price_per_minute_usd, charged in the billing ledger (kind qa_charge, line qa_scoring)'),
  }),
);
export type QaUsage = z.infer<typeof QaUsage>;
