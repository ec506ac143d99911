import { keys } from '../../platform/store/keys.ts';
import { table, TransactionCancelled } from '../../platform/store/table.ts';

/*
 * QA minutes (docs/data-model.md), in the workspace's billing partition:
 * - `QAUSAGE#<YYYY-MM>`: the month's scored `minutes`, `results` and `billable_minutes`
 *   (those beyond the free allowance);
 * - `QACHARGE#<result id>`: a result's place in them (its month, minutes and billable
 *   minutes), written with the month's update in one transaction only if absent, so a
 *   result counts once however often its scoring is retried. The month's minutes are set
 *   conditional on the value read, so the free minutes are shared out exactly between
 *   results counted at the same time (the loser reads again).
 */

export interface QaUsageMonth {
  minutes: number;
  results: number;
  billable_minutes: number;
}

export interface QaUsageCharge {
  result_id: string;
  month: string;
  minutes: number;
  billable_minutes: number;
}

export async function usageMonth(workspaceId: string, month: string): Promise<QaUsageMonth> {
  const item = await table.get<Partial<QaUsageMonth>>(keys.qaUsageMonth(workspaceId, month));
  return { minutes: item?.minutes ?? 0, results: item?.results ?? 0, billable_minutes: item?.billable_minutes ?? 0 };
}

const ATTEMPTS = 30;

/**
 * Counts a result's minutes in `month` once: its billable share is what of them lies
 * beyond `freeMinutes` of the month. Answers the result's place (the one written before
 * when it was counted already).
 */
export async function countResultMinutes(workspaceId: string, input: { resultId: string; month: string; minutes: number; freeMinutes: number }): Promise<QaUsageCharge> {
  const markerKey = keys.qaUsageCharge(workspaceId, input.resultId);
  for (let attempt = 0; ; attempt++) {
    const existing = await table.get<QaUsageCharge>(markerKey);
    if (existing) return existing;
    const monthKey = keys.qaUsageMonth(workspaceId, input.month);
    const read = await table.get<Partial<QaUsageMonth>>(monthKey);
    const used = read?.minutes;
    const before = used ?? 0;
    const after = before + input.minutes;
    const billable = Math.max(0, after - input.freeMinutes) - Math.max(0, before - input.freeMinutes);
    const marker: QaUsageCharge = { result_id: input.resultId, month: input.month, minutes: input.minutes, billable_minutes: billable };
    try {
      await table.transact([
        { Put: { Item: { ...markerKey, ...marker }, ConditionExpression: 'attribute_not_exists(pk)' } },
        {
          Update: {
            Key: monthKey,
            UpdateExpression: 'SET minutes = :after ADD results :one, billable_minutes :billable',
            ConditionExpression: used === undefined ? 'attribute_not_exists(minutes)' : 'minutes = :used',
            ExpressionAttributeValues: { ':after': after, ':one': 1, ':billable': billable, ...(used === undefined ? {} : { ':used': used }) },
          },
        },
      ]);
      return marker;
    } catch (error) {
      // The marker was written meanwhile, or another result moved the month's minutes: read again.
      if (!(error instanceof TransactionCancelled) || attempt >= ATTEMPTS) throw error;
      await new Promise((resolve) => setTimeout(resolve, Math.min(200, 5 * 2 ** Math.min(attempt, 5)) * (0.5 + Math.random())));
    }
  }
}
