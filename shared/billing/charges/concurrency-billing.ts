import { getWorkspaceItem } from '../../account/index.ts';
import { billingNow, dayOf, monthBounds, monthOf } from '../clock.ts';
import { ensureAccount, SlotsMoved } from '../entries.ts';
import { appendEntry } from './ledger.ts';
import { INCLUDED_CONCURRENCY, PER_MINUTE_USD, SLOT_PRICE_USD, toMicros, toUsd } from '../prices.ts';
import type { ConcurrencyBillingView, ConcurrencyChargeView } from './schemas.ts';
import { billingStore, slotsAttribute, type LedgerEntryItem } from '../store.ts';

/*
 * Purchased concurrency (spec Limits): slots above the 20 included cost
 * $12 each a month, charged from credit the first time the hourly job (or
 * `POST /concurrency-billing/charge`) sees the higher limit in a month, and again each month
 * after. The account keeps the slots billed this month (`slots_<YYYYMM>`); a charge moves it
 * from the count it was computed on to the new one in the ledger entry's own transaction,
 * so concurrent runs charge a month's slots once, and a mid-month raise charges only the new
 * slots (a limit lowered and raised again within the month charges nothing twice).
 */

const SOURCE_PREFIX = 'slots:';

export async function chargePurchasedConcurrency(workspaceId: string): Promise<ConcurrencyChargeView | null> {
  const limit = (await getWorkspaceItem(workspaceId)).concurrency_limit;
  const purchased = Math.max(0, limit - INCLUDED_CONCURRENCY);
  for (let attempt = 0; attempt < 10; attempt++) {
    const account = await ensureAccount(workspaceId);
    const month = monthOf(billingNow());
    const billed = account[slotsAttribute(month)] ?? 0;
    if (purchased <= billed) return null;
    const slots = purchased - billed;
    const amount = toMicros(slots * SLOT_PRICE_USD);
    try {
      const { entry, created } = await appendEntry(
        workspaceId,
        {
          kind: 'purchased_concurrency',
          amount: -amount,
          lines: { purchased_concurrency: amount },
          description: `${slots} concurrency slot${slots === 1 ? '' : 's'} above ${INCLUDED_CONCURRENCY} for ${month} (slots ${INCLUDED_CONCURRENCY + billed + 1}-${INCLUDED_CONCURRENCY + purchased})`,
          sourceKey: `${SOURCE_PREFIX}${month}:${billed}-${purchased}`,
          reference: month,
        },
        { slots: { previous: billed, next: purchased } },
      );
      return created ? chargeView(entry) : null;
    } catch (error) {
      if (error instanceof SlotsMoved) continue; // another run charged meanwhile: recompute from its count
      throw error;
    }
  }
  return null;
}

function chargeView(entry: LedgerEntryItem): ConcurrencyChargeView {
  const [, range = '0-0'] = entry.source_key.slice(SOURCE_PREFIX.length).split(':');
  const [from, to] = range.split('-').map(Number) as [number, number];
  return {
    entry_id: entry.entry_id,
    month: entry.reference ?? monthOf(entry.created_timestamp),
    slots: to - from,
    amount_usd: toUsd(-entry.amount),
    description: entry.description,
    created_timestamp: entry.created_timestamp,
  };
}

export async function concurrencyBilling(workspaceId: string, charged?: ConcurrencyChargeView | null): Promise<ConcurrencyBillingView> {
  const [workspace, account] = await Promise.all([getWorkspaceItem(workspaceId), ensureAccount(workspaceId)]);
  const nowMs = billingNow();
  const month = monthOf(nowMs);
  const purchased = Math.max(0, workspace.concurrency_limit - INCLUDED_CONCURRENCY);
  const billed = account[slotsAttribute(month)] ?? 0;
  const { start } = monthBounds(month);
  const [charges, days] = await Promise.all([
    billingStore.entriesOfSources(workspaceId, SOURCE_PREFIX),
    billingStore.usageDays(workspaceId, dayOf(start), dayOf(nowMs)),
  ]);
  const burstMicros = days.reduce((sum, day) => sum + (day.p_concurrency_burst ?? 0), 0);
  return {
    concurrency_limit: workspace.concurrency_limit,
    included_concurrency: INCLUDED_CONCURRENCY,
    purchased_concurrency: purchased,
    slot_price_usd: SLOT_PRICE_USD,
    burst_price_per_minute_usd: PER_MINUTE_USD.concurrency_burst,
    month,
    billed_slots_this_month: billed,
    unbilled_slots: Math.max(0, purchased - billed),
    charges: charges.map(chargeView).reverse(),
    burst: {
      month,
      minutes: Math.round((toUsd(burstMicros) / PER_MINUTE_USD.concurrency_burst) * 100) / 100,
      amount_usd: toUsd(burstMicros),
    },
    ...(charged !== undefined ? { charged } : {}),
  };
}
