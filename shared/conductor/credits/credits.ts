import { assertCanSpend, conductorSpendSettings, CONDUCTOR_CREDIT_USD, dayOf, monthOf, recordConductorCharge } from '../../billing/index.ts';
import type { ConductorSpendSettings } from '../../billing/spend/index.ts';
import { config } from '../../platform/config.ts';
import { PaymentRequired } from '../../platform/errors.ts';
import { newTimeOrderedId } from '../../platform/ids.ts';
import { TransactionCancelled } from '../../platform/store/table.ts';
import { findCharge, readCounters, writeCharge, type ConductorChargeItem, type CreditCounter } from './store.ts';

/*
 * The assistant's credits (docs/assistant.md, "Credits"). Every workspace has
 * CONDUCTOR_FREE_CREDITS_PER_DAY free credits each UTC day; a message costs one credit per
 * started TOKENS_PER_CREDIT tokens (input and output together), at least one. A message is
 * allowed while:
 *
 * 1. the month's credits (free and paid) are below the workspace's monthly limit, if it has
 *    one (`conductor_monthly_limit`), else 402 conductor_limit_reached, whatever pay-as-you-go says;
 * 2. a free credit is left today, or pay-as-you-go is on (`conductor_pay_as_you_go`), else
 *    402 conductor_credits_exhausted; a message that would be paid also needs the billing
 *    spend check to pass (the balance, the budget, an overdue invoice: action `conductor`).
 *
 * `assertAssistantCanSpend` asks before the model runs; `chargeAssistantMessage` decides
 * again when it counts the message (the counters are set conditional on the values read, so
 * two messages at the same time never both take the last credit: the loser reads again and
 * is refused with the same 402). The message that crosses an allowance is counted in full:
 * its credits beyond the free ones are charged with pay-as-you-go on, free with it off (it
 * was allowed while a free credit was left); the next message is refused.
 */

export const TOKENS_PER_CREDIT = 1000;

const ATTEMPTS = 30;

const cleanTokens = (tokens: number): number => (Number.isFinite(tokens) ? Math.max(0, Math.floor(tokens)) : 0);

const creditsFor = (inputTokens: number, outputTokens: number): number => Math.max(1, Math.ceil((inputTokens + outputTokens) / TOKENS_PER_CREDIT));

/** The 402 that refuses the next message with these counters and settings, if any. */
function refusal(settings: ConductorSpendSettings, counters: { day: CreditCounter; month: CreditCounter }, month: string): PaymentRequired | undefined {
  const monthUsed = counters.month.used ?? 0;
  if (settings.monthly_limit !== null && monthUsed >= settings.monthly_limit) {
    return new PaymentRequired(
      `The assistant's monthly limit of ${settings.monthly_limit} credits is reached (${monthUsed} used in ${month}); ` +
        'an admin can raise or remove it with PATCH /billing/settings (conductor_monthly_limit)',
      'conductor_limit_reached',
    );
  }
  const free = config.CONDUCTOR_FREE_CREDITS_PER_DAY;
  if (!settings.pay_as_you_go && (counters.day.used ?? 0) >= free) {
    return new PaymentRequired(
      `Today's ${free} free assistant credits are used (they renew at 00:00 UTC); ` +
        'an admin can turn on pay-as-you-go with PATCH /billing/settings (conductor_pay_as_you_go) to continue',
      'conductor_credits_exhausted',
    );
  }
  return undefined;
}

/**
 * Throws the 402 that refuses the workspace's next assistant message at `nowMs`:
 * conductor_limit_reached, conductor_credits_exhausted, or the billing spend check's when the
 * message would be paid (see above).
 */
export async function assertAssistantCanSpend(workspaceId: string, nowMs: number): Promise<void> {
  const month = monthOf(nowMs);
  const [settings, counters] = await Promise.all([conductorSpendSettings(workspaceId), readCounters(workspaceId, dayOf(nowMs), month)]);
  const refused = refusal(settings, counters, month);
  if (refused) throw refused;
  if ((counters.day.used ?? 0) >= config.CONDUCTOR_FREE_CREDITS_PER_DAY) await assertCanSpend(workspaceId, 'conductor');
}

/** Charges a counted message's paid credits in the billing ledger (once per message, however often it is asked). */
async function chargePaidCredits(workspaceId: string, charge: ConductorChargeItem): Promise<void> {
  if (charge.paid_credits > 0) {
    await recordConductorCharge({ workspaceId, messageId: charge.message_id, sessionId: charge.session_id, paidCredits: charge.paid_credits });
  }
}

/**
 * Counts an assistant message's credits (by its tokens) in the day and month of `nowMs`,
 * writes its ledger entry, and charges its paid credits in the billing ledger. Idempotent
 * per message ID: a retried charge answers the first one's credits and counts nothing again.
 * Throws the 402 of `assertAssistantCanSpend` (not the billing spend check's) when the
 * message is refused at the time it is counted.
 */
export async function chargeAssistantMessage(input: {
  workspaceId: string;
  sessionId: string;
  messageId: string;
  inputTokens: number;
  outputTokens: number;
  nowMs: number;
}): Promise<{ credits: number }> {
  const { workspaceId } = input;
  const inputTokens = cleanTokens(input.inputTokens);
  const outputTokens = cleanTokens(input.outputTokens);
  const credits = creditsFor(inputTokens, outputTokens);
  const day = dayOf(input.nowMs);
  const month = monthOf(input.nowMs);
  for (let attempt = 0; ; attempt++) {
    const existing = await findCharge(workspaceId, input.messageId);
    if (existing) {
      await chargePaidCredits(workspaceId, existing);
      return { credits: existing.credits };
    }
    const [settings, counters] = await Promise.all([conductorSpendSettings(workspaceId), readCounters(workspaceId, day, month)]);
    const refused = refusal(settings, counters, month);
    if (refused) throw refused;
    const freeLeft = Math.max(0, config.CONDUCTOR_FREE_CREDITS_PER_DAY - (counters.day.used ?? 0));
    const paidCredits = settings.pay_as_you_go ? Math.max(0, credits - freeLeft) : 0;
    const entry = {
      workspace_id: workspaceId,
      entry_id: newTimeOrderedId('conductorCharge', input.nowMs),
      session_id: input.sessionId,
      message_id: input.messageId,
      input_tokens: inputTokens,
      output_tokens: outputTokens,
      credits,
      free_credits: credits - paidCredits,
      paid_credits: paidCredits,
      cost_micros: Math.round(CONDUCTOR_CREDIT_USD * 1_000_000) * paidCredits,
      created_timestamp: input.nowMs,
    };
    try {
      await writeCharge({ day, month, dayBefore: counters.day.used, monthBefore: counters.month.used, entry });
    } catch (error) {
      // The message was counted meanwhile, or another message moved a counter: read again.
      if (!(error instanceof TransactionCancelled) || attempt >= ATTEMPTS) throw error;
      await new Promise((resolve) => setTimeout(resolve, Math.min(200, 5 * 2 ** Math.min(attempt, 5)) * (0.5 + Math.random())));
      continue;
    }
    await chargePaidCredits(workspaceId, entry);
    return { credits };
  }
}
