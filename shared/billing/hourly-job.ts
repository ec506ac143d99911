import { getWorkspaceItem, registeredWorkspaceIds } from '../account/index.ts';
import { logger } from '../platform/logger.ts';
import { billingNow, monthBounds, monthOf, previousMonth } from './clock.ts';
import { chargePurchasedConcurrency } from './charges/index.ts';
import { invoiceIdFor, issueMonthlyInvoice } from './invoices/index.ts';
import { INCLUDED_CONCURRENCY } from './prices.ts';
import { billingStore } from './store.ts';

export interface HourlyBillingResult {
  workspaces: number;
  concurrency_charges: number;
  invoices_issued: number;
  failures: number;
}

/**
 * The hourly billing run (EventBridge, functions/billing-hourly.ts): for every workspace,
 * charges purchased concurrency slots not yet billed this month, and issues last month's
 * invoice once. Both are idempotent (the month's billed slots, the invoice's derived ID), so
 * Lambda's retries and overlapping runs charge and issue nothing twice. One workspace's
 * failure is logged and counted; the rest still run, and the next hour retries it.
 */
export async function runHourlyBilling(): Promise<HourlyBillingResult> {
  const result: HourlyBillingResult = { workspaces: 0, concurrency_charges: 0, invoices_issued: 0, failures: 0 };
  const thisMonth = monthOf(billingNow());
  const lastMonth = previousMonth(thisMonth);
  const thisMonthStart = monthBounds(thisMonth).start;
  for (const workspaceId of await registeredWorkspaceIds()) {
    result.workspaces++;
    try {
      const workspace = await getWorkspaceItem(workspaceId);
      if (workspace.concurrency_limit > INCLUDED_CONCURRENCY && (await chargePurchasedConcurrency(workspaceId))) result.concurrency_charges++;
      // Last month's invoice, once, for an account that existed then (one opened this month had no charges before).
      const account = await billingStore.account(workspaceId);
      if (account && account.created_timestamp < thisMonthStart && !(await billingStore.invoice(workspaceId, invoiceIdFor(workspaceId, lastMonth)))) {
        const { created } = await issueMonthlyInvoice(workspaceId, lastMonth);
        if (created) result.invoices_issued++;
      }
    } catch (error) {
      result.failures++;
      logger.error('hourly billing failed for a workspace', { error, workspace_id: workspaceId });
    }
  }
  return result;
}
