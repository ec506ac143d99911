import { billingNow, monthOf, recordQaCharge } from '../../billing/index.ts';
import { checkSpend } from '../../billing/spend/index.ts';
import { config } from '../../platform/config.ts';
import { countResultMinutes } from './store.ts';

/*
 * QA usage and its charge (docs/qa.md, "Usage and billing"). A scored result counts its
 * call's duration rounded up to the minute (a call without a duration: 0) in the month it
 * was scored (billing's clock); the minutes beyond the month's free allowance
 * (QA_FREE_MINUTES_PER_MONTH) are charged at QA_MINUTE_USD on the ledger line `qa_scoring`,
 * one entry per result (`qa:<result id>`). Both steps are idempotent by result ID, so a
 * scorer that died between them, or a result scored again after its claim was taken over,
 * counts and charges once.
 */

const MINUTE_MS = 60_000;

const minutesOf = (durationMs: number | undefined): number => (typeof durationMs === 'number' && durationMs > 0 ? Math.ceil(durationMs / MINUTE_MS) : 0);

/** Counts and charges one scored result (see above). */
export async function chargeScoredResult(workspaceId: string, result: { result_id: string; call_id: string; duration_ms?: number }): Promise<void> {
  const counted = await countResultMinutes(workspaceId, {
    resultId: result.result_id,
    month: monthOf(billingNow()),
    minutes: minutesOf(result.duration_ms),
    freeMinutes: config.QA_FREE_MINUTES_PER_MONTH,
  });
  await recordQaCharge({ workspaceId, resultId: result.result_id, callId: result.call_id, billableMinutes: counted.billable_minutes });
}

/** Why the workspace may not score now (the spend check's refusal), or undefined. */
export async function spendRefusal(workspaceId: string): Promise<string | undefined> {
  const decision = await checkSpend(workspaceId, 'qa_scoring');
  return decision.allowed ? undefined : `${decision.error_code}: ${decision.message}`;
}

