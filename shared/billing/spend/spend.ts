import { config } from '../../platform/config.ts';
import { PaymentRequired, type ErrorCode } from '../../platform/errors.ts';
import { billingNow, monthOf } from '../clock.ts';
import { INVOICE_OVERDUE_DAYS, toMicros, toUsd } from '../prices.ts';
import { billingStore, chargesAttribute } from '../store.ts';

/*
 * The spend check (spec Errors 402, "Routes checked for spend"): every spending route calls
 * `assertCanSpend` before it commits anything. One read of the billing account decides, in
 * this order:
 *
 * 1. `verification_needed`: outbound calls and batches while REQUIRE_VERIFICATION_FOR_OUTBOUND
 *    is on and the workspace's business verification (KYC) is not approved;
 * 2. `invoice_overdue`: an invoice open for 14 days or more;
 * 3. `credit_exhausted`: the balance is zero or below;
 * 4. `budget_reached`: this month's charges reached `monthly_budget_usd`.
 *
 * A workspace without a billing account yet has its free credit (FREE_CREDIT_USD) and no
 * settings. The check does not reserve money: a call admitted with a little credit left may
 * take the balance below zero, and the next spend is refused.
 */

export type SpendAction = 'phone_call' | 'web_call' | 'register_call' | 'batch_call' | 'chat' | 'sms' | 'qa_scoring' | 'conductor';

/** The actions that dial out: they need approved verification when the setting asks for it. */
const OUTBOUND_ACTIONS: readonly SpendAction[] = ['phone_call', 'batch_call'];

export interface SpendOptions {
  /**
   * The workspace's business verification status (`approved`, `pending`, …): the callers that
   * dial out give it (the numbers domain holds KYC, which billing does not import). Asked
   * only when the setting requires verification for the action.
   */
  verificationStatus?: () => Promise<string>;
}

export interface SpendDecision {
  allowed: boolean;
  error_code: ErrorCode | null;
  message: string | null;
}

const ALLOWED: SpendDecision = { allowed: true, error_code: null, message: null };
const refuse = (error_code: ErrorCode, message: string): SpendDecision => ({ allowed: false, error_code, message });
const money = (micros: number) => `$${toUsd(micros).toFixed(2)}`;

/** What the check decides for `action`, without acting (POST /billing/check). */
export async function checkSpend(workspaceId: string, action: SpendAction, options: SpendOptions = {}): Promise<SpendDecision> {
  if (config.REQUIRE_VERIFICATION_FOR_OUTBOUND && OUTBOUND_ACTIONS.includes(action)) {
    const status = options.verificationStatus ? await options.verificationStatus() : 'unknown';
    if (status !== 'approved') {
      return refuse('verification_needed', `Business verification is ${status}; approved verification is required before outbound calls`);
    }
  }
  const account = await billingStore.account(workspaceId);
  const nowMs = billingNow();
  const overdueBefore = nowMs - INVOICE_OVERDUE_DAYS * 24 * 60 * 60 * 1000;
  const overdue = Object.entries(account?.open_invoices ?? {}).find(([, issued]) => issued <= overdueBefore);
  if (overdue) return refuse('invoice_overdue', `Invoice ${overdue[0]} is unpaid for ${INVOICE_OVERDUE_DAYS} days or more; pay it to continue`);
  const balance = account ? account.balance : toMicros(config.FREE_CREDIT_USD);
  if (balance <= 0) return refuse('credit_exhausted', `Credit balance is ${money(balance)}; add credits to continue`);
  const budgetUsd = account?.settings?.monthly_budget_usd;
  if (budgetUsd !== null && budgetUsd !== undefined) {
    const spent = account?.[chargesAttribute(monthOf(nowMs))] ?? 0;
    if (spent >= toMicros(budgetUsd)) {
      return refuse('budget_reached', `Monthly budget of ${money(toMicros(budgetUsd))} is spent (${money(spent)} this month)`);
    }
  }
  return ALLOWED;
}

/** Throws PaymentRequired (402 with its error_code) when the workspace cannot spend. */
export async function assertCanSpend(workspaceId: string, action: SpendAction, options: SpendOptions = {}): Promise<void> {
  const decision = await checkSpend(workspaceId, action, options);
  if (!decision.allowed) throw new PaymentRequired(decision.message!, decision.error_code!);
}

/** The assistant's spend settings (docs/assistant.md, "Credits"), as PATCH /billing/settings sets them. */
export interface ConductorSpendSettings {
  pay_as_you_go: boolean;
  /** Credits a month may use, free ones included; null: no limit. */
  monthly_limit: number | null;
}

/** The assistant's spend settings: a workspace without a billing account yet has the defaults (off, no limit). */
export async function conductorSpendSettings(workspaceId: string): Promise<ConductorSpendSettings> {
  const settings = (await billingStore.account(workspaceId))?.settings;
  return { pay_as_you_go: settings?.conductor_pay_as_you_go ?? false, monthly_limit: settings?.conductor_monthly_limit ?? null };
}
