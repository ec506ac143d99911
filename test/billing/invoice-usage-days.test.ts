import { afterEach, describe, expect, it } from 'vitest';
import { startTestApp } from '../support/app.ts';

/*
 * An invoice sums its month from the usage days and the month's credits (a few items however
 * many calls the month had) when every entry of the month wrote them; an account kept from
 * before (no `usage_days_since`) is summed from the ledger until its next month.
 */

const app = await startTestApp({ FREE_CREDIT_USD: '1' });
const { recordCallCharge } = await import('../../shared/billing/index.ts');
const { setBillingClockOffset } = await import('../../shared/billing/clock.ts');
const { issueMonthlyInvoice } = await import('../../shared/billing/invoices/index.ts');
const { table } = await import('../../shared/platform/store/table.ts');
const { keys } = await import('../../shared/platform/store/keys.ts');
afterEach(() => setBillingClockOffset(0));

const DAY_MS = 86_400_000;
const month = new Date().toISOString().slice(0, 7);
const nextMonthStart = Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth() + 1, 1);

async function charges(workspaceId: string, prefix: string) {
  for (let i = 0; i < 3; i++) {
    await recordCallCharge({
      workspaceId,
      callId: `call_${prefix}${String(i).padStart(24 - prefix.length, '0')}`,
      callCost: { product_costs: [{ product: 'voice_engine', cost: 10 + i }, { product: 'llm', cost: 2 }] },
    });
  }
}

describe('the month an invoice sums', () => {
  it('comes from the usage days and the month\'s credits for an account opened with them, as the ledger says', async () => {
    const ws = await app.newWorkspace();
    await charges(ws.workspace_id, 'days');
    const account = await table.get<Record<string, unknown>>(keys.billingAccount(ws.workspace_id));
    expect(account).toMatchObject({ usage_days_since: month });
    setBillingClockOffset(nextMonthStart + DAY_MS - Date.now());
    const { invoice } = await issueMonthlyInvoice(ws.workspace_id, month);
    expect(invoice).toMatchObject({ total_usd: 0.39, credits_usd: 1 });
    expect(invoice.lines.map((line) => [line.product, line.amount_usd])).toEqual([
      ['llm', 0.06],
      ['voice_engine', 0.33],
    ]);
  });

  it('comes from the ledger for an account kept from before, whose usage days are complete from its next month', async () => {
    const ws = await app.newWorkspace();
    await charges(ws.workspace_id, 'ledgerone');
    // As a store from before kept it: no marker, no month's credits.
    await table.update({ Key: keys.billingAccount(ws.workspace_id), UpdateExpression: `REMOVE usage_days_since, credits_${month.replace('-', '')}` });
    await charges(ws.workspace_id, 'ledgertwo');
    const account = await table.get<Record<string, unknown>>(keys.billingAccount(ws.workspace_id));
    expect(account!.usage_days_since).toBe(new Date(nextMonthStart).toISOString().slice(0, 7));
    setBillingClockOffset(nextMonthStart + DAY_MS - Date.now());
    const { invoice } = await issueMonthlyInvoice(ws.workspace_id, month);
    // Six charges and the free credit, from the ledger.
    expect(invoice).toMatchObject({ total_usd: 0.78, credits_usd: 1 });
  });
});
