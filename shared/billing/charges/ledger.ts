import { logger } from '../../platform/logger.ts';
import { writeEntry, type AppendResult, type NewEntry, type WriteOptions } from '../entries.ts';
import { settleInvoices } from '../invoices/index.ts';
import { maybeAutoRecharge } from '../payments/index.ts';
import { centsToMicros, CHAT_MESSAGE_USD, CONDUCTOR_CREDIT_USD, QA_MINUTE_USD, SMS_USD, toMicros } from '../prices.ts';
import { CHARGE_KINDS } from '../store.ts';
import { sendBudgetEvents } from './budget.ts';

/*
 * The ledger as the rest of billing and the other domains use it: an entry written once
 * per source key (../entries.ts), then what a new entry sets off: a charge may send a budget
 * event and start an auto-recharge, a credit may settle open invoices.
 */

export type { AppendResult, NewEntry } from '../entries.ts';

/** Appends an entry (once per source key) and runs its effects; an effect that fails is logged, the entry stands. */
export async function appendEntry(workspaceId: string, input: NewEntry, options: WriteOptions = {}): Promise<AppendResult> {
  const result = await writeEntry(workspaceId, input, options);
  if (!result.created) return result;
  // Charges may send budget events and start an auto-recharge; credit may settle invoices.
  // Refunds and dispute holds do neither (recharging the card a customer just disputed would be wrong).
  const effects = CHARGE_KINDS.has(result.entry.kind) ? [sendBudgetEvents, maybeAutoRecharge] : result.entry.amount > 0 ? [settleInvoices] : [];
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

export interface ChatChargeInput {
  workspaceId: string;
  chatId: string;
  /** The chat's messages at its end that count: the user's and the agent's. */
  messageCount: number;
}

/**
 * Charges an ended chat: CHAT_MESSAGE_USD per message (line `chat`), one entry per chat
 * (source `chat:<id>`) however often its end is processed. A chat without messages writes nothing.
 */
export async function recordChatCharge(input: ChatChargeInput): Promise<AppendResult | undefined> {
  const micros = toMicros(CHAT_MESSAGE_USD) * Math.max(0, Math.floor(input.messageCount));
  if (micros === 0) return undefined;
  return appendEntry(input.workspaceId, {
    kind: 'chat_charge',
    amount: -micros,
    lines: { chat: micros },
    description: `Chat ${input.chatId} (${input.messageCount} messages)`,
    sourceKey: `chat:${input.chatId}`,
    reference: input.chatId,
  });
}

export interface SimulationChargeInput {
  workspaceId: string;
  /** The test run (shared/testing): one charge per run. */
  testRunId: string;
  /** The simulated conversation's lines that count: the caller's and the agent's. */
  messageCount: number;
}

/**
 * Charges a test run's simulated conversation like a chat of the same length:
 * CHAT_MESSAGE_USD per message, on a line of its own (`simulation`), one entry per run
 * (source `simulation:<run id>`). A run without messages writes nothing.
 */
export async function recordSimulationCharge(input: SimulationChargeInput): Promise<AppendResult | undefined> {
  const micros = toMicros(CHAT_MESSAGE_USD) * Math.max(0, Math.floor(input.messageCount));
  if (micros === 0) return undefined;
  return appendEntry(input.workspaceId, {
    kind: 'simulation_charge',
    amount: -micros,
    lines: { simulation: micros },
    description: `Test run ${input.testRunId} (${input.messageCount} messages)`,
    sourceKey: `simulation:${input.testRunId}`,
    reference: input.testRunId,
  });
}

export interface SmsChargeInput {
  workspaceId: string;
  /** The message's ID (a chat message's, or send-sms's): one charge per message. */
  messageId: string;
  /** The SMS chat it belongs to, if any. */
  chatId?: string;
}

/** Charges one SMS Parley sent: SMS_USD (line `sms`), once per message (source `sms:<message id>`). */
export async function recordSmsCharge(input: SmsChargeInput): Promise<AppendResult> {
  const micros = toMicros(SMS_USD);
  return appendEntry(input.workspaceId, {
    kind: 'sms_charge',
    amount: -micros,
    lines: { sms: micros },
    description: input.chatId ? `SMS in chat ${input.chatId}` : 'SMS sent',
    sourceKey: `sms:${input.messageId}`,
    reference: input.chatId ?? input.messageId,
  });
}

export interface QaChargeInput {
  workspaceId: string;
  /** The QA result scored (shared/qa): one charge per result. */
  resultId: string;
  callId: string;
  /** The result's minutes beyond the month's free QA minutes. */
  billableMinutes: number;
}

/**
 * Charges a scored QA result's minutes beyond the free allowance: QA_MINUTE_USD a minute,
 * on a line of its own (`qa_scoring`), one entry per result (source `qa:<result id>`)
 * however often its scoring is retried. No billable minute writes nothing.
 */
export async function recordQaCharge(input: QaChargeInput): Promise<AppendResult | undefined> {
  const micros = toMicros(QA_MINUTE_USD) * Math.max(0, Math.floor(input.billableMinutes));
  if (micros === 0) return undefined;
  return appendEntry(input.workspaceId, {
    kind: 'qa_charge',
    amount: -micros,
    lines: { qa_scoring: micros },
    description: `QA scoring of call ${input.callId} (${input.billableMinutes} min)`,
    sourceKey: `qa:${input.resultId}`,
    reference: input.resultId,
  });
}

export interface ConductorChargeInput {
  workspaceId: string;
  /** The assistant's message (shared/conductor): one charge per message. */
  messageId: string;
  sessionId: string;
  /** The message's credits beyond the day's free credits. */
  paidCredits: number;
}

/**
 * Charges an assistant message's credits beyond the free daily ones (pay-as-you-go):
 * CONDUCTOR_CREDIT_USD a credit, on a line of its own (`conductor`), one entry per message
 * (source `conductor:<message id>`) however often its charge is retried. No paid credit writes nothing.
 */
export async function recordConductorCharge(input: ConductorChargeInput): Promise<AppendResult | undefined> {
  const micros = toMicros(CONDUCTOR_CREDIT_USD) * Math.max(0, Math.floor(input.paidCredits));
  if (micros === 0) return undefined;
  return appendEntry(input.workspaceId, {
    kind: 'conductor_charge',
    amount: -micros,
    lines: { conductor: micros },
    description: `Assistant message ${input.messageId} in session ${input.sessionId} (${input.paidCredits} credits)`,
    sourceKey: `conductor:${input.messageId}`,
    reference: input.messageId,
  });
}
