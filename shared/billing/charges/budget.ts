import { sendAgentEvent } from '../../webhooks/index.ts';
import { billingNow, monthOf } from '../clock.ts';
import { BUDGET_WARNING_SHARE, toMicros, toUsd } from '../prices.ts';
import { billingStore, budgetEventAttribute, chargesAttribute } from '../store.ts';

/*
 * Budget events (spec: Outgoing webhooks, the workspace URL hears budget events):
 * `budget_warning` when the month's charges reach 80% of `monthly_budget_usd`, and
 * `budget_reached` at 100%, each at most once a month (a conditional flag on the account
 * is claimed before the event is queued, so concurrent charges send it once).
 */

const BUDGET_EVENTS = ['budget_warning', 'budget_reached'] as const;

export async function sendBudgetEvents(workspaceId: string): Promise<string[]> {
  const account = await billingStore.account(workspaceId);
  const budgetUsd = account?.settings?.monthly_budget_usd;
  if (!account || budgetUsd === null || budgetUsd === undefined) return [];
  const nowMs = billingNow();
  const month = monthOf(nowMs);
  const spent = account[chargesAttribute(month)] ?? 0;
  const budget = toMicros(budgetUsd);
  const due = BUDGET_EVENTS.filter((event) => spent >= (event === 'budget_warning' ? budget * BUDGET_WARNING_SHARE : budget));
  const sent: string[] = [];
  for (const event of due) {
    if (!(await billingStore.claimMonthlyFlag(workspaceId, budgetEventAttribute(event.replace('budget_', ''), month), nowMs))) continue;
    await sendAgentEvent({
      workspaceId,
      event,
      defaultEvents: BUDGET_EVENTS,
      payload: { budget: { workspace_id: workspaceId, month, monthly_budget_usd: budgetUsd, spent_usd: toUsd(spent), timestamp: nowMs } },
    });
    sent.push(event);
  }
  return sent;
}
