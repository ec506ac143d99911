import { billingNow, monthOf, QA_MINUTE_USD } from '../../billing/index.ts';
import { config } from '../../platform/config.ts';
import type { QaUsage, UsageInput } from './schemas.ts';
import { usageMonth } from './store.ts';

/* `GET /qa/usage` (docs/qa.md, "Usage and billing"): one read of the month's QA minutes (charge.ts counts them). */

export async function qaUsage(workspaceId: string, query: UsageInput): Promise<QaUsage> {
  const month = query.month ?? monthOf(billingNow());
  const used = await usageMonth(workspaceId, month);
  const free = config.QA_FREE_MINUTES_PER_MONTH;
  return {
    month,
    minutes_scored: used.minutes,
    results_scored: used.results,
    free_minutes: free,
    free_minutes_left: Math.max(0, free - used.minutes),
    billable_minutes: used.billable_minutes,
    price_per_minute_usd: QA_MINUTE_USD,
    // In whole micro-dollars, as the ledger charges them.
    charges_usd: (Math.round(QA_MINUTE_USD * 1_000_000) * used.billable_minutes) / 1_000_000,
  };
}
