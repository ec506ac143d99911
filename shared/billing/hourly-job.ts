import { getWorkspaceItem, registeredWorkspaceIds } from '../account/index.ts';
import { logger } from '../platform/logger.ts';
import { readJobCursor, saveJobCursor } from '../platform/store/job-lease.ts';
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
  /** Workspaces the run's budget left for the next run (which starts with them). */
  left?: number;
}

/** One workspace's hourly work: what it charged and issued. */
type WorkspaceWork = (workspaceId: string) => Promise<{ charged: boolean; issued: boolean }>;

export interface HourlyBillingOptions {
  /** Workspaces at once, and when to stop taking more (the function has 300 s). */
  limits?: { parallel: number; budgetMs: number };
  /** The run's clock for its budget (tests pass a fake one). */
  clock?: () => number;
  /** Stand-ins for tests: the registry and one workspace's work. */
  workspaces?: () => Promise<string[]>;
  work?: WorkspaceWork;
}

const HOURLY_LIMITS = { parallel: 16, budgetMs: 240_000 };
const HOURLY_JOB = 'billing-hourly';

/** Charges purchased concurrency not yet billed this month, and issues last month's invoice once. */
async function billWorkspace(workspaceId: string): Promise<{ charged: boolean; issued: boolean }> {
  const thisMonth = monthOf(billingNow());
  const lastMonth = previousMonth(thisMonth);
  const workspace = await getWorkspaceItem(workspaceId);
  const charged = workspace.concurrency_limit > INCLUDED_CONCURRENCY && (await chargePurchasedConcurrency(workspaceId)) !== null;
  // Last month's invoice, once, for an account that existed then (one opened this month had no charges before).
  const account = await billingStore.account(workspaceId);
  let issued = false;
  if (account && account.created_timestamp < monthBounds(thisMonth).start && !(await billingStore.invoice(workspaceId, invoiceIdFor(workspaceId, lastMonth)))) {
    issued = (await issueMonthlyInvoice(workspaceId, lastMonth)).created;
  }
  return { charged, issued };
}

/**
 * The hourly billing run (EventBridge, functions/billing-hourly.ts): for every workspace,
 * charges purchased concurrency slots not yet billed this month, and issues last month's
 * invoice once. Both are idempotent (the month's billed slots, the invoice's derived ID), so
 * Lambda's retries and overlapping runs charge and issue nothing twice. One workspace's
 * failure is logged and counted; the rest still run, and the next hour retries it.
 *
 * Workspaces run `parallel` at a time (one after another, 10,000 workspaces at a few reads
 * each outlast the function's 300 s); a run stops taking workspaces after `budgetMs`,
 * records the last one it took (keys.jobCursor), and the next run goes round from there, so
 * those left are the next run's first.
 */
export async function runHourlyBilling(options: HourlyBillingOptions = {}): Promise<HourlyBillingResult> {
  const limits = options.limits ?? HOURLY_LIMITS;
  const clock = options.clock ?? Date.now;
  const work = options.work ?? billWorkspace;
  const started = clock();
  const result: HourlyBillingResult = { workspaces: 0, concurrency_charges: 0, invoices_issued: 0, failures: 0 };
  const ids = [...(await (options.workspaces ?? registeredWorkspaceIds)())].sort();
  const after = (await readJobCursor(HOURLY_JOB))?.after as string | undefined;
  const from = after === undefined ? 0 : ids.findIndex((id) => id > after);
  const round = from <= 0 ? ids : [...ids.slice(from), ...ids.slice(0, from)];
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limits.parallel, round.length) }, async () => {
      while (next < round.length && clock() - started < limits.budgetMs) {
        const workspaceId = round[next++]!;
        result.workspaces++;
        try {
          const { charged, issued } = await work(workspaceId);
          if (charged) result.concurrency_charges++;
          if (issued) result.invoices_issued++;
        } catch (error) {
          result.failures++;
          logger.error('hourly billing failed for a workspace', { error, workspace_id: workspaceId });
        }
      }
    }),
  );
  if (next < round.length) {
    if (next > 0) await saveJobCursor(HOURLY_JOB, { after: round[next - 1] });
    result.left = round.length - next;
  } else await saveJobCursor(HOURLY_JOB, undefined);
  return result;
}
