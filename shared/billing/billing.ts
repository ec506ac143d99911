import { isProduction } from '../platform/config.ts';
import { forbidden } from '../platform/errors.ts';
import { newId } from '../platform/ids.ts';
import { billingNow, monthOf } from './clock.ts';
import { ensureAccount } from './entries.ts';
import { appendEntry } from './charges/index.ts';
import { paymentProviderKind } from './payments/payments.ts';
import { toMicros, toUsd } from './prices.ts';
import type { AddCreditsInput, BillingSettingsView, BillingView, LedgerEntryView, UpdateBillingSettingsInput } from './schemas.ts';
import { checkSpend } from './spend/index.ts';
import { billingStore, chargesAttribute, type BillingAccountItem, type LedgerEntryItem } from './store.ts';

/* The workspace's billing overview, settings and granted credit (routes in routes.ts). */

function entryView(entry: LedgerEntryItem): LedgerEntryView {
  return {
    entry_id: entry.entry_id,
    kind: entry.kind,
    amount_usd: toUsd(entry.amount),
    lines: Object.fromEntries(Object.entries(entry.lines ?? {}).map(([product, micros]) => [product, toUsd(micros)])),
    description: entry.description,
    reference: entry.reference ?? null,
    created_timestamp: entry.created_timestamp,
  };
}

const settingsView = (account: BillingAccountItem): BillingSettingsView => ({
  monthly_budget_usd: account.settings?.monthly_budget_usd ?? null,
  auto_recharge: account.settings?.auto_recharge ?? null,
  conductor_pay_as_you_go: account.settings?.conductor_pay_as_you_go ?? false,
  conductor_monthly_limit: account.settings?.conductor_monthly_limit ?? null,
});

export async function getBilling(workspaceId: string, limit: number): Promise<BillingView> {
  const account = await ensureAccount(workspaceId);
  const month = monthOf(billingNow());
  const [entries, spend, provider] = await Promise.all([
    billingStore.entries(workspaceId, { newestFirst: true, limit }),
    checkSpend(workspaceId, 'web_call'),
    paymentProviderKind(),
  ]);
  const charges = account[chargesAttribute(month)] ?? 0;
  const budget = account.settings?.monthly_budget_usd;
  return {
    workspace_id: workspaceId,
    currency: 'usd',
    balance_usd: toUsd(account.balance),
    month,
    month_charges_usd: toUsd(charges),
    settings: settingsView(account),
    budget_remaining_usd: budget === null || budget === undefined ? null : Math.max(0, toUsd(toMicros(budget) - charges)),
    spend,
    open_invoice_ids: Object.keys(account.open_invoices ?? {}).sort(),
    payment_provider: provider,
    default_payment_method: account.default_payment_method ?? null,
    entries: entries.map(entryView),
  };
}

export async function getBillingSettings(workspaceId: string): Promise<BillingSettingsView> {
  return settingsView(await ensureAccount(workspaceId));
}

export async function updateBillingSettings(workspaceId: string, input: UpdateBillingSettingsInput): Promise<BillingSettingsView> {
  await ensureAccount(workspaceId);
  return settingsView(await billingStore.updateSettings(workspaceId, input));
}

/**
 * Credit granted by an admin (support, promotions, local runs). In production credit comes
 * only from a payment (checkout), so this is refused there. `idempotency_key` makes a retried
 * grant the same entry.
 */
export async function addCredits(workspaceId: string, input: AddCreditsInput) {
  if (isProduction) throw forbidden('In production, credits are added only through a payment (POST /billing/checkout)');
  const { entry, created } = await appendEntry(workspaceId, {
    kind: 'credit_grant',
    amount: toMicros(input.amount_usd),
    description: input.description ?? 'Credit added by an admin',
    sourceKey: `grant:${input.idempotency_key ?? newId('ledgerEntry')}`,
  });
  const account = await billingStore.account(workspaceId);
  return { entry: entryView(entry), duplicate: !created, balance_usd: toUsd(account!.balance) };
}
