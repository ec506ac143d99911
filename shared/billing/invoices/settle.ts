import { billingNow } from '../clock.ts';
import { billingStore } from '../store.ts';

/*
 * Open invoices are what a balance below zero owed when they were issued (invoices.ts). A
 * credit that brings the balance back to zero or above pays them: each is marked paid and
 * taken off the account's open list in one transaction, so the overdue block lifts at once.
 */
export async function settleInvoices(workspaceId: string): Promise<string[]> {
  const account = await billingStore.account(workspaceId);
  const open = Object.keys(account?.open_invoices ?? {});
  if (!account || open.length === 0 || account.balance < 0) return [];
  const paid: string[] = [];
  for (const invoiceId of open) {
    if (await billingStore.markInvoicePaid(workspaceId, invoiceId, billingNow())) paid.push(invoiceId);
  }
  return paid;
}
