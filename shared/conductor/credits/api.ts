import { billingNow, CONDUCTOR_CREDIT_USD, conductorSpendSettings, dayOf, monthOf } from '../../billing/index.ts';
import { config } from '../../platform/config.ts';
import { invalidPaginationKey } from '../../platform/errors.ts';
import { idPattern } from '../../platform/ids.ts';
import { TOKENS_PER_CREDIT } from './credits.ts';
import type { ConductorCredits, ConductorLedgerEntry, ConductorLedgerInput } from './schemas.ts';
import { ledgerPage, readCounters, type ConductorLedgerItem } from './store.ts';

/* GET /conductor/credits and GET /conductor/ledger (docs/assistant.md, "Credits"), on billing's clock. */

export async function conductorCredits(workspaceId: string): Promise<ConductorCredits> {
  const nowMs = billingNow();
  const date = dayOf(nowMs);
  const month = monthOf(nowMs);
  const [settings, counters] = await Promise.all([conductorSpendSettings(workspaceId), readCounters(workspaceId, date, month)]);
  const free = config.CONDUCTOR_FREE_CREDITS_PER_DAY;
  const used = counters.day.used ?? 0;
  const monthUsed = counters.month.used ?? 0;
  return {
    date,
    free_credits: free,
    used_credits: used,
    remaining_free_credits: Math.max(0, free - used),
    paid_credits: counters.day.paid,
    pay_as_you_go: settings.pay_as_you_go,
    monthly_limit: settings.monthly_limit,
    month,
    month_used_credits: monthUsed,
    month_remaining_credits: settings.monthly_limit === null ? null : Math.max(0, settings.monthly_limit - monthUsed),
    tokens_per_credit: TOKENS_PER_CREDIT,
    credit_price_usd: CONDUCTOR_CREDIT_USD,
  };
}

const entryView = (item: ConductorLedgerItem): ConductorLedgerEntry => ({
  entry_id: item.entry_id,
  session_id: item.session_id,
  message_id: item.message_id,
  input_tokens: item.input_tokens,
  output_tokens: item.output_tokens,
  credits: item.credits,
  free_credits: item.free_credits,
  paid_credits: item.paid_credits,
  paid: item.paid_credits > 0,
  cost_usd: item.cost_micros / 1_000_000,
  created_timestamp: item.created_timestamp,
});

/** The ledger, newest first: `limit` entries after `pagination_key` (the previous page's last entry_id). */
export async function conductorLedger(workspaceId: string, query: ConductorLedgerInput): Promise<ConductorLedgerEntry[]> {
  if (query.pagination_key !== undefined && !idPattern('conductorCharge').test(query.pagination_key)) throw invalidPaginationKey();
  return (await ledgerPage(workspaceId, query.limit, query.pagination_key)).map(entryView);
}
