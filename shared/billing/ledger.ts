import { logger } from '../platform/logger.ts';
import { maybeAutoRecharge } from './autorecharge.ts';
import { sendBudgetEvents } from './budget.ts';
import { writeEntry, type AppendResult, type NewEntry } from './entries.ts';
import { centsToMicros } from './prices.ts';
import { settleInvoices } from './settle.ts';

/*
 * The ledger as the rest of billing and the other domains use it: an entry written once
 * per source key (entries.ts), then what a new entry sets off: a charge may send a budget
 * event and start an auto-recharge, a credit may settle open invoices.
 */

export type { AppendResult, NewEntry } from './entries.ts';

/** Appends an entry (once per source key) and runs its effects; an effect that fails is logged, the entry stands. */
export async function appendEntry(workspaceId: string, input: NewEntry, options: { slots?: { previous: number; next: number } } = {}): Promise<AppendResult> {
  const result = await writeEntry(workspaceId, input, options);
  if (!result.created) return result;
  const effects = result.entry.amount < 0 ? [sendBudgetEvents, maybeAutoRecharge] : [settleInvoices];
  for (const effect of effects) {
    await effect(workspaceId).catch((error: unknown) => logger.error('after a ledger write', { error, workspace_id: workspaceId, entry_id: result.entry.entry_id }));
  }
  return result;
}

export interface CallChargeInput {
  workspaceId: string;
  callId: string;
  /** The call's call_cost (cents, by product line), as the call engine priced it. */
  callCost: { product_costs: readonly { product: string; cost: number }[] };
}

/**
 * Charges an ended call's cost to its workspace: one entry per call (source `call:<id>`),
 * however often its end is processed; the lines are call_cost's products (voice engine, LLM,
 * telephony, concurrency burst, batch dial). A call that cost nothing writes nothing.
 */
export async function recordCallCharge(input: CallChargeInput): Promise<AppendResult | undefined> {
  const lines: Record<string, number> = {};
  for (const line of input.callCost.product_costs) {
    const micros = centsToMicros(line.cost);
    if (micros > 0) lines[line.product] = (lines[line.product] ?? 0) + micros;
  }
  const total = Object.values(lines).reduce((sum, micros) => sum + micros, 0);
  if (total === 0) return undefined;
  return appendEntry(input.workspaceId, {
    kind: 'call_charge',
    amount: -total,
    lines,
    description: `Call ${input.callId}`,
    sourceKey: `call:${input.callId}`,
    reference: input.callId,
  });
}
