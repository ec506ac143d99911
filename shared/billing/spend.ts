/*
 * The spend check (spec Errors 402, "Routes checked for spend"): one function every
 * spending route calls before it commits anything. Billing (issue 20) fills it with the
 * ledger, budgets and overdue invoices; until then every workspace may spend.
 */

export type SpendAction = 'phone_call' | 'web_call' | 'register_call' | 'batch_call' | 'chat' | 'sms';

/** Throws PaymentRequired (402 with its error_code) when the workspace cannot spend. */
export async function assertCanSpend(_workspaceId: string, _action: SpendAction): Promise<void> {
  // Admits everything today: the seam is here so the billing issue changes no caller.
}
